"""Small display helpers for the notebooks: device card, stage map, kernel source and diffs,
and performance numbers (measured here on a GPU, or committed GPU results on the CPU).

Every function returns a value (a string, or an object that renders as Markdown in Jupyter
and as plain text elsewhere); nothing here prints, so tests can call everything directly.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from helpers.measure import gpu_results
from helpers.measure.gpu_results import GpuResults
from helpers.views import figures
from helpers.views import roofline_plot
from helpers.core.paths import ROOT, rel
from helpers.run import backend
from helpers.core import stages
from helpers.core.markdown import Markdown
from helpers.core.kernel_source import strip_comments
from helpers.measure import intensity
from helpers.measure import resources
from helpers.measure import roofline
from helpers.core.arch import ARCHS, COURSE_ARCHS, KIB, MEASURED_ON, known_arch, arch_limits




# ---- the device ----------------------------------------------------------------------------
EMULATOR_NOTE = """\
No CUDA GPU is in use, so kernels run on the course's CPU emulator. It compiles the same
kernels/*.cu files with the host's C++ compiler and runs every CUDA thread as a lightweight
fiber: blocks, shared memory, __syncthreads() and warp collectives behave as the CUDA
programming model says, and an out-of-bounds access stops the launch with the thread, the
array, the index and the source line. Results are real (every check in the course applies);
speed is not: the emulator has no SMs, caches or coalescing, so its timings say nothing about
a GPU. Performance sections show committed GPU measurements from results/ instead."""


def device_card() -> str:
    """The device card of the backend in use, with the per-SM limits of the architecture the course sizes
    kernels for (backend.arch()); on the CPU, with what the emulator is."""
    card = backend.current().device_info().card()
    return card + "\n" + arch_line() + ("\n\n" + EMULATOR_NOTE if backend.name() == "cpu" else "")


def arch_line(arch: str | None = None) -> str:
    """One line: the architecture kernels are sized for and its per-SM limits (helpers.core.arch.ARCHS)."""
    arch = arch or backend.arch()
    where = "this GPU" if backend.name() == "gpu" else "chosen by TBT_ARCH" if arch != MEASURED_ON else \
        "where the course was measured; TBT_ARCH=sm_86, say, sizes them for another"
    if not known_arch(arch):
        return f"Kernels sized for {arch} ({where}); the course has no per-SM limits for it, so no occupancy."
    a = arch_limits(arch)
    return (f"Kernels sized for {a.name} ({a.gpus}; {where}): per SM {a.max_warps_per_sm} warps, "
            f"{a.max_blocks_per_sm} blocks, {a.registers_per_sm // 1024} K registers, {a.shared_per_sm // KIB} KiB "
            f"shared memory ({a.max_shared_per_block // KIB} KiB for one block)")


def architecture_table(arch: str | None = None) -> Markdown:
    """For one GPU architecture (default: backend.arch(), the learner's GPU, else TBT_ARCH or sm_90): every
    stage's kernels, whether they run there, at which configuration (the default for it), with how many
    registers, how much shared memory and how many blocks per SM (occupancy), from NVRTC + ptxas."""
    rows = resources.architecture_rows(arch)
    arch = rows[0]["arch"] if rows else (arch or backend.arch())
    gpus = f" ({ARCHS[arch].gpus})" if arch in ARCHS else ""
    lines = [f"**{arch}**{gpus}", "",
             "| stage | kernel | runs | configuration | registers | shared memory | blocks per SM (occupancy) |",
             "|---|---|---|---|---|---|---|"]
    refused = []
    for row in rows:
        r = row["resources"]
        if r is None:
            refused.append(f"- **{row['variant']}**: {row['refused']}")
            lines.append(f"| {row['stage']} | {row['variant']} | no (below) | - | - | - | - |")
            continue
        o = r.occupancy
        config = row["config"].label() + (f" ({arch}'s own default)" if row["arch_default"] else "")
        spill = f", {r.spill_store_bytes} B spilled" if r.spills else ""
        blocks = f"{o.active_blocks} ({100 * o.occupancy:.0f}%)" if o else "-"
        lines.append(f"| {row['stage']} | {row['variant']} | yes | {config} | {r.registers}{spill} | "
                     f"{(r.static_shared_bytes + r.dynamic_shared_bytes) / KIB:.1f} KiB | {blocks} |")
    others = ", ".join(a for a in COURSE_ARCHS if a != arch)
    text = "\n".join(lines + ([""] + refused if refused else []))
    return Markdown(text + f"\n\nFrom {rows[0]['resources'].source if rows and rows[0]['resources'] else 'ptxas'}. "
                           f"Another architecture: `display.architecture_table(\"sm_86\")` or "
                           f"`python -m helpers resources --arch sm_86` ({others}).")


# ---- the stage map -------------------------------------------------------------------------
def stage_rows() -> list[dict]:
    """One row per stage of the registry: id, title, technique, notebook, built or coming, kernels."""
    return [{"id": s.id, "title": s.title, "technique": s.technique, "notebook": s.notebook.name,
             "status": "built" if s.built else "coming", "kernels": ", ".join(v.name for v in s.variants)}
            for s in stages.REGISTRY]


def stage_map() -> Markdown:
    """The course's stages as a Markdown table; built notebooks are links."""
    lines = ["| stage | title | technique | notebook | status |", "|---|---|---|---|---|"]
    for r in stage_rows():
        nb = f"[{r['notebook']}]({r['notebook']})" if r["status"] == "built" else r["notebook"]
        lines.append(f"| {r['id']} | {r['title']} | {r['technique']} | {nb} | {r['status']} |")
    return Markdown("\n".join(lines))


# ---- kernel source -------------------------------------------------------------------------
def _kernel_path(name_or_path) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".cu", ".cuh"):
        return p if p.is_absolute() else ROOT / p
    return stages.resolve(name_or_path).path


def kernel_source(name_or_path) -> Markdown:
    """The kernel file of a registered variant (or a .cu or .cuh path), read from disk as it is now."""
    path = _kernel_path(name_or_path)
    return Markdown(f"`{rel(path)}`\n\n```cpp\n{path.read_text().rstrip()}\n```")


def _code_lines(path: Path, code_only: bool) -> list[str]:
    if not code_only:
        return path.read_text().splitlines()
    return [line.rstrip() for line in strip_comments(path.read_text()).splitlines() if line.strip()]


def diff_text(old, new, context: int = 2, code_only: bool = False) -> str:
    """The unified diff between two kernel files, computed with difflib from the files as they
    are now; code_only=True leaves out comments and blank lines (the change in the code itself)."""
    a, b = _kernel_path(old), _kernel_path(new)
    lines = difflib.unified_diff(_code_lines(a, code_only), _code_lines(b, code_only),
                                 fromfile=rel(a), tofile=rel(b), n=context, lineterm="")
    return "\n".join(lines)


def kernel_diff(old, new, context: int = 2, code_only: bool = False) -> Markdown:
    text = diff_text(old, new, context, code_only)
    return Markdown(f"```diff\n{text}\n```" if text else "The two files are identical.")


def lesson_diff(variant, context: int = 2, code_only: bool = False) -> Markdown:
    """A kernel's diff against the kernel it is built from (Variant.parent): the stage's one idea."""
    v = stages.resolve(variant)
    if v.parent is None:
        raise ValueError(f"{v.name} is the course's first kernel: it is built from nothing, so there is no diff.")
    return kernel_diff(v.parent, v.name, context, code_only)



# ---- intensity and the roofline ------------------------------------------------------------------
REFERENCE_GPU = "NVIDIA H200"   # whose datasheet roofs and committed results the CPU emulator shows


def intensity_table(cases, size: int = 4096) -> str:
    """Plain text: FLOPs per byte of each (variant name, configuration) at size^3, from the
    models of helpers.intensity: per byte the threads request from global memory, per byte of
    DRAM traffic (the block model), per byte loaded from shared memory. The same on every backend."""
    labels = [f"{name} ({(config or stages.variant(name).default).label()})" for name, config in cases]
    width = max([44, *map(len, labels)])   # the columns stay aligned under the longest label
    rows = [f"M = N = K = {size}: FLOP per byte, from the models in helpers/measure/intensity.py",
            f"{'kernel (configuration)':<{width}} {'global requests':>15} {'DRAM (block model)':>18} {'shared loads':>12}"]
    for label, (name, config) in zip(labels, cases):
        v = stages.variant(name)
        i = intensity.intensity(v, size, size, size, config or v.default)
        smem = "-" if i.smem is None else f"{i.smem:.3g}"
        rows.append(f"{label:<{width}} {i.requests:>15.3g} {i.dram:>18.3g} {smem:>12}")
    return "\n".join(rows)


def roofline_view(variant_names, model_cases=(), gpu_name: str = REFERENCE_GPU):
    """The roofline with the stage's kernels as points: measured now on a GPU, otherwise the
    datasheet roofs of `gpu_name` and the measurements committed in results/ for it (none are
    made up). Each (variant name, configuration) of `model_cases` adds a dotted vertical line at
    its modelled DRAM intensity (at 4096^3), where its point would sit. Returns the figure."""
    names = set(variant_names)
    if backend.name() == "gpu":
        ceilings, points = roofline.measured_roofline([stages.variant(n) for n in variant_names])
    else:
        ceilings, points = roofline.reference_roofline(gpu_name)
    points = [p for p in points if p.variant in names]
    xs = sorted(p.intensity_flop_per_byte for p in points)
    crowded = any(b < a * 1.2 for a, b in zip(xs, xs[1:]))   # points on one vertical: a legend, not labels
    fig = roofline_plot.plot_roofline(ceilings, points, labels=not crowded)
    ax = fig.axes[0]
    for name, config in model_cases:
        v = stages.variant(name)
        x = intensity.intensity(v, 4096, 4096, 4096, config or v.default).dram
        ax.axvline(x, color="#7570b3", linestyle=":", linewidth=1.2)
        ax.text(x * 1.03, ax.get_ylim()[0] * 1.15, f"model: {(config or v.default).label()}, "
                f"{x:.3g} FLOP/B, roof {ceilings.attainable(x):.3g} TFLOP/s", rotation=90, va="bottom",
                ha="left", fontsize=7, color="#7570b3")
    return fig


# ---- throughput: measured here on a GPU, or the committed measurements -----------------------------
NOT_TIMED = Markdown("Not timed: the CPU emulator's speed says nothing about a GPU. The measurements below were made on one.")


def plot_committed(results: GpuResults) -> list:
    """GFLOP/s against size, one figure per results file with more than one size; [] if none."""
    return [figures.plot_throughput(s.rows, title=s.provenance.get("gpu", ""))
            for s in results.sets if len({r["M"] for r in s.rows}) > 1]


def throughput(variants, sizes=(256, 512, 1024, 2048, 4096), committed: str | None = None):
    """A stage's performance section in one call. On a GPU: each variant and cuBLAS timed now at
    size^3 (gpu_results.measure), drawn, returned as a table. On the CPU emulator, whose speed means
    nothing: the GPU measurements committed for stage `committed` (drawn, with their provenance), or,
    with no stage given, a note saying nothing was timed."""
    if backend.name() == "gpu":
        rows = gpu_results.measure(variants, sizes=sizes)
        figures.plot_throughput(rows, title=backend.current().device_info().name)
        return gpu_results.throughput_table(rows)
    if committed is None:
        return NOT_TIMED
    shown = gpu_results.gpu_results(committed)
    plot_committed(shown)
    return shown

"""Small display helpers for the notebooks: device card, stage map, kernel source and diffs,
and performance numbers (measured here on a GPU, or committed GPU results on the CPU).

Every function returns a value (a string, or an object that renders as Markdown in Jupyter
and as plain text elsewhere); nothing here prints, so tests can call everything directly.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from . import backend, results_files, stages

ROOT = stages.ROOT
RESULTS_DIR = results_files.RESULTS_DIR


class Markdown(str):
    """A string that Jupyter renders as Markdown and everything else sees as plain text."""

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:  # the plain-text view in a terminal or a text-only front end
        return str(self)


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
    """The device card of the backend in use; on the CPU, with what the emulator is."""
    card = backend.current().device_info().card()
    return card + ("\n\n" + EMULATOR_NOTE if backend.name() == "cpu" else "")


# ---- the stage map -------------------------------------------------------------------------
def stage_rows() -> list[dict]:
    """One row per stage of the registry: id, title, technique, notebook, built or coming, kernels."""
    return [{"id": s.id, "title": s.title, "technique": s.technique, "notebook": s.notebook.name,
             "status": "built" if s.built else "coming", "kernels": ", ".join(v.name for v in s.variants)}
            for s in stages.STAGES]


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
    return stages.variant(str(name_or_path)).path


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def kernel_source(name_or_path) -> Markdown:
    """The kernel file of a registered variant (or a .cu or .cuh path), read from disk as it is now."""
    path = _kernel_path(name_or_path)
    return Markdown(f"`{_rel(path)}`\n\n```cpp\n{path.read_text().rstrip()}\n```")


def _code_lines(path: Path, code_only: bool) -> list[str]:
    if not code_only:
        return path.read_text().splitlines()
    from .kernel_source import strip_comments
    return [line.rstrip() for line in strip_comments(path.read_text()).splitlines() if line.strip()]


def diff_text(old, new, context: int = 2, code_only: bool = False) -> str:
    """The unified diff between two kernel files, computed with difflib from the files as they
    are now; code_only=True leaves out comments and blank lines (the change in the code itself)."""
    a, b = _kernel_path(old), _kernel_path(new)
    lines = difflib.unified_diff(_code_lines(a, code_only), _code_lines(b, code_only),
                                 fromfile=_rel(a), tofile=_rel(b), n=context, lineterm="")
    return "\n".join(lines)


def kernel_diff(old, new, context: int = 2, code_only: bool = False) -> Markdown:
    text = diff_text(old, new, context, code_only)
    return Markdown(f"```diff\n{text}\n```" if text else "The two files are identical.")


# ---- performance ---------------------------------------------------------------------------
def _fmt_row(r: dict) -> str:
    pct = f"{r['pct_cublas']:.1f}" if r.get("pct_cublas") is not None else "-"
    return (f"| {r['variant']} | {r['M']}x{r['N']}x{r['K']} | {r['median_ms']:.3f} | "
            f"{r['tflops'] * 1e3:,.0f} | {r['tflops']:.2f} | {pct} |")


def throughput_table(rows: list[dict]) -> Markdown:
    """Rows (variant, M, N, K, median_ms, tflops, pct_cublas) as a Markdown table."""
    head = ["| kernel | M x N x K | median ms | GFLOP/s | TFLOP/s | % of cuBLAS |", "|---|---|---|---|---|---|"]
    ordered = sorted(rows, key=lambda r: (r["M"] * r["N"] * r["K"], r["variant"] != "cublas_sgemm"))
    return Markdown("\n".join(head + [_fmt_row(r) for r in ordered]))


def measure(variants, sizes=(256, 512, 1024, 2048, 4096), n_warmup: int = 3, n_repeat: int = 20) -> list[dict]:
    """On a GPU: each variant (default configuration) and cuBLAS at size^3, timed in the same run.
    Rows have the format of results/*.json. Raises CourseError on the CPU emulator."""
    from . import bench, progress
    rows = []
    with progress.bar(total=len(sizes) * (len(variants) + 1), desc="timing", unit="run") as shown:
        for n in sizes:
            shown.set_postfix_str(f"cuBLAS at {n}^3")
            cublas = bench.time_cublas(n, n, n, n_warmup, n_repeat)
            shown.update()
            rows.append({"variant": "cublas_sgemm", "M": n, "N": n, "K": n, "median_ms": cublas.median_ms,
                         "tflops": cublas.tflops(n, n, n), "pct_cublas": 100.0})
            for v in variants:
                shown.set_postfix_str(f"{v.name} at {n}^3")
                t, rel = bench.time_variant(v, n, n, n, n_warmup=n_warmup, n_repeat=n_repeat)
                shown.update()
                rows.append({"variant": v.name, "M": n, "N": n, "K": n, "median_ms": t.median_ms,
                             "tflops": t.tflops(n, n, n), "pct_cublas": 100.0 * cublas.median_ms / t.median_ms,
                             "max_rel_diff_vs_cublas": rel})
    return rows


@dataclass
class ResultSet:
    """The rows of one results file that concern a stage, with where and when they were measured."""
    file: str
    provenance: dict
    rows: list[dict]

    @property
    def label(self) -> str:
        p = self.provenance
        bits = [f"Measured on {p.get('gpu', 'an unnamed GPU')}"]
        if p.get("compute_capability"):
            bits[0] += f" (compute capability {p['compute_capability']})"
        date = str(p.get("date") or "an unrecorded date")
        bits.append(f"on {date[:10]}" + (f" {date[11:16]} UTC" if len(date) >= 16 and date[10] == "T" else ""))
        extra = ", ".join(f"{k} {p[k]}" for k in ("driver", "cupy") if p.get(k))
        return " ".join(bits) + (f"; {extra}" if extra else "") + f"; from `{self.file}`"


@dataclass
class GpuResults:
    """Committed GPU measurements of one stage's kernels (and cuBLAS beside them)."""
    stage_id: str
    sets: list[ResultSet] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.sets)

    @property
    def rows(self) -> list[dict]:
        return [dict(r, gpu=s.provenance.get("gpu"), date=s.provenance.get("date"), file=s.file)
                for s in self.sets for r in s.rows]

    def _none(self) -> str:
        return (f"No GPU results committed yet for stage {self.stage_id}: results/ holds no measurement of "
                f"its kernels. Nothing is shown rather than numbers from the CPU emulator, which say nothing "
                f"about a GPU. On a machine with a CUDA GPU this section times the kernels itself.")

    def _repr_markdown_(self) -> str:
        if not self.found:
            return f"**{self._none()}**"
        return "\n\n".join(f"{s.label}\n\n{throughput_table(s.rows)}" for s in self.sets)

    def __str__(self) -> str:
        if not self.found:
            return self._none()
        return "\n\n".join(f"{s.label}\n{throughput_table(s.rows)}" for s in self.sets)

    __repr__ = __str__

    def plot(self):
        """GFLOP/s against size, one figure per results file with more than one size; [] if none."""
        from .figures import plot_throughput
        figs = []
        for s in self.sets:
            if len({r["M"] for r in s.rows}) > 1:
                figs.append(plot_throughput(s.rows, title=s.provenance.get("gpu", "")))
        return figs


def _normalise(row: dict, data: dict) -> dict | None:
    """A row in the course's format, or None when it holds no GPU timing."""
    if row.get("tflops") is None or row.get("median_ms") is None or "variant" not in row:
        return None
    size = data.get("size")
    out = dict(row)
    for d in ("M", "N", "K"):
        out.setdefault(d, size)
    if None in (out["M"], out["N"], out["K"]):
        return None
    return out


def gpu_results(stage_id: str, directory: Path | str = RESULTS_DIR) -> GpuResults:
    """Reads results/*.json and keeps, per file with GPU provenance, the rows of this stage's
    kernels and the cuBLAS rows at the same sizes. Files are read as they are; nothing is made up.

    Format: {"provenance": {"gpu", "date", "driver", "cupy", ...}, "rows": [{"variant", "M", "N",
    "K", "median_ms", "tflops", "pct_cublas", ...}]}; the `python -m helpers ladder --json` format
    (a top-level "size" and a separate "cublas" row) is read too."""
    names = {v.name for v in stages.stage(stage_id).variants}
    result = GpuResults(stage_id)
    for path, data in results_files.with_provenance(directory):
        if not data["provenance"].get("gpu"):
            continue                     # no GPU named: not a GPU measurement
        rows = [r for r in data.get("rows", []) if isinstance(r, dict)]
        if isinstance(data.get("cublas"), dict):
            rows.append(data["cublas"])
        rows = [r for r in (_normalise(r, data) for r in rows) if r]
        mine = [r for r in rows if r["variant"] in names]
        if not mine:
            continue
        sizes = {(r["M"], r["N"], r["K"]) for r in mine}
        cublas = [r for r in rows if r["variant"].startswith("cublas") and (r["M"], r["N"], r["K"]) in sizes]
        result.sets.append(ResultSet(_rel(path), data["provenance"], cublas + mine))
    return result


# ---- intensity and the roofline ------------------------------------------------------------------
REFERENCE_GPU = "NVIDIA H200"   # whose datasheet roofs and committed results the CPU emulator shows


def intensity_table(cases, size: int = 4096) -> str:
    """Plain text: FLOPs per byte of each (variant name, configuration) at size^3, from the
    models of helpers.intensity: per byte the threads request from global memory, per byte of
    DRAM traffic (the block model), per byte loaded from shared memory. The same on every backend."""
    from . import intensity
    head = (f"M = N = K = {size}: FLOP per byte, from the models in helpers/intensity.py\n"
            f"{'kernel (configuration)':<44} {'global requests':>15} {'DRAM (block model)':>18} {'shared loads':>12}")
    rows = [head]
    for name, config in cases:
        v = stages.variant(name)
        i = intensity.intensity(v, size, size, size, config or v.default)
        smem = "-" if i.smem is None else f"{i.smem:.3g}"
        rows.append(f"{name + ' (' + (config or v.default).label() + ')':<44} {i.requests:>15.3g} {i.dram:>18.3g} "
                    f"{smem:>12}")
    return "\n".join(rows)


def roofline_view(variant_names, model_cases=(), gpu_name: str = REFERENCE_GPU):
    """The roofline with the stage's kernels as points: measured now on a GPU, otherwise the
    datasheet roofs of `gpu_name` and the measurements committed in results/ for it (none are
    made up). Each (variant name, configuration) of `model_cases` adds a dotted vertical line at
    its modelled DRAM intensity (at 4096^3), where its point would sit. Returns the figure."""
    from . import intensity, roofline
    names = set(variant_names)
    if backend.name() == "gpu":
        ceilings, points = roofline.measured_roofline([stages.variant(n) for n in variant_names])
    else:
        ceilings, points = roofline.reference_roofline(gpu_name)
    points = [p for p in points if p.variant in names]
    xs = sorted(p.intensity_flop_per_byte for p in points)
    crowded = any(b < a * 1.2 for a, b in zip(xs, xs[1:]))   # points on one vertical: a legend, not labels
    fig = roofline.plot_roofline(ceilings, points, labels=not crowded)
    ax = fig.axes[0]
    for name, config in model_cases:
        v = stages.variant(name)
        x = intensity.intensity(v, 4096, 4096, 4096, config or v.default).dram
        ax.axvline(x, color="#7570b3", linestyle=":", linewidth=1.2)
        ax.text(x * 1.03, ax.get_ylim()[0] * 1.15, f"model: {(config or v.default).label()}, "
                f"{x:.3g} FLOP/B, roof {ceilings.attainable(x):.3g} TFLOP/s", rotation=90, va="bottom",
                ha="left", fontsize=7, color="#7570b3")
    return fig

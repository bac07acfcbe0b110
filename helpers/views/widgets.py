"""Slider panels. Each panel is three parts:

- a pure run function: configuration in, a plain result object out (nothing printed or drawn);
- pure describe/draw functions: result in, text or a matplotlib figure out;
- a panel function joining them with ipywidgets.interactive_output, continuous_update=False.

Tests call the run and draw functions directly; only the panel needs a notebook.

Panels: block_shape_panel (stage 02: block shape of the one-thread-per-element kernels) and
tile_explorer (any variant: a slider per configuration field; compile, verify, trace, banks,
sectors, intensity, resources and on a GPU the speed).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass, field

from helpers.measure import accesses
from helpers.core import configs
from helpers.run import backend
from helpers.views import figures
from helpers.core import gpu_specs
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import CourseError
from helpers.core.arch import WARP_SIZE
from helpers.measure.accesses import TRACE_SIZE
from helpers.measure import bench
from helpers.measure import intensity
from helpers.measure import roofline
from helpers.measure import resources
from helpers.measure import tuning_space

# One panel figure is drawn at a time: plt.ioff() saves and restores a process-wide setting, and
# panel callbacks can run on two threads at once (see interactive_output).
_DRAW_LOCK = threading.Lock()


def interactive_output(run, describe, draw, controls: dict):
    """The course's panel: `run(**values)` on each settled slider move, its description printed
    and its figure (if any) drawn. run, describe and draw stay plain functions that tests call.

    The figure is drawn with pyplot's interactive mode off, taken out of pyplot's list of open
    figures, and only then displayed. Otherwise the inline backend queues it for its post_execute
    redraw, and in JupyterLab with ipykernel 7 the comm messages of a slider move are handled on
    two threads (the main shell and a comm subshell), each firing post_execute: the other thread
    re-rendered and closed the very figure being displayed, and the PNG sent came out blank or
    partial (tests/e2e/test_browser.py found it)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    def show(**values):
        result = run(**values)
        print(describe(result))
        with _DRAW_LOCK, plt.ioff():
            fig = draw(result)
            if fig is not None:
                plt.close(fig)      # out of pyplot's list: no post_execute hook can render or close it
                display(fig)

    return w.interactive_output(show, controls)

POWERS_OF_TWO = tuple(2**i for i in range(11))          # 1 .. 1024
TIME_SIZE = 2048       # on a GPU the panels time M = N = K = 2048
INTENSITY_SIZE = 4096  # the intensity model is evaluated at M = N = K = 4096
REFERENCE_GPU = "NVIDIA H200"   # whose datasheet roofs the CPU emulator shows


# ---- block shape (stage 02) -----------------------------------------------------------------
@dataclass(frozen=True)
class BlockShapeResult:
    """What one block shape does for one stage 02 kernel."""
    variant: str
    block_x: int
    block_y: int
    M: int
    N: int
    K: int
    backend: str
    error: str | None = None                 # the configuration's constraint message, if it broke one
    grid: tuple[int, int, int] | None = None
    ok: bool | None = None                   # verified on M x N x K
    verdict: str = ""
    sectors: dict = field(default_factory=dict)   # "A" / "B" / "C" -> sectors per warp request (traced)
    ideal: dict = field(default_factory=dict)     # the fewest sectors the same bytes fit in
    lines: dict = field(default_factory=dict)     # "A" / "B" / "C" -> source line of the access
    rows: int = 0                            # rows of C warp 0 stores to (traced)
    lanes: int = 0                           # active lanes of warp 0
    warp_map: object = None                  # [row, col] of block 0's tile of C -> warp storing it (traced)
    time_size: int | None = None
    median_ms: float | None = None
    gflops: float | None = None

    @property
    def threads(self) -> int:
        return self.block_x * self.block_y

    @property
    def warps(self) -> int:
        return -(-self.threads // WARP_SIZE)

    @property
    def tile(self) -> tuple[int, int]:
        """(rows, cols) of C one block covers, from the trace."""
        return tuple(int(n) for n in self.warp_map.shape) if self.warp_map is not None else (0, 0)


def run_block_shape(variant_name: str, block_x: int, block_y: int, M: int = 67, N: int = 61, K: int = 53,
                    time_size: int | None = None) -> BlockShapeResult:
    """Checks the configuration, verifies the kernel with it on M x N x K (fresh random data),
    traces block 0 of the kernel file with this block shape (which warp stores which element of
    C; the sectors of warp 0's requests), and on a GPU times it at time_size^3 (default 2048). Never raises for a broken
    constraint: the result holds the message."""
    variant = stages.variant(variant_name)
    base = dict(variant=variant_name, block_x=block_x, block_y=block_y, M=M, N=N, K=K, backend=backend.name())
    try:
        config = variant.config(block_x=block_x, block_y=block_y)
    except ValueError as e:
        return BlockShapeResult(**base, error=str(e))
    check = verify.check(variant, verify.Shape("fresh random data", M, N, K), config)
    w = accesses.stage02_warp0(variant_name, block_x, block_y)
    picks = {"A": w.load_a, "B": w.load_b, "C": w.store_c}
    result = dict(base, grid=config.grid(M, N), ok=check.ok, verdict=check.details(),
                  sectors={k: round(a.mean_sectors) for k, a in picks.items()},
                  ideal={k: round(a.mean_ideal) for k, a in picks.items()},
                  lines={k: a.line for k, a in picks.items()}, rows=w.rows, lanes=w.lanes,
                  warp_map=accesses.block_tile(variant, config))
    if backend.name() == "gpu" and check.ok:
        n = time_size or TIME_SIZE
        timing, _ = bench.time_variant(variant, n, n, n, config, n_warmup=2, n_repeat=10)
        result.update(time_size=n, median_ms=timing.median_ms, gflops=timing.tflops(n, n, n) * 1e3)
    return BlockShapeResult(**result)


def describe_block_shape(r: BlockShapeResult) -> str:
    """The result as a few lines of text."""
    head = f"{r.variant}, block ({r.block_x}, {r.block_y})"
    if r.error:
        return f"{head}: not a valid configuration.\n{r.error}"
    lines = [f"{head}: {r.threads} threads = {r.warps} warp{'s' if r.warps > 1 else ''} per block; "
             f"block tile of C: {r.tile[0]} rows x {r.tile[1]} columns; grid {r.grid[:2]} for M={r.M}, N={r.N}."]
    if r.lanes < WARP_SIZE:
        lines.append(f"Warp 0 has only {r.lanes} active lanes: {WARP_SIZE - r.lanes} of its 32 do nothing.")
    lines.append(f"Correctness on {r.M}x{r.N}x{r.K}: {r.verdict}")
    s, i = r.sectors, r.ideal
    lines.append(f"Sectors per request of warp 0 (traced from the kernel file, block 0, M=N=K={TRACE_SIZE}): "
                 f"load A {s['A']}, load B {s['B']}, store C {s['C']}  (the same bytes packed: "
                 f"{i['A']}, {i['B']}, {i['C']}); warp 0 stores to {r.rows} row{'s' if r.rows > 1 else ''} of C.")
    if r.median_ms is not None:
        lines.append(f"GPU time at {r.time_size}^3: {r.median_ms:.3f} ms median = {r.gflops:,.0f} GFLOP/s.")
    elif r.backend == "cpu":
        lines.append("Not timed: this is the CPU emulator, whose speed says nothing about a GPU.")
    return "\n".join(lines)


def draw_block_shape(r: BlockShapeResult):
    """Two panels: the block's tile of C coloured by warp (warp 0 outlined), and the sectors warp 0
    touches per request against the coalesced ideal. None for an invalid configuration."""
    if r.error:
        return None
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator
    rows, cols = r.tile
    tile = np.ma.masked_less(r.warp_map, 0)                  # [row, col] of C -> warp, traced
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    ratio = max(rows, cols) / min(rows, cols)
    ax0.imshow(tile, cmap="tab20", interpolation="nearest", aspect="equal" if ratio <= 16 else "auto",
               extent=(0, cols, rows, 0), vmin=0, vmax=max(19, r.warps - 1))
    w0 = np.argwhere(r.warp_map == 0)
    (r0, c0), (r1, c1) = w0.min(axis=0), w0.max(axis=0)
    ax0.add_patch(Rectangle((c0, r0), c1 - c0 + 1, r1 - r0 + 1, fill=False, edgecolor="black", linewidth=2))
    ax0.set_title(f"block tile of C: {rows} x {cols}, {r.warps} warp{'s' if r.warps > 1 else ''} (warp 0 outlined)")
    ax0.set_xlabel("column of C")
    ax0.set_ylabel("row of C")
    labels = [f"load A\nline {r.lines['A']}", f"load B\nline {r.lines['B']}", f"store C\nline {r.lines['C']}"]
    got, ideal = [r.sectors[m] for m in "ABC"], [r.ideal[m] for m in "ABC"]
    x = np.arange(3)
    ax1.bar(x - 0.2, got, 0.4, label="this kernel and block", color="#d95f02")
    ax1.bar(x + 0.2, ideal, 0.4, label="the same bytes, packed", color="#1b9e77")
    for xi, g, i in zip(x, got, ideal):
        ax1.text(xi - 0.2, g + 0.5, str(g), ha="center", fontsize=9)
        ax1.text(xi + 0.2, i + 0.5, str(i), ha="center", fontsize=9)
    ax1.set_xticks(x, labels)
    ax1.set_ylim(0, 42)
    ax1.set_ylabel("32-byte sectors per warp request")
    ax1.set_title("sectors per request of warp 0 (traced)")
    ax1.legend(loc="upper center", ncol=2, fontsize=8)
    ax0.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax0.yaxis.set_major_locator(MaxNLocator(integer=True))
    status = "correct" if r.ok else "WRONG"
    timing = f", {r.gflops:,.0f} GFLOP/s at {r.time_size}^3" if r.gflops is not None else ""
    fig.suptitle(f"{r.variant}, block ({r.block_x}, {r.block_y}): {status}{timing}", fontsize=11)
    fig.tight_layout()
    return fig


def block_shape_panel(variant_name: str = "02_naive_coalesced", M: int = 67, N: int = 61, K: int = 53):
    """Sliders for block_x and block_y (powers of two), a kernel chooser, and the output."""
    import ipywidgets as w

    names = [v.name for v in stages.stage("02").variants]
    kernel = w.Dropdown(options=names, value=variant_name, description="kernel")
    bx = w.SelectionSlider(options=POWERS_OF_TWO, value=32, description="block_x", continuous_update=False)
    by = w.SelectionSlider(options=POWERS_OF_TWO, value=32, description="block_y", continuous_update=False)

    out = interactive_output(lambda variant_name, block_x, block_y: run_block_shape(variant_name, block_x,
                                                                                      block_y, M, N, K),
                             describe_block_shape, draw_block_shape,
                             {"variant_name": kernel, "block_x": bx, "block_y": by})
    return w.VBox([w.HBox([kernel, bx, by]), out])


# ---- tile explorer (any variant) --------------------------------------------------------------
@dataclass
class TileResult:
    """What one configuration of a variant does: checked, verified, traced, modelled, (timed)."""
    variant: str
    values: dict                          # configuration field -> value, as chosen
    M: int
    N: int
    K: int
    backend: str
    error: str | None = None              # the configuration's constraint message (nothing ran)
    failure: str | None = None            # a compile or launch error of the kernel file
    config: configs.KernelConfig | None = None
    ok: bool | None = None                # verified on M x N x K
    verdict: str = ""
    trace: object = None                  # helpers.trace.Trace of block 0 at trace_size^3
    banks: list = field(default_factory=list)     # accesses.BankView: warp 0's first shared load per line/array
    sectors: list = field(default_factory=list)   # accesses.WarpAccess: warp 0's global requests
    intensity: object = None              # helpers.intensity.Intensity at INTENSITY_SIZE^3, if modelled
    ceilings: object = None               # helpers.roofline.Ceilings: this GPU's, or REFERENCE_GPU's datasheet
    resources: object = None              # helpers.resources.KernelResources
    notes: list = field(default_factory=list)     # what could not be shown, and why
    time_size: int | None = None
    median_ms: float | None = None
    tflops: float | None = None

    @property
    def label(self) -> str:
        return f"{self.variant} ({', '.join(f'{k}={v}' for k, v in self.values.items())})"

    @property
    def roof_tflops(self) -> float | None:
        if self.intensity is None or self.ceilings is None:
            return None
        return self.ceilings.attainable(self.intensity.dram)


def config_fields(variant) -> list[str]:
    v = stages.resolve(variant)
    return [f.name for f in dataclasses.fields(v.config_type)]


def _intensity(variant, config):
    try:
        return intensity.intensity(variant, INTENSITY_SIZE, INTENSITY_SIZE, INTENSITY_SIZE, config), None
    except (KeyError, ValueError, TypeError) as e:
        return None, f"no intensity: {e}"


def _ceilings():
    try:
        if backend.name() == "gpu":
            return roofline.Ceilings.from_device(backend.current().device_info()), None
        return roofline.Ceilings.from_spec(REFERENCE_GPU), None
    except (KeyError, CourseError) as e:
        return None, f"no roofline ceilings: {e}"


def _resources(variant, config):
    try:
        return resources.kernel_resources(variant, config), None
    except (CourseError, KeyError, OSError, RuntimeError) as e:
        return None, f"no resource count: {str(e).splitlines()[0]}"


def run_tile_config(variant_name: str = "03_smem_tiling", M: int = 67, N: int = 61, K: int = 53,
                    trace_size: int = TRACE_SIZE, time_size: int | None = None, **values) -> TileResult:
    """One configuration of a variant (fields as keywords, the default for the rest): checks its
    constraints (a broken one is returned as `error`, not raised), compiles and verifies the kernel
    file on M x N x K with fresh random data, traces block 0 at trace_size^3 for warp 0's shared
    banks and global sectors, evaluates the intensity model at INTENSITY_SIZE^3 and the kernel's
    resources (registers, shared memory, occupancy), and on a GPU times it at time_size^3."""
    variant = stages.variant(variant_name)
    unknown = set(values) - set(config_fields(variant))
    if unknown:
        raise TypeError(f"{variant.name} has no configuration field {', '.join(sorted(unknown))}; "
                        f"its fields are {', '.join(config_fields(variant))}.")
    arch = backend.arch()   # the learner's GPU (on the emulator TBT_ARCH, else sm_90)
    values = {f: values.get(f, getattr(variant.default_for(arch), f)) for f in config_fields(variant)}
    r = TileResult(variant.name, values, M, N, K, backend.name())
    try:
        config = variant.config(**values)
        config.check_shape(M, N, K)
        config.check_shape(trace_size, trace_size, trace_size)
    except ValueError as e:
        r.error = str(e)
        return r
    if why := tuning_space.does_not_fit(config, arch):
        r.error = f"{config.label()} on {why}"
        return r
    r.config = config
    try:
        check = verify.check(variant, verify.Shape("fresh random data", M, N, K), config)
        r.ok, r.verdict = check.ok, check.details()
        r.trace = accesses.kernel_trace(variant, config, trace_size)
    except CourseError as e:
        r.failure = str(e)
        return r
    r.banks = [accesses.bank_view(r.trace, q) for q in accesses.shared_requests(r.trace)]
    r.sectors = accesses.warp_accesses(r.trace)
    for attr, (value, note) in (("intensity", _intensity(variant, config)), ("ceilings", _ceilings()),
                                ("resources", _resources(variant, config))):
        setattr(r, attr, value)
        if note:
            r.notes.append(note)
    if backend.name() == "gpu" and r.ok:
        n = time_size or TIME_SIZE
        timing, _ = bench.time_variant(variant, n, n, n, config, n_warmup=2, n_repeat=10)
        r.time_size, r.median_ms, r.tflops = n, timing.median_ms, timing.tflops(n, n, n)
    return r


def describe_tile_config(r: TileResult) -> str:
    """The result as text: geometry, verdict, banks, sectors, intensity, resources, speed."""
    if r.error:
        return f"{r.label}: not a valid configuration.\n{r.error}"
    c = r.config
    threads = math.prod(c.block())
    warps = -(-threads // WARP_SIZE)
    lines = [f"{r.label}: block {c.block()[:2]} = {threads} thread{'s' if threads > 1 else ''} = {warps} "
             f"warp{'s' if warps > 1 else ''}; grid {c.grid(r.M, r.N)[:2]} for M={r.M}, N={r.N}."]
    if r.failure:
        return "\n".join(lines + [f"The kernel did not run: {r.failure}"])
    lines.append(f"Correctness on {r.M}x{r.N}x{r.K}: {r.verdict}")
    if r.trace is not None:
        lines.append(f"Traced block 0 of {r.trace.grid[:2]} at M=N=K={accesses.TRACE_SIZE}, warp 0:")
    for b in r.banks:
        q, rep = b.request, b.report
        what = "no conflict" if rep.ways == 1 else f"{rep.ways}-way conflict"
        lines.append(f"  shared {q.op} {q.array} (line {q.line}): {b.distinct_words} word"
                     f"{'s' if b.distinct_words > 1 else ''} in {b.banks_used} bank{'s' if b.banks_used > 1 else ''}, "
                     f"{what}, {rep.wavefronts} wavefront{'s' if rep.wavefronts > 1 else ''} (ideal {rep.ideal})")
    if r.sectors:
        lines.append("  global, sectors per request (ideal): " + ", ".join(
            f"{a.label} {accesses.short_number(a.mean_sectors)} ({accesses.short_number(a.mean_ideal)})" for a in r.sectors))
    i = r.intensity
    if i is not None:
        smem = f", {i.smem:.3g} FLOP per shared-memory byte" if i.smem is not None else ""
        lines.append(f"Intensity model at {INTENSITY_SIZE}^3: {i.requests:.3g} FLOP per requested global byte, "
                     f"{i.dram:.3g} FLOP per DRAM byte (block model){smem}.")
        tf32 = stages.variant(r.variant).precision == "tf32"
        spec = gpu_specs.lookup(r.ceilings.gpu) if tf32 and r.ceilings is not None else None
        if tf32 and r.ceilings is not None:  # the tensor cores are not bounded by the FP32 lanes' roof
            peak = spec.tf32_tflops if spec else None
            lines.append(f"  roofline: TF32 runs on the tensor cores, above the FP32 roof; "
                         + (f"on {r.ceilings.gpu} (datasheet: {peak:.4g} TFLOP/s TF32 dense, {r.ceilings.dram_tbs:.3g} "
                            f"TB/s) min({peak:.4g}, {r.ceilings.dram_tbs:.3g} x {i.dram:.3g}) = "
                            f"{min(peak, r.ceilings.dram_tbs * i.dram):.4g} TFLOP/s" if peak else
                            f"no TF32 peak is listed for {r.ceilings.gpu} in helpers/core/gpu_specs.py"))
        elif r.roof_tflops is not None:
            cl = r.ceilings
            lines.append(f"  roofline bound on {cl.gpu} ({cl.source}: {cl.fp32_tflops:.3g} TFLOP/s, "
                         f"{cl.dram_tbs:.3g} TB/s): min({cl.fp32_tflops:.3g}, {cl.dram_tbs:.3g} x {i.dram:.3g}) = "
                         f"{r.roof_tflops:.3g} TFLOP/s")
    if r.resources is not None:
        res = r.resources
        lines.append(f"Resources ({res.source.split(',')[0]}): {res.registers} registers per thread, "
                     f"{res.static_shared_bytes + res.dynamic_shared_bytes} B shared memory per block, "
                     f"{res.local_bytes} B local memory"
                     + ("" if res.spills is None else (", spills" if res.spills else ", no spills")))
        if res.occupancy is not None:
            lines.append(f"  {res.occupancy.describe()}")
    lines += [f"({n})" for n in r.notes]
    if r.tflops is not None:
        lines.append(f"GPU time at {r.time_size}^3: {r.median_ms:.3f} ms median = {r.tflops:.2f} TFLOP/s.")
    elif r.backend == "cpu":
        lines.append("Not timed: this is the CPU emulator, whose speed says nothing about a GPU.")
    return "\n".join(lines)


def draw_tile_config(r: TileResult):
    """Warp 0's shared loads as bank grids (one per line and array) and the sectors of its global
    requests. None when nothing was traced (a broken constraint or a kernel that did not run)."""
    if r.trace is None:
        return None
    import matplotlib.pyplot as plt
    n = len(r.banks)
    fig, axes = plt.subplots(1, n + 1, figsize=(4.6 * n + 5.0, 5.4), squeeze=False,
                             gridspec_kw={"width_ratios": [1] * n + [1.1]})
    axes = axes[0]
    for ax, b in zip(axes, r.banks):
        figures.plot_bank_grid(b.request, ax, b.origin)
    figures.plot_sectors(r.trace, axes[-1], warp=0)
    status = "correct" if r.ok else "WRONG"
    speed = f", {r.tflops:.2f} TFLOP/s at {r.time_size}^3" if r.tflops is not None else ""
    fig.suptitle(f"{r.label}: {status}{speed}", fontsize=11)
    fig.tight_layout()
    return fig


def slider_options(default: int, top: int = 1024) -> tuple[int, ...]:
    """Powers of two from 1 to four times the default (at most `top`), and the default itself."""
    limit = min(top, max(4 * default, 2))
    return tuple(sorted({p for p in POWERS_OF_TWO if p <= limit} | {default}))


def fitting_options(variant, field_name: str, arch: str | None = None) -> tuple[int, ...]:
    """A slider's values (slider_options around the variant's default for `arch`, default backend.arch()),
    less those with which the default, this one field changed, is a valid configuration that still cannot
    launch on that GPU (too much shared memory or too many registers for one SM). A value that breaks a
    tile rule stays: moving another slider may make it valid, and its message teaches the rule."""
    v = stages.resolve(variant)
    arch = arch or backend.arch()
    start = v.default_for(arch)
    kept = []
    for x in slider_options(getattr(start, field_name)):
        try:
            config = dataclasses.replace(start, **{field_name: x})
        except ValueError:
            kept.append(x)
            continue
        if x == getattr(start, field_name) or not tuning_space.does_not_fit(config, arch):
            kept.append(x)
    return tuple(kept)


def tile_explorer(variant_name: str = "03_smem_tiling", M: int = 67, N: int = 61, K: int = 53):
    """A slider per configuration field of the variant (powers of two; a broken constraint shows
    its message), continuous_update=False; each setting is compiled, verified, traced and drawn."""
    import ipywidgets as w

    variant = stages.variant(variant_name)
    start = variant.default_for(backend.arch())
    sliders = {f: w.SelectionSlider(options=fitting_options(variant, f), value=getattr(start, f), description=f,
                                    continuous_update=False)
               for f in config_fields(variant)}

    out = interactive_output(lambda **values: run_tile_config(variant.name, M, N, K, **values),
                             describe_tile_config, draw_tile_config, sliders)
    return w.VBox([w.HBox([w.Label(variant.name), *sliders.values()]), out])

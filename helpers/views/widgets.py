"""Slider panels. Each panel is three parts:

- a pure run function: configuration in, a plain result object out (nothing printed or drawn);
- pure describe/draw functions: result in, text or a matplotlib figure out;
- a panel function joining them with ipywidgets.interactive_output, continuous_update=False.

Tests call the run and draw functions directly; only the panel needs a notebook.

Panels: block_shape_panel (stage 02: block shape of the one-thread-per-element kernels, in
helpers/views/block_shape.py) and tile_explorer, here (any variant: a slider per configuration field;
compile, verify, trace, banks, sectors, intensity, resources and on a GPU the speed; on the emulator the
settings one slider step away are prepared while the learner reads: helpers/views/panels.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass, field

from helpers.measure import accesses
from helpers.core import configs
from helpers.run import backend, cpu_backend
from helpers.views import figures
from helpers.core import gpu_specs
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import CourseError
from helpers.core.kernel_source import KernelSource
from helpers.core.arch import WARP_SIZE
from helpers.measure.accesses import TRACE_SIZE
from helpers.measure import bench
from helpers.measure import intensity
from helpers.measure import roofline
from helpers.measure import resources
from helpers.measure import tuning_space
from helpers.views import panels
# the panels' plumbing and stage 02's panel, reachable here as the notebooks and tests call them
from helpers.views.panels import POWERS_OF_TWO, TIME_SIZE, interactive_output  # noqa: F401
from helpers.views.block_shape import (BlockShapeResult, block_shape_panel, describe_block_shape,  # noqa: F401
                                       draw_block_shape, run_block_shape)

INTENSITY_SIZE = 4096  # the intensity model is evaluated at M = N = K = 4096
REFERENCE_GPU = "NVIDIA H200"   # whose datasheet roofs the CPU emulator shows


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
    steps = tile_config_steps(variant_name, M, N, K, trace_size, time_size, **values)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def tile_config_steps(variant_name: str = "03_smem_tiling", M: int = 67, N: int = 61, K: int = 53,
                      trace_size: int = TRACE_SIZE, time_size: int | None = None, **values):
    """run_tile_config as a generator: yields the name of each step before it runs (what a panel shows while
    it works), returns the TileResult."""
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
    # on the emulator, one quick build (the trace build) both verifies and traces: these problems are small
    quick = cpu_backend.quick_builds if backend.name() == "cpu" else contextlib.nullcontext
    try:
        yield f"compiling and verifying on {M} x {N} x {K}"
        with quick():
            check = verify.check(variant, verify.Shape("fresh random data", M, N, K), config)
        r.ok, r.verdict = check.ok, check.details()
        yield f"tracing block 0 at {trace_size}^3"
        r.trace = accesses.kernel_trace(variant, config, trace_size)
    except CourseError as e:
        r.failure = str(e)
        return r
    r.banks = [accesses.bank_view(r.trace, q) for q in accesses.shared_requests(r.trace)]
    r.sectors = accesses.warp_accesses(r.trace)
    yield "reading the resources (ptxas)" if backend.name() == "cpu" else "reading the resources"
    for attr, (value, note) in (("intensity", _intensity(variant, config)), ("ceilings", _ceilings()),
                                ("resources", _resources(variant, config))):
        setattr(r, attr, value)
        if note:
            r.notes.append(note)
    if backend.name() == "gpu" and r.ok:
        yield "timing"
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
    from matplotlib.figure import Figure   # not pyplot's: the explorer draws it on its worker thread
    n = len(r.banks)
    fig = Figure(figsize=(4.6 * n + 5.0, 5.4))
    axes = fig.subplots(1, n + 1, squeeze=False, gridspec_kw={"width_ratios": [1] * n + [1.1]})[0]
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
    its message), continuous_update=False; each setting is compiled, verified, traced and drawn.
    A label says "working…" and the step under way while a setting is computed. On the emulator the
    settings one slider step away are prepared in the background while the learner reads
    (prepare_neighbours, helpers/views/panels.py), so that a move to one of them is answered at once."""
    import ipywidgets as w
    import matplotlib.pyplot  # noqa: F401 - on this thread: the notebook's backend sets up how figures display
    from IPython.display import display

    variant = stages.variant(variant_name)
    start = variant.default_for(backend.arch())
    sliders = {f: w.SelectionSlider(options=fitting_options(variant, f), value=getattr(start, f), description=f,
                                    continuous_update=False)
               for f in config_fields(variant)}
    status = w.Label(value="")

    def show(**values):
        status.value = "working…"
        try:
            answer = tile_answer(variant.name, M, N, K, values,
                                 progress=lambda step: setattr(status, "value", f"working… {step}"))
        finally:
            status.value = ""
        print(answer.text)
        if answer.figure:
            display(answer.figure, raw=True)
        if prepares_ahead():
            prepare_neighbours(variant.name, M, N, K, {f: s.options for f, s in sliders.items()}, values)

    out = w.interactive_output(show, sliders)
    return w.VBox([w.HBox([w.Label(variant.name), *sliders.values()]), status, out])


# ---- the tile explorer's answers, prepared ahead ---------------------------------------------------
@dataclass(frozen=True)
class TileAnswer:
    """What the explorer shows for one setting: describe_tile_config's text and draw_tile_config's figure, as the
    notebook displays it (IPython's formats of the figure, rendered once)."""
    text: str
    figure: dict | None
    failed: bool


def tile_key(variant_name: str, M: int, N: int, K: int, values: dict) -> tuple:
    """What an answer depends on: the setting, the backend and GPU, and the kernel file as it is now."""
    return (variant_name, M, N, K, tuple(sorted(values.items())), backend.name(), backend.arch(),
            stages.variant(variant_name).path.read_text())


def _answer_steps(key: tuple):
    """An answer (a tile_key); with ("result", *tile_key) the TileResult alone (kept for the answer: see
    PREPARED); with ("build", variant name, name expressions, kernel text) one emulator build of them all."""
    if key[0] == "build":
        yield "compiling the neighbouring settings"
        return cpu_backend.build_ahead(KernelSource(stages.variant(key[1]).path.resolve(), key[3]), key[2])
    if key[0] == "result":
        r = yield from tile_config_steps(key[1], *key[2:5], **dict(key[5]))
        if r.failure is None:
            _RESULTS[key[1:]] = r
            while len(_RESULTS) > _RESULTS_KEPT:
                _RESULTS.popitem(last=False)
        return r.failure is None
    r = _RESULTS.pop(key, None)
    if r is None:
        r = yield from tile_config_steps(key[0], *key[1:4], **dict(key[4]))
    yield "drawing"
    fig = draw_tile_config(r)
    yield "rendering the figure"
    return TileAnswer(describe_tile_config(r), panels.rendered(fig), r.failure is not None)


# One worker for every explorer of the process (the learner works in one panel at a time). It prepares the
# neighbours' results first (compile, verify, trace, resources: a fraction of a second each once built), then
# their figures (the larger part of an answer), so that a move to a neighbour not drawn yet only waits for its
# figure. The results wait in _RESULTS, touched by the worker alone. A failed answer is not kept (its cause, a
# time limit on a busy machine, may pass).
_RESULTS: OrderedDict = OrderedDict()
_RESULTS_KEPT = 12
PREPARED = panels.Preparer(_answer_steps, keep_if=lambda answer: answer is True or (
    isinstance(answer, TileAnswer) and not answer.failed))


PREPARE_AHEAD: bool | None = None   # None: in a notebook's Jupyter kernel, on the emulator


def prepares_ahead() -> bool:
    """Whether explorers prepare the neighbouring settings: on the emulator only (on a GPU nothing runs behind the
    learner's back: it would disturb their timings), where a learner reads (a Jupyter kernel; PREPARE_AHEAD
    overrides), and then only while no cell runs (panels.pause_while_cells_run)."""
    if backend.name() != "cpu":
        return False
    if PREPARE_AHEAD is not None:
        return PREPARE_AHEAD
    if not panels.in_jupyter_kernel():
        return False
    panels.pause_while_cells_run(PREPARED)
    return True


def forget_prepared() -> None:
    """Forgets every answer and result prepared (the disk's builds and counts stay)."""
    PREPARED.forget()
    _RESULTS.clear()


def prepare_neighbours(variant_name: str, M: int, N: int, K: int, options: dict, values: dict) -> None:
    """Prepares the explorer's answers for the settings one slider step away: their results, then figures."""
    settings = panels.neighbours(options, values)
    keys = [tile_key(variant_name, M, N, K, v) for v in settings]
    variant = stages.variant(variant_name)
    exprs = []
    for v in settings:
        try:
            config = variant.config(**v)
        except ValueError:
            continue
        if not tuning_space.does_not_fit(config, backend.arch()):
            exprs.append(variant.name_expression(config))
    build = [("build", variant.name, tuple(exprs), variant.path.read_text())] if len(exprs) > 1 else []
    PREPARED.prepare(build + [("result", *k) for k in keys] + keys)


def tile_answer(variant_name: str, M: int, N: int, K: int, values: dict, progress=None) -> TileAnswer:
    """The explorer's answer for one setting: prepared already, or computed now (before anything prepared
    ahead); progress(step) is called with each step's name while it is computed. On a GPU it is computed here,
    on the caller's thread (nothing is prepared there)."""
    key = tile_key(variant_name, M, N, K, values)
    if backend.name() == "cpu":
        return PREPARED.answer(key, progress)
    steps = _answer_steps(key)
    while True:
        try:
            step = next(steps)
        except StopIteration as done:
            return done.value
        if progress is not None:
            progress(step)

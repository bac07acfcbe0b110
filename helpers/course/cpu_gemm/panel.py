"""The block-size panel of stage 01: pick MR, NR, MC, KC, NC for cache_block and see whether it is
still correct, what the compiler made of it, how full each cache level is with its block, and
its speed against single-threaded OpenBLAS. run_blocks computes, describe_blocks and draw_blocks
show, blocks_panel joins them to sliders."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from helpers.core.arch import FLOAT_BYTES
from helpers.course.cpu_gemm.ceilings import VECTOR_REGISTERS, cache_sizes, fma_instructions, kib, vector_bits
from helpers.course.cpu_gemm.plots import VERSION_COLORS
from helpers.course.cpu_gemm.timing import time_openblas, time_version
from helpers.course.cpu_gemm.versions import check, check_block_sizes, version
from helpers.measure import verify
from helpers.views.widgets import interactive_output

PANEL_SIZE = 768                 # the panel times M = N = K = PANEL_SIZE
PANEL_SHAPE = verify.Shape("odd shape for the panel", 203, 197, 301)   # edges in every loop
PANEL_CHOICES = dict(MR=tuple(range(1, 9)), NR=(16, 32, 48, 64, 96, 128),
                     MC=(32, 48, 64, 96, 128, 192, 256, 384, 512), KC=(32, 64, 128, 192, 256, 384, 512, 1024),
                     NC=(256, 384, 512, 768, 1024, 1536, 2048, 4096))


@dataclass(frozen=True)
class BlockResult:
    """What one set of block sizes does for cache_block."""
    MR: int
    NR: int
    MC: int
    KC: int
    NC: int
    size: int
    error: str | None = None             # the broken rule, for sizes that cannot compile
    ok: bool | None = None               # verified on PANEL_SHAPE
    verdict: str = ""
    fma: dict = field(default_factory=dict)
    gflops: float | None = None
    openblas_gflops: float | None = None
    working_sets: tuple = ()             # (what, bytes, where it should live, capacity in bytes)

    @property
    def registers(self) -> int:
        """Vector registers the micro-kernel needs: the block of C, one row of B, one broadcast of A."""
        lanes = max(1, vector_bits() // 32) if vector_bits() else 16
        per_row = -(-self.NR // lanes)
        return self.MR * per_row + per_row + 1


def working_sets(MR, NR, MC, KC, NC, caches: dict | None = None) -> tuple:
    caches = caches if caches is not None else cache_sizes()
    f = FLOAT_BYTES
    return (("C block MR x NR", MR * NR * f, "registers", VECTOR_REGISTERS * 64),
            ("B micro-panel KC x NR", KC * NR * f, "L1", caches.get("L1")),
            ("A block MC x KC", MC * KC * f, "L2", caches.get("L2")),
            ("B panel KC x NC", KC * NC * f, "L3", caches.get("L3")))


@functools.lru_cache(maxsize=8)
def _openblas_gflops(size: int) -> float:
    """OpenBLAS's side of the comparison: the sliders do not change it, so it is timed once per size."""
    return time_openblas(size, n_repeat=5).gflops(size, size, size)


def run_blocks(MR: int = 4, NR: int = 64, MC: int = 128, KC: int = 256, NC: int = 1024,
               size: int | None = PANEL_SIZE) -> BlockResult:
    """Checks the sizes, compiles cache_block for them, verifies it on PANEL_SHAPE (fresh random
    data), counts its FMA instructions and, unless size is None, times it and OpenBLAS (one
    thread) at size^3. Never raises for bad sizes: the result holds the message."""
    base = dict(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC, size=size or 0)
    try:
        check_block_sizes(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC)
    except ValueError as e:
        return BlockResult(**base, error=str(e))
    params = dict(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC)
    c = check("cache_block", PANEL_SHAPE, **params)
    out = dict(base, ok=c.ok, verdict=c.details(), fma=fma_instructions("cache_block", **params),
               working_sets=working_sets(MR, NR, MC, KC, NC))
    if size and c.ok:
        out.update(gflops=time_version("cache_block", size, n_repeat=3, **params).gflops(size, size, size),
                   openblas_gflops=_openblas_gflops(size))
    return BlockResult(**out)


def describe_blocks(r: BlockResult) -> str:
    head = f"cache_block with MR={r.MR}, NR={r.NR}, MC={r.MC}, KC={r.KC}, NC={r.NC}"
    if r.error:
        return f"{head}: not a valid set of block sizes.\n{r.error}"
    lines = [head, f"Correctness on {r.verdict}"]
    f = r.fma
    lines.append(f"FMA instructions in the compiled code: {f['512-bit']} 512-bit, {f['256-bit']} 256-bit, "
                 f"{f['128-bit']} 128-bit, {f['scalar']} scalar; {f['on the stack']} read their accumulator "
                 f"from the stack (a block of C left in memory).")
    lines.append(f"Vector registers the micro-kernel needs: {r.registers} of {VECTOR_REGISTERS}.")
    for what, nbytes, where, cap in r.working_sets:
        if where == "registers":
            continue
        fit = "" if not cap else f" of {kib(cap)} ({100 * nbytes / cap:.0f}%)"
        lines.append(f"{what}: {kib(nbytes)}{fit}, meant for {where}.")
    if r.gflops is not None:
        lines.append(f"At {r.size}³: {r.gflops:.1f} GFLOP/s; OpenBLAS (one thread) {r.openblas_gflops:.1f} GFLOP/s "
                     f"= {100 * r.gflops / r.openblas_gflops:.0f}% (timings on a shared machine move by 10-20%).")
    return "\n".join(lines)


def draw_blocks(r: BlockResult):
    """Two panels: how full each level is with its block (registers by count), and GFLOP/s against
    OpenBLAS. None for invalid sizes."""
    if r.error:
        return None
    import matplotlib.pyplot as plt
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1.6, 1]})
    labels = [f"C block: {r.registers} vector registers"]
    fills = [r.registers / VECTOR_REGISTERS]
    for what, nbytes, where, cap in r.working_sets[1:]:
        labels.append(f"{what} ({kib(nbytes)}) in {where}")
        fills.append(nbytes / cap if cap else float("nan"))
    colors = ["#e6550d" if v > 1 else "#31a354" for v in fills]
    ax0.barh(range(len(fills)), [100 * v for v in fills], color=colors)
    ax0.axvline(100, color="black", linewidth=1)
    ax0.set_yticks(range(len(fills)), labels, fontsize=8)
    ax0.invert_yaxis()
    ax0.set_xlabel("% of the level's capacity (red: does not fit)")
    ax0.set_xlim(0, max(110, 100 * max(v for v in fills if v == v) * 1.1))
    if r.gflops is not None:
        ax1.bar([0, 1], [r.gflops, r.openblas_gflops], color=[VERSION_COLORS["cache_block"], VERSION_COLORS["openblas"]])
        ax1.set_xticks([0, 1], ["cache_block", "OpenBLAS"])
        for x, y in enumerate([r.gflops, r.openblas_gflops]):
            ax1.annotate(f"{y:.1f}", (x, y), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8)
        ax1.set_ylabel(f"GFLOP/s at {r.size}³")
    else:
        ax1.text(0.5, 0.5, "not timed", ha="center", va="center", transform=ax1.transAxes)
        ax1.set_axis_off()
    status = "correct" if r.ok else "WRONG"
    fig.suptitle(f"cache_block MR={r.MR} NR={r.NR} MC={r.MC} KC={r.KC} NC={r.NC}: {status}", fontsize=10)
    fig.tight_layout()
    return fig


def blocks_panel(size: int = PANEL_SIZE):
    """Sliders for MR, NR, MC, KC, NC joined to run_blocks / describe_blocks / draw_blocks."""
    import ipywidgets as w
    d = version("cache_block").params
    sliders = {k: w.SelectionSlider(options=PANEL_CHOICES[k], value=d[k], description=k, continuous_update=False)
               for k in ("MR", "NR", "MC", "KC", "NC")}

    out = interactive_output(lambda MR, NR, MC, KC, NC: run_blocks(MR, NR, MC, KC, NC, size),
                             describe_blocks, draw_blocks, sliders)
    return w.VBox([w.HBox(list(sliders.values())[:3]), w.HBox(list(sliders.values())[3:]), out])

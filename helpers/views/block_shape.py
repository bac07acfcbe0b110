"""Stage 02's block-shape panel: a slider each for block_x and block_y (powers of two) and a kernel chooser; each
shape is checked, verified, traced (which warp stores each element of C, the sectors of warp 0's requests)
and on a GPU timed. Its run, describe and draw functions are plain functions that tests call."""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.core import stages
from helpers.core.arch import WARP_SIZE
from helpers.measure import accesses, bench, verify
from helpers.measure.accesses import TRACE_SIZE
from helpers.run import backend
from helpers.views.panels import POWERS_OF_TWO, TIME_SIZE, interactive_output


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

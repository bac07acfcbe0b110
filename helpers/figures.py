"""The course's figures, and the address model they draw.

Every figure is a file `figures/NN_<slug>_<what>.svg` made by one function registered in
FIGURES; `python -m helpers.figures` regenerates them all (`--check` says which are stale).
The SVGs are deterministic (no date, fixed ids, text kept as text), so regenerating an
unchanged figure leaves git with nothing to commit.

The address model says which elements of A, B and C the 32 lanes of one warp touch at one step
of a kernel's k loop, and how many 32-byte sectors and 128-byte lines that is. It mirrors the
index lines of the stage 02 kernels (see THREAD_TO_ELEMENT); the figure, the sector table of
notebook 02, the block-shape widget and an exercise all read it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
FIGURES_DIR = ROOT / "figures"

WARP_SIZE = 32
SECTOR_BYTES = 32          # the unit in which L1 and L2 move global memory
LINE_BYTES = 128           # a cache line: four sectors
FLOAT_BYTES = 4


# ---- the address model ---------------------------------------------------------------------
def _naive_rc(bid, bdim, tid):
    """02_naive: row = blockIdx.x * blockDim.x + threadIdx.x, col = blockIdx.y * blockDim.y + threadIdx.y."""
    return bid[0] * bdim[0] + tid[0], bid[1] * bdim[1] + tid[1]


def _coalesced_rc(bid, bdim, tid):
    """02_naive_coalesced: col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y."""
    return bid[1] * bdim[1] + tid[1], bid[0] * bdim[0] + tid[0]


# (blockIdx, blockDim, threadIdx) -> (row, col) of C, for every kernel the model knows.
THREAD_TO_ELEMENT: dict[str, Callable] = {
    "02_naive": _naive_rc,
    "02_naive_coalesced": _coalesced_rc,
}


@dataclass(frozen=True)
class Access:
    """One warp-wide memory instruction: the element offsets its active lanes use."""
    matrix: str            # "A", "B" or "C"
    op: str                # "load" or "store"
    offsets: tuple[int, ...]

    @property
    def lanes(self) -> int:
        return len(self.offsets)

    @property
    def distinct(self) -> int:
        return len(set(self.offsets))

    @property
    def sectors(self) -> int:
        """32-byte sectors touched (the matrix starts 256-byte aligned, as cudaMalloc's do)."""
        return len({o * FLOAT_BYTES // SECTOR_BYTES for o in self.offsets})

    @property
    def lines(self) -> int:
        return len({o * FLOAT_BYTES // LINE_BYTES for o in self.offsets})

    @property
    def bytes_moved(self) -> int:
        return self.sectors * SECTOR_BYTES

    @property
    def bytes_used(self) -> int:
        return self.distinct * FLOAT_BYTES


@dataclass(frozen=True)
class WarpAccesses:
    """What one warp of one block does at step k of the loop: elements of C, then A, B, C accesses."""
    variant: str
    block: tuple[int, int]
    M: int
    N: int
    K: int
    warp: int
    k: int
    elements: tuple[tuple[int, int], ...]    # (row, col) of C for each active lane, lane order
    lane_ids: tuple[int, ...]

    @property
    def accesses(self) -> tuple[Access, Access, Access]:
        rows = [r for r, _ in self.elements]
        cols = [c for _, c in self.elements]
        return (Access("A", "load", tuple(r * self.K + self.k for r in rows)),
                Access("B", "load", tuple(self.k * self.N + c for c in cols)),
                Access("C", "store", tuple(r * self.N + c for r, c in self.elements)))

    def access(self, matrix: str) -> Access:
        return {a.matrix: a for a in self.accesses}[matrix]


def warp_accesses(variant: str, block_x: int = 32, block_y: int = 32, M: int = 4096, N: int = 4096,
                  K: int = 4096, warp: int = 0, k: int = 0, block_idx: tuple[int, int] = (0, 0)) -> WarpAccesses:
    """Lanes of warp `warp` of block `block_idx` (threadIdx.x fastest, as CUDA numbers them):
    the elements of C they compute and what they touch at step k. Lanes that fail the
    kernel's bounds check (row < M && col < N) touch nothing and are left out."""
    if variant not in THREAD_TO_ELEMENT:
        raise KeyError(f"the address model knows {', '.join(THREAD_TO_ELEMENT)}, not {variant!r}")
    to_rc = THREAD_TO_ELEMENT[variant]
    threads = block_x * block_y
    if not 0 <= warp * WARP_SIZE < threads:
        raise ValueError(f"a block of {block_x} x {block_y} threads has {-(-threads // WARP_SIZE)} warps; "
                         f"there is no warp {warp}.")
    elements, lanes = [], []
    for lane in range(WARP_SIZE):
        t = warp * WARP_SIZE + lane
        if t >= threads:
            break
        row, col = to_rc(block_idx, (block_x, block_y), (t % block_x, t // block_x))
        if row < M and col < N:
            elements.append((row, col))
            lanes.append(lane)
    return WarpAccesses(variant, (block_x, block_y), M, N, K, warp, k, tuple(elements), tuple(lanes))


def sector_table(variants=("02_naive", "02_naive_coalesced"), block_x: int = 32, block_y: int = 32,
                 M: int = 4096, N: int = 4096, K: int = 4096) -> str:
    """A plain-text table of what warp 0 of block (0, 0) touches at one step k, per kernel:
    the same on every backend (it is arithmetic on indices, not a measurement)."""
    head = (f"Warp 0 of block (0, 0), block {block_x} x {block_y}, M = {M}, N = {N}, K = {K}, one step of the k loop\n"
            f"{'kernel':<20} {'access':<8} {'lanes':>5} {'addresses':>9} {'sectors':>7} {'lines':>5} "
            f"{'bytes moved':>11} {'bytes used':>10}")
    out = [head]
    for v in variants:
        w = warp_accesses(v, block_x, block_y, M, N, K)
        for i, a in enumerate(w.accesses):
            name = v if i == 0 else ""
            out.append(f"{name:<20} {a.op + ' ' + a.matrix:<8} {a.lanes:>5} {a.distinct:>9} {a.sectors:>7} "
                       f"{a.lines:>5} {a.bytes_moved:>11} {a.bytes_used:>10}")
        total = sum(a.sectors for a in w.accesses)
        out.append(f"{'':<20} {'total':<8} {'':>5} {'':>9} {total:>7}")
    return "\n".join(out)


# ---- plotting style -------------------------------------------------------------------------
SVG_RC = {"svg.hashsalt": "tile-by-tile", "svg.fonttype": "none", "font.size": 10,
          "font.family": "DejaVu Sans", "axes.titlesize": 10.5}
VARIANT_COLORS = {"cublas_sgemm": "#444444", "02_naive": "#d95f02", "02_naive_coalesced": "#1b9e77"}
LANE_CMAP = "viridis"
SECTOR_FILL = "#fde0c5"


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def _draw_matrix(ax, rows: int, cols: int, touched_offsets, lane_of_offset: dict, title: str,
                 xlabel: str, ylabel: str, cmap, broadcast_note: str | None = None):
    """A rows x cols row-major matrix: thin cell grid, sector boundaries every 8 floats,
    touched sectors shaded, the elements the lanes use coloured by lane."""
    from matplotlib.patches import Rectangle
    per_sector = SECTOR_BYTES // FLOAT_BYTES
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    for o in sorted({o // per_sector for o in touched_offsets}):   # shaded sectors
        start = o * per_sector
        r, c = divmod(start, cols)
        ax.add_patch(Rectangle((c, r), min(per_sector, cols - c), 1, facecolor=SECTOR_FILL,
                               edgecolor="#e6550d", linewidth=0.8, zorder=1))
    for o, lane in lane_of_offset.items():
        r, c = divmod(o, cols)
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=cmap(lane / (WARP_SIZE - 1)), edgecolor="none", zorder=2))
    for x in range(cols + 1):
        strong = x % per_sector == 0
        ax.axvline(x, color="#888888" if strong else "#dddddd", linewidth=0.6 if strong else 0.3, zorder=0)
    for y in range(rows + 1):
        ax.axhline(y, color="#dddddd", linewidth=0.3, zorder=0)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ticks = list(range(0, cols + 1, 8))
    ax.set_xticks([t + 0.5 for t in ticks if t < cols], [str(t) for t in ticks if t < cols])
    ax.set_yticks([t + 0.5 for t in range(0, rows, 8)], [str(t) for t in range(0, rows, 8)])
    ax.tick_params(length=0, labelsize=8)
    for s in ax.spines.values():
        s.set_color("#888888")
    if broadcast_note:
        (o, _), = lane_of_offset.items()
        r, c = divmod(o, cols)
        ax.annotate(broadcast_note, xy=(c + 1, r + 0.5), xytext=(c + 7, r + 9), fontsize=9,
                    arrowprops={"arrowstyle": "->", "color": "#333333"}, zorder=3,
                    bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "#999999"})


def draw_02_naive_mapping(path: Path) -> Path:
    """figures/02_naive_mapping.svg: for both stage 02 kernels, which element of C each lane of
    warp 0 computes, and which elements and 32-byte sectors of A, B and C the warp touches at
    step k = 0, on a 32 x 32 x 32 problem with 32 x 32 blocks."""
    import matplotlib
    import matplotlib.pyplot as plt
    n = 32
    variants = (("02_naive", "02_naive: threadIdx.x picks the row"),
                ("02_naive_coalesced", "02_naive_coalesced: threadIdx.x picks the column"))
    with matplotlib.rc_context(SVG_RC):
        cmap = matplotlib.colormaps[LANE_CMAP]
        fig, axes = plt.subplots(2, 3, figsize=(12, 8.0), gridspec_kw={"hspace": 0.34, "wspace": 0.38})
        for (v, heading), row_axes in zip(variants, axes):
            w = warp_accesses(v, 32, 32, n, n, n, warp=0, k=0)
            for ax, a in zip(row_axes, w.accesses):
                lanes_at = {}
                for i, o in enumerate(a.offsets):
                    lanes_at.setdefault(o, w.lane_ids[i])
                note = "all 32 lanes read\nthis one float:\none broadcast" if a.distinct == 1 else None
                what = {"A": ("load A[row][k]", "k", "row"), "B": ("load B[k][col]", "col", "k"),
                        "C": ("store C[row][col]", "col", "row")}[a.matrix]
                _draw_matrix(ax, n, n, a.offsets, lanes_at,
                             f"{what[0]}\n{a.sectors} sector{'s' if a.sectors > 1 else ''}: "
                             f"{a.bytes_moved} B moved, {a.bytes_used} B used",
                             what[1], what[2], cmap, note)
            row_axes[0].annotate(heading, xy=(0, 1.22), xycoords="axes fraction", fontsize=12,
                                 fontweight="bold", ha="left", va="bottom")
        sm = matplotlib.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(0, WARP_SIZE - 1))
        # 32 discrete bands: few enough that matplotlib keeps the colour bar as vector shapes
        bar = fig.colorbar(sm, ax=axes, shrink=0.6, pad=0.035, ticks=[0, 8, 16, 24, 31],
                           boundaries=[i - 0.5 for i in range(WARP_SIZE + 1)])
        bar.set_label("lane of warp 0 (threadIdx.x)")
        fig.text(0.125, 0.03,
                 "32 x 32 x 32 problem, block 32 x 32, warp 0 of block (0, 0), step k = 0 of the loop.  "
                 "Coloured cell: the float a lane uses.\nShaded box: a 32-byte sector the warp touches "
                 "(8 floats; dark vertical lines mark sector boundaries, four sectors make a 128-byte line).",
                 fontsize=9, va="top")
        return _save(fig, path)


# name -> function(path) that writes figures/<name>.svg
FIGURES: dict[str, Callable[[Path], Path]] = {
    "02_naive_mapping": draw_02_naive_mapping,
}


def figure_path(name: str) -> Path:
    return FIGURES_DIR / f"{name}.svg"


def generate(names=None, directory: Path = FIGURES_DIR) -> list[Path]:
    """Writes the named figures (all by default) into `directory`."""
    names = list(names or FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise KeyError(f"no figure {', '.join(unknown)}; figures are {', '.join(FIGURES)}")
    return [FIGURES[n](Path(directory) / f"{n}.svg") for n in names]


def stale(names=None) -> list[str]:
    """Figures whose committed file is missing or differs from a fresh rendering."""
    names = list(names or FIGURES)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = dict(zip(names, generate(names, Path(tmp))))
        return [n for n in names if not figure_path(n).exists()
                or figure_path(n).read_bytes() != fresh[n].read_bytes()]


# ---- live plots (drawn in a notebook, never saved) -----------------------------------------
def plot_throughput(rows, title: str = "", ax=None):
    """GFLOP/s against size for each kernel in `rows` (dicts with variant, M, N, K, tflops),
    one line per kernel, log-2 size axis. Returns the figure."""
    import matplotlib.pyplot as plt
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4))
    else:
        fig = ax.figure
    by_variant: dict[str, list] = {}
    for r in rows:
        by_variant.setdefault(r["variant"], []).append(r)
    for v, rs in by_variant.items():
        rs = sorted(rs, key=lambda r: r["M"] * r["N"] * r["K"])
        sizes = [round((r["M"] * r["N"] * r["K"]) ** (1 / 3)) for r in rs]
        ax.plot(sizes, [r["tflops"] * 1e3 for r in rs], marker="o", label=v,
                color=VARIANT_COLORS.get(v))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s (2MNK / median time)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers.figures", description="Regenerate the course's figures.")
    p.add_argument("names", nargs="*", help=f"figures to make (default all: {', '.join(FIGURES)})")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a figure is missing or stale")
    args = p.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    if args.check:
        bad = stale(args.names)
        for n in bad:
            print(f"stale or missing: {figure_path(n).relative_to(ROOT)}")
        print("all figures up to date" if not bad else "run `python -m helpers.figures` to regenerate")
        return 1 if bad else 0
    for path in generate(args.names):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

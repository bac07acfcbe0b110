"""The course's figures, and the trace-derived views they draw.

Every picture and table here is read from a memory trace of the kernel file itself
(helpers.trace: the CPU emulator records every shared and global access of sample blocks, on
every machine) and counted by helpers.memory (warp requests, sectors, banks). Nothing here
repeats a kernel's index arithmetic: edit kernels/02_naive.cu and the sector table, the mapping
figure and the block-shape widget follow the edit. Traces do not depend on the data or the
backend, so every count is the same on every machine.

Figures are files `figures/NN_<slug>_<what>.svg`, each made by one function registered in
FIGURES; `python -m helpers figures` regenerates them all (`--check` says which are stale). The
SVGs are deterministic (no date, fixed ids, text kept as text, no raster images), so
regenerating an unchanged figure leaves git with nothing to commit.

Views for the notebooks (text for checked cells, figures for the rest):
  sector_table()          global requests of warp 0 of the stage 02 kernels: sectors each
  warp_accesses(trace)    the same for any trace, as data
  bank_summary(trace)     shared requests of warp 0: words, banks, ways, wavefronts
  per_line_view(trace)    the kernel's source with shared and global totals beside each line
  reuse_table()           global loads per element of A and B: 02_naive_coalesced vs 03_smem_tiling
  plot_bank_grid(request) one shared request as a lane x bank grid
  plot_sectors(trace)     sectors per request per source line, with the ideal beside
"""

from __future__ import annotations

from helpers.core.arch import BANK_BYTES, BANKS, FLOAT_BYTES, SECTOR_BYTES, WARP_SIZE
from helpers.views.style import SVG_RC, save_svg

from pathlib import Path

import numpy as np

from helpers.measure import memory
from helpers.core import stages
from helpers.measure import trace as trace_mod
from helpers.measure.accesses import REUSE_CASES, reuse_case, group_requests, short_number, ranges_text, trace_requests, access, array_origin, global_load_counts, kernel_trace, shared_requests, stage02_trace, warp_accesses
from helpers.views.style import CONFLICT_COLOR, LANE_CMAP, SECTOR_FILL, VARIANT_COLORS



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


# ---- live plots (drawn in a notebook from a trace) ---------------------------------------------
def plot_bank_grid(request: memory.Request, ax=None, origin: int | None = None, title: str | None = None):
    """One warp's shared request as a lane x bank grid: a row per lane, a column per bank, each
    lane's word marked in its bank (same colour and number: the same word, served by one
    broadcast), lanes that share a bank with a different word outlined in red. `origin`: the byte
    offset of the array's start (bank_view(trace, request).origin), so words and banks count from
    there; None counts from the start of the traced shared memory. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    report = memory.banks(request)
    relative = origin is not None
    origin = origin or 0
    words_per_lane = max(1, request.size // BANK_BYTES)
    first = (request.offsets - origin) // BANK_BYTES
    words = first[:, None] + np.arange(words_per_lane)[None, :]
    distinct = np.unique(words)
    rank = {int(w): i for i, w in enumerate(distinct)}
    cmap = plt.get_cmap("YlGnBu")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 6.0))
    else:
        fig = ax.figure
    ax.set_xlim(0, BANKS)
    ax.set_ylim(WARP_SIZE + 1.6, 0)
    active = set(int(x) for x in request.lanes)
    for lane in range(WARP_SIZE):
        if lane not in active:
            ax.add_patch(Rectangle((0, lane), BANKS, 1, facecolor="#eeeeee", edgecolor="none", zorder=0))
    conflicted = {int(x) for x in request.lanes[report.conflicted]}
    label = len(request.lanes) * words_per_lane <= 160
    for i, lane in enumerate(request.lanes):
        for w in words[i]:
            bank = int(w) % BANKS
            shade = 0.25 + 0.6 * (rank[int(w)] / max(1, len(distinct) - 1))
            bad = int(lane) in conflicted
            ax.add_patch(Rectangle((bank, int(lane)), 1, 1, facecolor=cmap(shade), zorder=2,
                                   edgecolor=CONFLICT_COLOR if bad else "white", linewidth=1.4 if bad else 0.3))
            if label:
                ax.text(bank + 0.5, int(lane) + 0.55, str(int(w)), ha="center", va="center", fontsize=4.6,
                        color="black" if shade < 0.6 else "white", zorder=3)
    per_bank = np.bincount(distinct % BANKS, minlength=BANKS)
    for bank, n in enumerate(per_bank):
        if n:
            ax.text(bank + 0.5, WARP_SIZE + 0.9, str(int(n)), ha="center", va="center", fontsize=6.5,
                    color=CONFLICT_COLOR if n > 1 else "#333333")
    ax.axhline(WARP_SIZE, color="#888888", linewidth=0.6)
    phase = 32 if request.size <= 4 else 16 if request.size == 8 else 8
    for y in range(phase, WARP_SIZE, phase):
        ax.axhline(y, color="#333333", linewidth=1.0, linestyle="--")
    for x in range(BANKS + 1):
        ax.axvline(x, color="#e5e5e5", linewidth=0.3, zorder=1)
    ax.set_xticks([b + 0.5 for b in range(0, BANKS, 4)], [str(b) for b in range(0, BANKS, 4)])
    ax.set_yticks([y + 0.5 for y in range(0, WARP_SIZE, 4)] + [WARP_SIZE + 0.9],
                  [str(y) for y in range(0, WARP_SIZE, 4)] + ["words"])
    ax.tick_params(length=0, labelsize=7.5)
    ax.set_xlabel(f"bank (word mod 32; words of {request.array} counted from its start)" if relative
                  else "bank (word mod 32; words counted from the start of shared memory)", fontsize=8.5)
    ax.set_ylabel("lane", fontsize=8.5)
    what = "no conflict" if report.ways == 1 else f"{report.ways}-way conflict"
    broadcast = ", broadcast" if distinct.size < len(request.lanes) * words_per_lane else ""
    ax.set_title(title or (f"{request.op} {request.array} (line {request.line}), warp {request.warp}\n"
                           f"{distinct.size} word{'s' if distinct.size > 1 else ''} in "
                           f"{int(np.count_nonzero(per_bank))} bank{'s' if np.count_nonzero(per_bank) > 1 else ''}"
                           f"{broadcast}: {what}, {report.wavefronts} wavefront{'s' if report.wavefronts > 1 else ''}"
                           f" (ideal {report.ideal})"), fontsize=9)
    for s in ax.spines.values():
        s.set_color("#888888")
    return fig


def plot_bank_grids(tr: trace_mod.Trace, warp: int = 0, block: int | None = None, axes=None):
    """plot_bank_grid for the first shared load of each (line, array) of warp `warp`: one step of
    the inner loop. Returns the figure (None if the kernel loads nothing from shared memory)."""
    import matplotlib.pyplot as plt
    reqs = shared_requests(tr, warp, block)
    if not reqs:
        return None
    if axes is None:
        fig, axes = plt.subplots(1, len(reqs), figsize=(5.6 * len(reqs), 6.0), squeeze=False)
        axes = axes[0]
    for ax, q in zip(axes, reqs):
        plot_bank_grid(q, ax, array_origin(tr, q))
    fig = axes[0].figure
    fig.suptitle(f"{tr.kernel}: warp {warp}'s shared loads, first step of the loop", fontsize=10.5)
    return fig


def plot_sectors(tr: trace_mod.Trace, ax=None, warp: int | None = None):
    """Sectors per global request for each (source line, operation, array) of the traced blocks
    (one warp with `warp`), beside the fewest the requests' bytes could fit in. Returns the figure."""
    import matplotlib.pyplot as plt
    groups = group_requests(trace_requests(tr, warp, None, "global"))
    labels, got, ideal = [], [], []
    for (line, op, array), qs in groups.items():
        s = np.array([memory.sectors(q) for q in qs], dtype=float)
        labels.append(f"line {line}\n{op} {array}")
        got.append(s[:, 0].mean())
        ideal.append(s[:, 1].mean())
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(labels) + 1.5), 3.8))
    else:
        fig = ax.figure
    x = np.arange(len(labels))
    ax.bar(x - 0.2, got, 0.4, label="this kernel", color="#d95f02")
    ax.bar(x + 0.2, ideal, 0.4, label="ideal: the same bytes, packed", color="#1b9e77")
    top = max(got + ideal + [1])
    for xi, g, i in zip(x, got, ideal):
        ax.text(xi - 0.2, g + top * 0.02, short_number(g), ha="center", fontsize=8)
        ax.text(xi + 0.2, i + top * 0.02, short_number(i), ha="center", fontsize=8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylim(0, top * 1.3)
    ax.set_ylabel("32-byte sectors per warp request")
    who = f"warp {warp}" if warp is not None else f"all warps of block{'s' if len(tr.blocks) > 1 else ''} " \
                                                   f"{', '.join(map(str, tr.blocks))}"
    ax.set_title(f"{tr.kernel}: sectors per request ({who})", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def _runs(counts: np.ndarray):
    """(row, first column, length, value) of each run of equal values along the rows."""
    for r, row in enumerate(counts):
        c = 0
        while c < row.size:
            e = c
            while e + 1 < row.size and row[e + 1] == row[c]:
                e += 1
            yield r, c, e - c + 1, int(row[c])
            c = e + 1


def _count_color(n: int, vmax: int):
    import matplotlib
    if n == 0:
        return "white"
    if n == 1:
        return "#a1d99b"
    return matplotlib.colormaps["Purples"](0.35 + 0.6 * (n - 1) / max(1, vmax - 1))


def plot_reuse(cases=REUSE_CASES, M: int = 32, N: int | None = None, K: int | None = None):
    """For block 0 of each kernel: how many times its threads load each element of A and of B
    (the block's panels), counted from traces. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    N = M if N is None else N
    K = M if K is None else K
    data = []
    for name, fields in cases:
        v, config = reuse_case(name, fields)
        tr = kernel_trace(v, config, M, N, K)
        data.append((v, config, tr, global_load_counts(tr, "A", M, K), global_load_counts(tr, "B", K, N)))
    vmax = max(int(max(a.max(), b.max())) for *_, a, b in data)
    fig, axes = plt.subplots(len(data), 2, figsize=(10, 3.9 * len(data)), squeeze=False,
                             gridspec_kw={"width_ratios": [2.0, 1], "hspace": 0.6, "wspace": 0.15})
    for (v, config, tr, a, b), (axa, axb) in zip(data, axes):
        for ax, counts, what, xl, yl in ((axa, a, "A", "k", "row of A"), (axb, b, "B", "column of B", "k")):
            used = np.argwhere(counts > 0)
            (r0, c0), (r1, c1) = used.min(axis=0), used.max(axis=0)
            sub = counts[r0:r1 + 1, c0:c1 + 1]
            patches, colors = [], []
            for r, c, n, value in _runs(sub):   # one rectangle per run of equal counts: a small SVG
                patches.append(Rectangle((c0 + c, r0 + r), n, 1))
                colors.append(_count_color(value, vmax))
            ax.add_collection(PatchCollection(patches, facecolors=colors, edgecolors="none"))
            for x in range(c0, c1 + 2):
                ax.axvline(x, color="white", linewidth=0.4)
            for y in range(r0, r1 + 2):
                ax.axhline(y, color="white", linewidth=0.4)
            ax.set_xlim(c0, c1 + 1)
            ax.set_ylim(r1 + 1, r0)
            ax.set_aspect("equal")
            ax.set_xlabel(xl, fontsize=8.5)
            ax.set_ylabel(yl, fontsize=8.5)
            ax.tick_params(labelsize=7.5)
            values = np.unique(sub[sub > 0])
            per = counts.sum() / max(1, np.count_nonzero(counts))
            ax.text((c0 + c1 + 1) / 2, (r0 + r1 + 1) / 2, f"{short_number(per)}x" if values.size == 1 else f"{short_number(per)}x\n(mean)",
                    ha="center", va="center", fontsize=18, fontweight="bold", color="black",
                    bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
            ax.set_title(f"{what}: {np.count_nonzero(counts)} elements, {int(counts.sum())} loads\n"
                         f"each loaded {short_number(per)} time{'s' if per != 1 else ''}", fontsize=9.5)
        axa.annotate(f"{v.name} ({config.label()}), block 0: {tr.threads_per_block} threads",
                     xy=(0, 1.3), xycoords="axes fraction", fontsize=11, fontweight="bold", ha="left")
    fig.text(0.125, 0.04, f"M = {M}, N = {N}, K = {K}; global loads counted from memory traces of the kernel files "
                          f"(helpers.trace).\nOnly the block's panels are drawn: the rows of A and the columns of B "
                          f"it uses. Purple: loaded {vmax} times; green: once.", fontsize=8.5, va="top")
    return fig


# ---- the committed figures ---------------------------------------------------------------------
def draw_02_naive_mapping(path: Path) -> Path:
    """figures/02_naive_mapping.svg: for both stage 02 kernels, traced on a 32 x 32 x 32 problem
    with 32 x 32 blocks: which element of C each lane of warp 0 stores, and which elements and
    32-byte sectors of A and B the warp's first load of each touches (step k = 0)."""
    import matplotlib
    import matplotlib.pyplot as plt
    n = 32
    variants = (("02_naive", "02_naive: threadIdx.x picks the row"),
                ("02_naive_coalesced", "02_naive_coalesced: threadIdx.x picks the column"))
    with matplotlib.rc_context(SVG_RC):
        cmap = matplotlib.colormaps[LANE_CMAP]
        fig, axes = plt.subplots(2, 3, figsize=(12, 8.0), gridspec_kw={"hspace": 0.34, "wspace": 0.38})
        for (v, heading), row_axes in zip(variants, axes):
            accesses = warp_accesses(stage02_trace(v, 32, 32, n, n, n))
            picks = (access(accesses, "load", "A"), access(accesses, "load", "B"), access(accesses, "store", "C"))
            for ax, a, what in zip(row_axes, picks, (("load A[row][k]", "k", "row"), ("load B[k][col]", "col", "k"),
                                                     ("store C[row][col]", "col", "row"))):
                lanes_at: dict[int, int] = {}
                for lane, e in zip(a.lanes, a.elements):
                    lanes_at.setdefault(e, lane)
                sectors = a.first_sectors
                note = "all 32 lanes read\nthis one float:\none broadcast" if len(lanes_at) == 1 else None
                _draw_matrix(ax, n, n, a.elements, lanes_at,
                             f"{what[0]}, line {a.line}\n{sectors} sector{'s' if sectors > 1 else ''}: "
                             f"{sectors * SECTOR_BYTES} B moved, {len(lanes_at) * FLOAT_BYTES} B used",
                             what[1], what[2], cmap, note)
            row_axes[0].annotate(heading, xy=(0, 1.22), xycoords="axes fraction", fontsize=12,
                                 fontweight="bold", ha="left", va="bottom")
        sm = matplotlib.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(0, WARP_SIZE - 1))
        # 32 discrete bands: few enough that matplotlib keeps the colour bar as vector shapes
        bar = fig.colorbar(sm, ax=axes, shrink=0.6, pad=0.035, ticks=[0, 8, 16, 24, 31],
                           boundaries=[i - 0.5 for i in range(WARP_SIZE + 1)])
        bar.set_label("lane of warp 0 (threadIdx.x)")
        fig.text(0.125, 0.03,
                 "Traced from kernels/02_naive.cu and kernels/02_naive_coalesced.cu: 32 x 32 x 32 problem, block 32 x 32, "
                 "warp 0 of block 0, its first request of each.\nColoured cell: the float a lane uses.  Shaded box: a "
                 "32-byte sector the warp touches (8 floats; dark vertical lines mark sector boundaries).",
                 fontsize=9, va="top")
        return save_svg(fig, path)


def draw_03_bank_grid(path: Path) -> Path:
    """figures/03_smem_tiling_bank_grid.svg: warp 0's loads of As and Bs at the first step of the
    inner loop of 03_smem_tiling, tile 32 and tile 16, traced on a 64 x 64 x 64 problem."""
    import matplotlib
    import matplotlib.pyplot as plt
    v = stages.variant("03_smem_tiling")
    with matplotlib.rc_context(SVG_RC):
        fig, axes = plt.subplots(2, 2, figsize=(11.5, 13.2), gridspec_kw={"hspace": 0.42, "wspace": 0.22})
        for tile, row_axes in zip((32, 16), axes):
            tr = kernel_trace(v, v.config(tile=tile))
            reqs = shared_requests(tr)
            for ax, q in zip(row_axes, reqs):
                plot_bank_grid(q, ax, array_origin(tr, q))
            rows = max(1, WARP_SIZE // tile)
            row_axes[0].annotate(f"tile = {tile}: warp 0 is threadIdx.y = {ranges_text(range(rows))} "
                                 f"({rows} row{'s' if rows > 1 else ''} of the tile)",
                                 xy=(0, 1.13), xycoords="axes fraction", fontsize=12, fontweight="bold", ha="left")
        fig.text(0.125, 0.075, "Traced from kernels/03_smem_tiling.cu (64 x 64 x 64 problem, block 0, warp 0, k = 0). "
                               "Row: a lane; column: a bank. The number is the word of the array the lane reads;\n"
                               "lanes reading the same word are served together (a broadcast). Red outline: a lane whose "
                               "bank also holds a different word (a conflict; none here). Bottom row: words per bank.",
                 fontsize=8.5, va="top")
        return save_svg(fig, path)


def draw_03_reuse(path: Path) -> Path:
    """figures/03_smem_tiling_reuse.svg: global loads per element of A and B by block 0 of
    02_naive_coalesced (16 x 16 block) and 03_smem_tiling (tile 16), traced on 32 x 32 x 32."""
    import matplotlib
    with matplotlib.rc_context(SVG_RC):
        return save_svg(plot_reuse(), path)



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


"""Stage 01's figures: every version against OpenBLAS (bars), the CPU roofline, and the
cache-blocking schematic; draw_figures writes the committed figures/01_cpu_loop_blocking_*.svg.
matplotlib is imported when a figure is drawn, not with the package."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.core.arch import FLOAT_BYTES
from helpers.core.paths import FIGURES_DIR
from helpers.course.cpu_gemm.results import load_results, results_label
from helpers.course.cpu_gemm.versions import VERSIONS, version

VERSION_COLORS = {"naive_ijk": "#d95f02", "loop_order_ikj": "#7570b3", "unroll_k4": "#e7298a",
                  "register_block": "#66a61e", "cache_block": "#1b9e77", "openblas": "#444444"}
LEVEL_COLORS = {"L1": "#3182bd", "L2": "#6baed6", "DRAM": "#9ecae1"}
SVG_RC = {"svg.hashsalt": "tile-by-tile", "svg.fonttype": "none", "font.size": 9}


def plot_results(data: dict, ax=None):
    """GFLOP/s of every version and OpenBLAS at each committed size (grouped bars), the measured
    FMA peak as a line. Returns the figure."""
    import matplotlib.pyplot as plt
    sizes = sorted({r["M"] for r in data["rows"]})
    names = [v.name for v in VERSIONS] + ["openblas"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4))
    else:
        fig = ax.figure
    width = 0.8 / len(sizes)
    alphas = np.linspace(1.0, 0.4, len(sizes))
    for s_i, n in enumerate(sizes):
        by_name = {r["version"]: r for r in data["rows"] if r["M"] == n}
        xs = [i + (s_i - (len(sizes) - 1) / 2) * width for i in range(len(names))]
        ys = [by_name[nm]["gflops"] if nm in by_name else 0 for nm in names]
        bars = ax.bar(xs, ys, width * 0.95, color=[VERSION_COLORS[nm] for nm in names],
                      alpha=alphas[s_i], edgecolor="black", linewidth=0.4)
        for b, y in zip(bars, ys):
            ax.annotate(f"{y:.0f}" if y >= 10 else f"{y:.1f}", (b.get_x() + b.get_width() / 2, y),
                        xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    from matplotlib.patches import Patch
    ax.legend([Patch(facecolor="gray", alpha=a, edgecolor="black", linewidth=0.4) for a in alphas],
              [f"{n}³" for n in sizes], title="M = N = K (bars left to right)", fontsize=8, loc="upper left")
    peak = data["ceilings"]["fma_peak_gflops"]
    ax.axhline(peak, color="black", linestyle=":", linewidth=1)
    ax.annotate(f"FMA peak, one core: {peak:.0f} GFLOP/s", (len(names) - 0.5, peak), xytext=(0, 3),
                textcoords="offset points", ha="right", fontsize=8)
    ax.set_xticks(range(len(names)), [n.replace("_", "\n", 1) for n in names], fontsize=8)
    ax.set_ylabel("GFLOP/s (one core, float32)")
    ax.set_ylim(0, peak * 1.12)
    ax.set_title("SGEMM on one CPU core: each version and OpenBLAS")
    fig.tight_layout()
    return fig


def plot_roofline(data: dict, size: int = 1024, ax=None):
    """The CPU roofline from a committed benchmark: the FMA peak and the copy bandwidth of L1, L2
    and DRAM as roofs; each version at its intensity (FLOP per byte its inner loop loads and
    stores) and its GFLOP/s at size^3; OpenBLAS as a dashed line. Returns the figure."""
    import matplotlib.pyplot as plt
    c = data["ceilings"]
    peak = c["fma_peak_gflops"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5))
    else:
        fig = ax.figure
    x = np.geomspace(0.05, 20, 300)
    ax.plot(x, np.full_like(x, peak), color="black", linewidth=2)
    ax.annotate(f"FMA peak {peak:.0f} GFLOP/s", (x[-1], peak), xytext=(0, 4), textcoords="offset points",
                ha="right", fontsize=8)
    for level, gbs in c["copy_gbs"].items():
        roof = np.minimum(peak, gbs * x)
        ax.plot(x, roof, color=LEVEL_COLORS.get(level, "gray"), linewidth=1.5)
        x0 = 0.06
        ax.annotate(f"{level} copy {gbs:.0f} GB/s", (x0, gbs * x0), xytext=(2, 4), textcoords="offset points",
                    rotation=0, fontsize=8, color=LEVEL_COLORS.get(level, "gray"))
    rows = {r["version"]: r for r in data["rows"] if r["M"] == size}
    sizes = sorted({r["M"] for r in data["rows"]})
    other = next((n for n in sizes if n != size and abs(n - size) <= size // 8), None)   # e.g. 1000 beside 1024
    others = {r["version"]: r for r in data["rows"] if r["M"] == other}
    offsets = {"naive_ijk": (8, -4), "loop_order_ikj": (-8, 8), "unroll_k4": (8, -14), "register_block": (8, -4),
               "cache_block": (8, -16)}
    for v in VERSIONS:
        r = rows.get(v.name)
        if r is None:
            continue
        xi, color = r["intensity_flop_per_byte"], VERSION_COLORS[v.name]
        ax.plot([xi], [r["gflops"]], "o", color=color, markersize=8)
        if v.name in others:
            ax.plot([xi], [others[v.name]["gflops"]], "o", markerfacecolor="white", color=color, markersize=7)
        dx, dy = offsets.get(v.name, (8, 4))
        ax.annotate(f"{v.name} {r['gflops']:.1f}", (xi, r["gflops"]), xytext=(dx, dy), textcoords="offset points",
                    fontsize=8, color=color, ha="right" if dx < 0 else "left")
    if other:
        ax.plot([], [], "o", color="gray", label=f"{size}³")
        ax.plot([], [], "o", color="gray", markerfacecolor="white", label=f"{other}³")
        ax.legend(loc="lower right", fontsize=8)
    if "openblas" in rows:
        ax.axhline(rows["openblas"]["gflops"], color=VERSION_COLORS["openblas"], linestyle="--", linewidth=1)
        ax.annotate(f"OpenBLAS, one thread: {rows['openblas']['gflops']:.0f} GFLOP/s", (0.06, rows["openblas"]["gflops"]),
                    xytext=(2, -11), textcoords="offset points", fontsize=8, color=VERSION_COLORS["openblas"])
    lowest = min(r["gflops"] for r in data["rows"] if r["M"] in (size, other))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(min(0.3, lowest / 2), peak * 2)
    ax.set_xlabel("FLOP per byte the inner loop loads and stores (model, helpers.cpu_gemm.Version.intensity)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, which="both", alpha=0.25)
    ax.set_title(f"CPU roofline, one core, float32: {size}³" + (f" (filled) and {other}³ (open)" if other else ""))
    ax.annotate(results_label(data).replace("`", ""), xy=(0, -0.14), xycoords="axes fraction", va="top",
                fontsize=7, color="#555555", wrap=True)
    fig.tight_layout()
    return fig


def plot_blocking(MR: int = 4, NR: int = 64, MC: int = 128, KC: int = 256, NC: int = 1024, ax=None):
    """The cache-blocking picture: C += A B with the KC x NC panel of B, its KC x NR micro-panel,
    the MC x KC block of A, its MR-row micro-panel, and the MR x NR block of C, each with its size
    in bytes and the memory level it is meant for. A schematic: the boxes are not to scale."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4.6))
    else:
        fig = ax.figure
    # a schematic, not to scale: fixed screen sizes so every block stays visible
    Kw, Mh, Nw = 3.0, 3.0, 4.0
    ax_A, ax_B, ax_C = (0.0, 0.0), (Kw + 0.8, Mh + 0.8), (Kw + 0.8, 0.0)

    def box(x, y, w, h, **kw):
        ax.add_patch(Rectangle((x, y), w, h, **kw))

    box(*ax_A, Kw, Mh, fill=False, linewidth=1.2)
    box(*ax_B, Nw, Kw, fill=False, linewidth=1.2)
    box(*ax_C, Nw, Mh, fill=False, linewidth=1.2)
    ax.text(ax_A[0] + Kw / 2, -0.35, "A  (M x K)", ha="center")
    ax.text(ax_B[0] + Nw + 0.1, ax_B[1] + Kw / 2, "B  (K x N)", va="center")
    ax.text(ax_C[0] + Nw / 2, -0.35, "C  (M x N)", ha="center")
    kc_w, mc_h, nc_w, mr_h, nr_w = 0.9, 1.2, 2.6, 0.22, 0.45
    pc, ic, jc = 1.0, 1.0, 0.6                     # where the current blocks sit (schematic)
    # B panel (KC x NC) and micro-panel (KC x NR)
    box(ax_B[0] + jc, ax_B[1] + Kw - pc - kc_w, nc_w, kc_w, color="#c6dbef")
    box(ax_B[0] + jc + nr_w, ax_B[1] + Kw - pc - kc_w, nr_w, kc_w, color="#3182bd")
    # A block (MC x KC) and micro-panel (MR x KC)
    box(ax_A[0] + pc, ax_A[1] + Mh - ic - mc_h, kc_w, mc_h, color="#c7e9c0")
    box(ax_A[0] + pc, ax_A[1] + Mh - ic - 3 * mr_h, kc_w, mr_h, color="#31a354")
    # C block (MR x NR)
    box(ax_C[0] + jc + nr_w, ax_C[1] + Mh - ic - 3 * mr_h, nr_w, mr_h, color="#e6550d")
    box(ax_C[0] + jc, ax_C[1] + Mh - ic - mc_h, nc_w, mc_h, fill=False, linestyle="--", linewidth=0.8)
    f = FLOAT_BYTES
    notes = [("#e6550d", f"C block {MR} x {NR} ({MR * NR * f / 1024:g} KiB): registers"),
             ("#3182bd", f"B micro-panel {KC} x {NR} ({KC * NR * f / 1024:g} KiB): L1"),
             ("#31a354", f"A micro-panel {MR} x {KC} ({MR * KC * f / 1024:g} KiB)"),
             ("#c7e9c0", f"A block {MC} x {KC} ({MC * KC * f / 1024:g} KiB): L2"),
             ("#c6dbef", f"B panel {KC} x {NC} ({KC * NC * f / 1024:g} KiB): L3")]
    for i, (color, text) in enumerate(notes):
        y = Mh + Kw + 0.3 - i * 0.42
        box(-2.6, y, 0.25, 0.25, color=color)
        ax.text(-2.25, y + 0.12, text, va="center", fontsize=8.5)
    ax.set_xlim(-2.8, Kw + Nw + 2.2)
    ax.set_ylim(-0.6, Mh + Kw + 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Cache blocking, GotoBLAS loop order: jc (step NC) > pc (KC) > ic (MC) > jr (NR) > ir (MR) > k",
                 fontsize=9.5)
    fig.tight_layout()
    return fig


def draw_figures(directory: Path | str = FIGURES_DIR, data: dict | None = None) -> list[Path]:
    """figures/01_cpu_loop_blocking_{blocking,results,roofline}.svg from the committed benchmark."""
    import matplotlib
    import matplotlib.pyplot as plt
    data = data or load_results()
    directory = Path(directory)
    out = []
    with matplotlib.rc_context(SVG_RC):
        figs = {"blocking": plot_blocking(**version("cache_block").params)}
        if data:
            figs["results"] = plot_results(data)
            figs["roofline"] = plot_roofline(data)
        for what, fig in figs.items():
            path = directory / f"01_cpu_loop_blocking_{what}.svg"
            fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
            plt.close(fig)
            out.append(path)
    return out


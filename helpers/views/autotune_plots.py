"""Autotuning drawn: what a search space holds and what committed searches found.
"""

from __future__ import annotations
from helpers.measure.autotune import TIMED, TuneResult, default_row, searches_label
from helpers.measure.tuning_space import RULES, space_counts


def plot_space(rows: list[dict] | None = None):
    """Stacked bars from space_counts(): per variant, the configurations a search reaches, split
    into candidates and what each rule left out. Returns the figure."""
    import matplotlib.pyplot as plt
    rows = space_counts() if rows is None else rows
    fig, ax = plt.subplots(figsize=(9, 0.38 * len(rows) + 1.6))
    parts = [("candidates", "#1b9e77")] + [(f"left out: {rule}", c) for rule, c in
                                            zip(RULES, ("#d95f02", "#7570b3", "#e7298a"))]
    left = [0] * len(rows)
    for key, color in parts:
        values = [r[key] for r in rows]
        ax.barh(range(len(rows)), values, left=left, color=color, label=key.replace("left out: ", "left out by "))
        left = [a + b for a, b in zip(left, values)]
    for i, r in enumerate(rows):
        ax.annotate(f"{r['candidates']} of {r['reached']}", xy=(left[i], i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8.5)
    ax.set_yticks(range(len(rows)), [r["variant"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, max(left) * 1.18)
    ax.set_xlabel("configurations within the search's radius of the registered default")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8.5)
    ax.set_title("What a search reaches, and what the rules leave out (ranges: helpers.measure.tuning_space.RANGES)")
    return fig



def plot_searches(results: list[TuneResult]):
    """One row per search: every timed candidate's TFLOP/s (grey), the default it started from (black diamond), the
    best (star), and cuBLAS's timings before and after (the span it moved). Returns the figure."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(results) + 1.8))
    for i, r in enumerate(results):
        speeds = [x["tflops"] for x in r.rows if x["status"] == TIMED]
        ax.scatter(speeds, [i] * len(speeds), s=14, color="#9a9a9a", alpha=0.7, label="a candidate" if i == 0 else None)
        default, best = default_row(r), r.best
        if default is not None and default["status"] == TIMED:
            ax.scatter([default["tflops"]], [i], marker="D", s=42, color="black", zorder=3,
                       label="the default it started from" if i == 0 else None)
        if best:
            ax.scatter([best["tflops"]], [i], marker="*", s=120, color="#d95f02", zorder=4,
                       label="the best" if i == 0 else None)
        cublas = [s[k]["tflops"] for s in r.sessions for k in ("cublas_before", "cublas_after") if k in s]
        if cublas:
            ax.plot([min(cublas), max(cublas)], [i, i], color="#444444", linewidth=4, solid_capstyle="butt",
                    label="cuBLAS, before and after" if i == 0 else None)
    ax.set_yticks(range(len(results)), [r.variant for r in results])
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel(f"TFLOP/s at {results[0].size}^3 (2MNK / median time)" if results else "TFLOP/s")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8.5)
    ax.set_title(f"Autotuning searches on {', '.join(sorted({r.gpu for r in results}))}")
    fig.text(0.01, 0.0, "\n".join(__import__("textwrap").wrap(searches_label(results), 150)), fontsize=7.5,
             color="#555555", va="top")
    return fig

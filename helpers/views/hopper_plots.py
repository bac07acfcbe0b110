"""Stage 12's figures: the warp-specialized pipeline as the kernel's own trace shows it, the ideas' gains one at
a time, and the sweep beside cuBLAS TF32 (helpers.measure.hopper)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from helpers.core import stages
from helpers.core.errors import CourseError
from helpers.measure import hopper, verify
from helpers.views.widgets import interactive_output


def new_figure(ax, figsize):
    if ax is None:
        return plt.subplots(figsize=figsize)
    return ax.figure, ax


def plot_pipeline(p: hopper.Pipeline, ax=None):
    """One row per role: the producer's copies of each k-tile (a tick at the order they were issued), each
    consumer warpgroup's k-tiles (a bar from its wait for the copies to its giving the stage back), one colour
    per stage of the ring. The x axis is the order the emulator ran the events in, not time."""
    fig, ax = new_figure(ax, figsize=(11, 3.2))
    table = p.per_k_tile()
    colours = plt.get_cmap("tab10")
    roles = sorted(c for c in {int(c[2]) for c in table.columns if c.startswith("WG") and c[2].isdigit()})
    ax.set_yticks(range(len(roles) + 1), ["producer: copies issued"] + [f"consumer warpgroup {r}" for r in roles])
    # copies issued close together (the first round of the ring) would print their labels over each other: each
    # label closer than a label's width to the one before goes one step higher
    span = max(1.0, float(table["copies issued at"].max()) - float(table["copies issued at"].min()))
    label_width = 1.2 * span * 16 / (fig.get_figwidth() * 72 * 0.75)  # 16 points of an 8-point "k12", in data units
    previous, level = None, 0
    for _, row in table.iterrows():
        colour = colours(int(row["stage"]) % 10)
        x = float(row["copies issued at"])
        level = level + 1 if previous is not None and x - previous < label_width and level < 3 else 0
        previous = x
        ax.plot([x], [0], marker="v", color=colour, markersize=9)
        ax.annotate(f"k{int(row['k-tile'])}", (x, 0), xytext=(0, 7 + 9 * level), textcoords="offset points",
                    ha="center", fontsize=8)
        for y, role in enumerate(roles, 1):
            start, end = row.get(f"WG{role} waited at"), row.get(f"WG{role} gave back at")
            if start is None or end is None or start != start or end != end:  # NaN: not reached in the trace
                continue
            y += 0.18 if int(row["k-tile"]) % 2 else -0.18   # even and odd k-tiles on two lanes: they overlap
            ax.barh(y, end - start, left=start, height=0.32, color=colour, alpha=0.8, edgecolor="black", linewidth=0.5)
            ax.text((start + end) / 2, y, f"k{int(row['k-tile'])}·s{int(row['stage'])}", ha="center", va="center",
                    fontsize=7)
    if p.k_tiles:
        _tile_spans(ax, p, roles)
    ax.invert_yaxis()
    ax.set_xlabel("event order in the emulator's run (copies issued, waits passed, stages given back): not time")
    ax.set_title(f"{p.kernel}, block 0: a consumer's k-tile (k) in stage (s) runs from its wait for the copies to "
                 f"giving the stage back", fontsize=9, pad=14)
    return fig


def _tile_spans(ax, p: hopper.Pipeline, roles):
    """Behind each consumer's k-tiles, the span of each tile it multiplied (from its first k-tile's wait to giving the
    last stage back), and, hatched, what follows until its next tile's first wait: its epilogue (C written from its
    accumulators) and, with ping-pong, its wait for its turn. Under a ping-pong consumer's hatched span lie the other
    consumer's k-tiles: products overlapping the epilogue."""
    for _, r in p.per_tile().iterrows():
        y = roles.index(int(r["consumer"][2:])) + 1
        start, end = float(r["first k-tile waited at"]), float(r["gave the last stage back at"])
        ax.add_patch(plt.Rectangle((start, y - 0.42), end - start, 0.84, color="0.92", zorder=0))
        ax.text(start, y - 0.4, f"tile {int(r['tile'])}", fontsize=7, va="bottom", color="0.35")
        after = r["next tile's first k-tile waited at"]
        if after == after and after is not None and after > end:
            ax.add_patch(plt.Rectangle((end, y - 0.42), after - end, 0.84, fill=False, hatch="///", edgecolor="0.6",
                                       linewidth=0, zorder=0))
            ax.text((end + after) / 2, y + 0.4, f"C of tile {int(r['tile'])}, then its next tile", fontsize=7,
                    ha="center", va="top", color="0.35")


def plot_steps(data: dict, ax=None):
    """Each idea's median % of cuBLAS TF32 at 4096³ (committed rounds)."""
    fig, ax = new_figure(ax, figsize=(8, 3))
    med = hopper.step_medians(data)
    steps = [s for s in med if s != "cuBLAS TF32"]
    ax.barh(steps, [med[s] for s in steps], color="tab:blue")
    ax.axvline(100, color="black", linestyle="--", linewidth=1)
    for y, s in enumerate(steps):
        ax.text(med[s] + 1, y, f"{med[s]:.1f} %", va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("% of cuBLAS TF32 at 4096³ (median of the rounds; dashed: cuBLAS)")
    ax.set_title(hopper.label(data)[:110], fontsize=8)
    return fig


def plot_sweep(data: dict, ax=None):
    """The default configuration's % of cuBLAS TF32 per shape of the committed sweep."""
    fig, ax = new_figure(ax, figsize=(9, 3.6))
    t = hopper.sweep_table(data)
    padded = t["operands"] != "as they lie"
    ax.bar(range(len(t)), t["% of cuBLAS TF32"], color=["lightgrey" if p else "tab:green" for p in padded])
    ax.axhline(100, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(t)), t["M × N × K"], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS TF32")
    ax.set_title(f"12_warp_specialized beside cuBLAS TF32: geometric mean {hopper.sweep_geomean(data):.1f} % over "
                 f"the green shapes (grey: operands copied to a padded pitch outside the timing)", fontsize=8)
    return fig


# ---- the pipeline explorer: a stage-12 configuration traced, verified and drawn on each slider move ------------
def run_pipeline_config(BM: int, CONSUMERS: int, STAGES: int, M: int = 256, N: int = 128, K: int = 256) -> dict:
    """Checks the configuration, verifies the kernel with it on an odd shape (fresh data) and traces block 0's
    pipeline on M x N x K. Never raises for a broken rule: the result holds the message."""
    v = stages.variant("12_warp_specialized")
    try:
        config = v.config(BM=BM, CONSUMERS=CONSUMERS, STAGES=STAGES)
    except ValueError as e:
        return {"error": str(e)}
    try:
        check = verify.check(v, verify.Shape("fresh random data", 197, 141, 75), config)
        return {"config": config, "verdict": check.details(), "ok": check.ok,
                "pipeline": hopper.kernel_pipeline(v, config, M, N, K)}
    except CourseError as e:
        return {"config": config, "error": str(e)}


def describe_pipeline_config(r: dict) -> str:
    if "config" not in r:
        return r["error"]
    c = r["config"]
    head = (f"{c.label()}: {c.threads()} threads (1 producer + {c.CONSUMERS} consumer warpgroups), "
            f"{c.shared_bytes() / 1024:.0f} KiB of shared memory, {(c.BM + c.BN) * c.BK * 4 // 1024} KiB a stage")
    if "error" in r:
        return f"{head}\n{r['error']}"
    return f"{head}\n{r['verdict']}"


def draw_pipeline_config(r: dict):
    return plot_pipeline(r["pipeline"]) if "pipeline" in r else None


def pipeline_explorer():
    """Sliders for BM, CONSUMERS and STAGES of 12_warp_specialized (continuous_update=False)."""
    import ipywidgets as w
    sliders = {"BM": w.SelectionSlider(options=(128, 256), value=128, description="BM", continuous_update=False),
               "CONSUMERS": w.SelectionSlider(options=(1, 2), value=2, description="CONSUMERS", continuous_update=False),
               "STAGES": w.SelectionSlider(options=(2, 3, 4, 5, 6), value=3, description="STAGES",
                                           continuous_update=False)}
    out = interactive_output(run_pipeline_config, describe_pipeline_config, draw_pipeline_config, sliders)
    return w.VBox([w.HBox(list(sliders.values())), out])

"""Stage 09 drawn: the load/compute schedule of a pipelined kernel, from helpers.measure.pipeline."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch


COLORS = {"computed": "#1f4e79", "loading": "#f28e2b", "in flight": "#fbd3a4"}


def plot_schedules(schedules, axes=None, labels=None):
    """One timeline per schedule: k-tiles down, barrier intervals across; a tile's cell is dark
    where the block computes on it, orange where its loads are issued, pale orange where its
    asynchronous copies are still in flight from an earlier interval. Returns the figure."""
    schedules = list(schedules)
    if axes is None:
        width = max(len(s.intervals) for s in schedules)
        fig, axes = plt.subplots(len(schedules), 1, squeeze=False,
                                 figsize=(max(6.0, 0.55 * width + 2.5), 1.0 + 1.7 * len(schedules)))
        axes = axes[:, 0]
    fig = axes[0].figure
    for n, (ax, s) in enumerate(zip(axes, schedules)):
        for i in s.intervals:
            cells = [(t, "in flight") for t in i.in_flight] + [(t, "loading") for t in i.loading] + \
                    [(t, "computed") for t in i.computed]
            for t, what in cells:
                ax.add_patch(plt.Rectangle((i.index - 0.45, t - 0.42), 0.9, 0.84, color=COLORS[what], lw=0))
        ax.set_xlim(-0.6, len(s.intervals) - 0.4)
        ax.set_ylim(s.tiles - 0.5, -0.5)
        ax.set_xticks(range(len(s.intervals)))
        ax.set_yticks(range(s.tiles))
        ax.set_ylabel("k-tile", fontsize=8)
        ax.tick_params(labelsize=7)
        label = labels[n] if labels else s.kernel
        ax.set_title(f"{label}: {s.depth} tile{'s' * (s.depth != 1)} loading while one is computed on",
                     fontsize=9, loc="left")
    axes[-1].set_xlabel("barrier interval (between two __syncthreads of block 0)", fontsize=8)
    fig.legend(handles=[Patch(color=COLORS["computed"], label="computed on (read from shared memory)"),
                        Patch(color=COLORS["loading"], label="loads issued (into registers, or cp.async)"),
                        Patch(color=COLORS["in flight"], label="cp.async copies still in flight")],
               loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("Load/compute schedule per barrier interval, traced by the CPU emulator from the kernel "
                 "files (the program's order, not GPU timing)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    return fig


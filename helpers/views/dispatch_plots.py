"""Stage 11's dispatcher drawn: waves and their quantization on a GPU, the wave model's choices, and the
committed sweep (% of cuBLAS per shape for the dispatcher and the fixed best kernel)."""

from __future__ import annotations

import math

import matplotlib

from helpers.core import stages
from helpers.core.configs import ceil_div
from helpers.measure import stream_k
from helpers.measure.dispatch_table import load_sweep
from helpers.run import dispatch
from helpers.views.style import SVG_RC, save_svg


def waves(M: int, N: int, K: int, tile: str, splits: int, machine: dispatch.Machine) -> dict:
    """One shape's blocks on the GPU: tiles, blocks, the busiest SM's share, and the share of the GPU's
    block slots the blocks fill on average (1.0: every SM busy to the end)."""
    cfg = dispatch.CANDIDATES[tile]
    tiles = ceil_div(M, cfg.BM) * ceil_div(N, cfg.BN)
    blocks = tiles * splits
    slots = machine.sm_count * cfg.MIN_BLOCKS
    return {"shape": f"{M}x{N}x{K}", "tile": tile, "splits": splits, "tiles": tiles, "blocks": blocks,
            "slots": slots, "waves": blocks / slots, "whole waves": math.ceil(blocks / slots),
            "busiest SM": ceil_div(blocks, machine.sm_count), "filled": blocks / slots / math.ceil(blocks / slots)}


def plot_wave_quantization(machine: dispatch.Machine, tile: str = "128x128", sizes=range(256, 4097, 16),
                           marks=(1000, 2048, 4096, 4097)):
    """For square sizes, the share of the GPU's block slots the last wave leaves idle is what a size one
    past a multiple costs: filled slots / slots of whole waves, for `tile` with no split. Returns the figure."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    filled = [waves(n, n, n, tile, 1, machine)["filled"] for n in sizes]
    ax.plot(list(sizes), [100 * f for f in filled], color="#1f77b4", lw=1.2)
    for n in marks:
        w = waves(n, n, n, tile, 1, machine)
        ax.plot([n], [100 * w["filled"]], "o", color="#d62728")
        ax.annotate(f"{n}: {w['blocks']} blocks,\n{w['waves']:.2f} waves", (n, 100 * w["filled"]),
                    xytext=(4, -26 if w["filled"] > 0.5 else 6), textcoords="offset points", fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("block slots in use, %")
    ax.set_title(f"Wave quantization of {tile} tiles on the {machine.name} ({machine.sm_count} SMs x "
                 f"{dispatch.CANDIDATES[tile].MIN_BLOCKS} blocks): the last wave's idle slots", fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_model(M: int, N: int, K: int, machine: dispatch.Machine):
    """The wave model's estimate for each tile against the number of slices of K. Returns the figure."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for tile in dispatch.CANDIDATES:
        pts = sorted((s, t) for t, tl, s in dispatch.ranked(M, N, K, machine) if tl == tile)
        ax.plot([s for s, _ in pts], [1e3 * t for _, t in pts], marker=".", label=f"{tile} tiles")
    best = dispatch.model_choice(M, N, K, machine)
    ax.plot([best.config.SPLITS], [1e3 * best.estimate_ms], "*", ms=14, color="k", label=f"the model's choice: {best.tile}, "
            f"SPLITS={best.config.SPLITS} (a measured table entry overrides it)")
    ax.set_xlabel("SPLITS (slices of K)")
    ax.set_ylabel("estimated time, µs")
    ax.set_title(f"The wave model at {M}x{N}x{K} on the {machine.name}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_stream_k(M: int, N: int, K: int, ctas: int, config=None):
    """The k-tiles each of `ctas` blocks multiplies at M x N x K, tiles walked whole (12's schedule, SK_WAVES = 0)
    against stream-K (the config's SK_WAVES), by the kernel's own rule (measure.stream_k.schedule). Returns the figure."""
    import dataclasses

    import matplotlib.pyplot as plt
    config = config or stages.variant(stream_k.VARIANT).default
    whole = stream_k.schedule(M, N, K, dataclasses.replace(config, SK_WAVES=0), ctas)["k-tiles"]
    shared = stream_k.schedule(M, N, K, config, ctas)["k-tiles"]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.bar(whole.index, whole.values, width=1.0, color="#999999", label=f"whole tiles (12's walk): busiest {whole.max()}")
    ax.bar(shared.index, shared.values, width=0.6, color="#d62728",
           label=f"stream-K, SK_WAVES={config.SK_WAVES}: busiest {shared.max()}")
    ax.set_xlabel(f"block (one per SM, {ctas} SMs)")
    ax.set_ylabel("k-tiles multiplied (32 deep)")
    ax.set_title(f"{M}x{N}x{K}: {config.tiles(M, N)} tiles of {config.BM}x{config.BN}, "
                 f"{-(-K // config.BK)} k-tiles each", fontsize=10)
    ax.set_xlim(-1, ctas)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_sweep(sweep: dict):
    """% of cuBLAS FP32 per shape: the dispatcher, the fixed best kernel, and cuBLAS's 100 %. Returns the figure."""
    import matplotlib.pyplot as plt
    rows = sweep["rows"]
    labels = [f"{r['M']}x{r['N']}x{r['K']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.axhline(100, color="k", lw=1, label="cuBLAS FP32 (TF32 off)")
    ax.plot(x, [r["fixed_pct_cublas"] for r in rows], "s", color="#999999",
            label=f"fixed: {sweep['fixed_kernel'].split(' (')[0]} (its default everywhere)")
    ax.plot(x, [r["pct_cublas"] for r in rows], "o", color="#d62728", label="dispatcher (helpers.sgemm)")
    for i, r in enumerate(rows):
        ax.annotate(f"{r['pct_cublas']:.0f}", (i, r["pct_cublas"]), xytext=(0, 6), textcoords="offset points",
                    ha="center", fontsize=7.5)
    ax.set_xticks(list(x), labels, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS FP32, same run")
    s = sweep["summary"]
    p = sweep["provenance"]
    ax.set_title(f"{p['gpu']}, {p['date'][:10]}: dispatcher geometric mean {s['geomean_pct_cublas']:.1f} %, lowest "
                 f"{s['min_pct_cublas']:.1f} % ({sweep['path']})", fontsize=9.5)
    ax.set_ylim(0, max(110, max(r["pct_cublas"] for r in rows) + 10))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def draw_11_sweep(path, sweep: dict | None = None):
    """figures/11_autotuning_sweep.svg: plot_sweep() of the newest committed sweep."""
    with matplotlib.rc_context(SVG_RC):
        return save_svg(plot_sweep(sweep or load_sweep()), path)

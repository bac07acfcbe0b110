"""Stage 10 drawn: fragment lanes, the 128-byte swizzle and wgmma's committed sweep (helpers.measure.tensor_cores)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from helpers.measure.tensor_cores import wgmma_measurements, wgmma_sweep


def plot_fragment_lanes(grid: np.ndarray, ax=None):
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 6))
    ax.imshow(grid % 4, cmap="Pastel1", aspect="equal")
    for (r, c), lane in np.ndenumerate(grid):
        ax.text(c, r, str(lane), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(grid.shape[0]))
    ax.set_xlabel("k (column of the A tile)")
    ax.set_ylabel("row of the A tile")
    ax.set_title("Lane holding each element of a 16 x 8 TF32\nfragment of A (emulator trace, warp 0)", fontsize=10)
    return ax


def plot_swizzle(grid: np.ndarray, ax=None):
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.4))
    ax.imshow(grid, cmap="tab10", vmin=0, vmax=9, aspect="equal")
    for (r, p), c in np.ndenumerate(grid):
        ax.text(p, r, f"k {4 * c}-{4 * c + 3}", ha="center", va="center", fontsize=6.5)
    ax.set_xticks(range(8), [f"{4 * p}-{4 * p + 3}" for p in range(8)], fontsize=7)
    ax.set_yticks(range(8))
    ax.set_xlabel("banks of the 16-byte slot (row of 128 bytes = 32 banks)")
    ax.set_ylabel("row of A's tile")
    ax.set_title("Where 10_wgmma's copies put each run of 4 floats of A\n(emulator trace: the 128-byte swizzle)",
                 fontsize=10)
    return ax


def plot_wgmma_sweep(data: dict | None = None, ax=None):
    data = data or wgmma_measurements()
    rows = wgmma_sweep(data)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    sizes = [r["size"] for r in rows]
    for kernel, style in (("cublas_tf32", "k-"), ("10_wgmma", "o-"), ("10_tensor_cores", "s-"), ("cublas_sgemm", "k:")):
        ax.plot(sizes, [r.get(kernel) for r in rows], style, label=kernel, markersize=4)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Stage 10 against cuBLAS TF32 on {data['provenance']['gpu']}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


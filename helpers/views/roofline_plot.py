"""The roofline drawn: roofs, ridge point, measured ceilings and kernels as points.
"""

from __future__ import annotations
from helpers.run import backend
from helpers.core import gpu_specs
from helpers.measure.roofline import Ceilings, measured_roofline, reference_roofline
from helpers.views.style import VARIANT_COLORS

EXTRA_COLORS = ("#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")


def add_tf32_roof(ax, gpu_name: str) -> bool:
    """Draws the tensor cores' dense TF32 roof of `gpu_name` (datasheet, helpers.gpu_specs) on a
    roofline's axes, above the FP32 one, and makes room for it. False when no TF32 peak is listed."""
    spec = gpu_specs.lookup(gpu_name)
    if spec is None or spec.tf32_tflops is None:
        return False
    import numpy as np
    lo, hi = ax.get_xlim()
    x = np.geomspace(lo, hi, 200)
    ax.plot(x, np.minimum(spec.tf32_tflops, spec.dram_tbs * x), color="#d95f02", linestyle="-.", linewidth=1.5,
            label=f"TF32 tensor-core roof ({spec.key}, {spec.source}, dense): {spec.tf32_tflops:g} TFLOP/s")
    ax.set_ylim(ax.get_ylim()[0], max(ax.get_ylim()[1], spec.tf32_tflops * 2))
    return True



def roofline(gpu_name: str = "NVIDIA H200", level: str = "dram"):
    """The figure for this session: measured now on a GPU, else the reference for `gpu_name`."""
    if backend.name() == "gpu":
        return plot_roofline(*measured_roofline(level=level))
    return plot_roofline(*reference_roofline(gpu_name, level))


# ---- the figure -------------------------------------------------------------------------------------
def plot_roofline(ceilings: Ceilings, points=(), ax=None, title: str | None = None, labels: bool = True,
                  colors: dict[str, str] | None = None, memory: str = "DRAM"):
    """Log-log roofline: the FP32 and DRAM roofs, the ridge point, measured ceilings dashed, and the
    points, each labelled beside it (labels=False: one legend entry per variant instead, for many
    points; `colors` maps a variant to its colour). Draws only what it is given; the sources go in a
    note under the axes. `memory` names the level whose bandwidth is ceilings.dram_tbs ("shared memory": points at
    FLOP per byte loaded from shared memory). Returns the figure."""
    import matplotlib.pyplot as plt
    import numpy as np
    points = list(points)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5))
    else:
        fig = ax.figure
    peak, bw, ridge = ceilings.fp32_tflops, ceilings.dram_tbs, ceilings.ridge_flop_per_byte
    xs = [p.intensity_flop_per_byte for p in points] + [ridge]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, ridge * 8)
    ys = [p.tflops for p in points] + [bw * lo]
    y_lo = min(ys) / 3
    x = np.geomspace(lo, hi, 400)
    ax.plot(x, np.minimum(peak, bw * x), color="black", linewidth=2,
            label=f"roofs ({ceilings.source}): {peak:.1f} TFLOP/s FP32, {bw:.2f} TB/s {memory}")
    ax.plot([ridge, ridge], [y_lo, peak], color="black", linestyle=":", linewidth=1)
    ax.plot([ridge], [peak], marker="o", color="black")
    ax.annotate(f"ridge point {ridge:.1f} FLOP/B", xy=(ridge, peak), xytext=(4, 8), textcoords="offset points",
                ha="left", va="bottom", fontsize=8.5)
    notes = [f"Roofs: {ceilings.detail or ceilings.source}"]
    if ceilings.cublas_tflops:
        ax.plot(x, np.full_like(x, ceilings.cublas_tflops), color="#444444", linestyle="--", linewidth=1.2,
                label=f"cuBLAS FP32, measured: {ceilings.cublas_tflops:.1f} TFLOP/s")
        notes.append(f"cuBLAS: {ceilings.cublas_source}")
    if ceilings.copy_tbs:
        ax.plot(x, np.minimum(peak, ceilings.copy_tbs * x), color="#3182bd", linestyle="--", linewidth=1.2,
                label=f"device copy, measured: {ceilings.copy_tbs:.2f} TB/s")
        notes.append(f"Copy: {ceilings.copy_source}")
    used: dict[str, str] = {}
    placed: list[tuple[float, float]] = []   # points so far, in log10 (intensity, TFLOP/s)
    for p in points:
        key = p.variant or p.label
        legend = None if labels or key in used else key
        color = used.setdefault(key, (colors or {}).get(key) or VARIANT_COLORS.get(key)
                                or EXTRA_COLORS[len(used) % len(EXTRA_COLORS)])
        # Points that (nearly) coincide, as 07's and 08's do, are drawn as rings around the first, each wider,
        # and their labels stacked below its label, so that none hides another.
        here = (np.log10(p.intensity_flop_per_byte), np.log10(p.tflops))
        near = sum(abs(x - here[0]) < 0.05 and abs(y - here[1]) < 0.03 for x, y in placed)   # 12 % and 7 % apart
        placed.append(here)
        ring = dict(markerfacecolor="none", markeredgewidth=1.8) if near else {}
        ax.plot([p.intensity_flop_per_byte], [p.tflops], marker="o", markersize=7 + 5 * min(near, 3), linestyle="none",
                color=color, label=legend, **ring)
        if labels:
            ax.annotate(f"{p.label}\n{p.tflops:.2f} TFLOP/s", xy=(p.intensity_flop_per_byte, p.tflops),
                        xytext=(7 + 3 * near, 4 - 24 * near), textcoords="offset points", fontsize=8.5, color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(y_lo, peak * 2.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"arithmetic intensity (FLOP per byte of {memory} traffic, from helpers.intensity)")
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=8)   # above the DRAM roof, where no kernel can be
    ax.set_title(title if title is not None else f"Roofline of {ceilings.gpu}")
    notes += [f"Point: {s}" for s in sorted({p.source for p in points})]
    ax.annotate("\n".join(notes), xy=(0, -0.13), xycoords="axes fraction", va="top", fontsize=7.5, color="#555555")
    return fig

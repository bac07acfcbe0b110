"""One look for every figure: deterministic SVG settings, the course's colours, and saving.
"""

from __future__ import annotations
from pathlib import Path

# ---- plotting style -------------------------------------------------------------------------
SVG_RC = {"svg.hashsalt": "tile-by-tile", "svg.fonttype": "none", "font.size": 10,
          "font.family": "DejaVu Sans", "axes.titlesize": 10.5}
VARIANT_COLORS = {"cublas_sgemm": "#444444", "02_naive": "#d95f02", "02_naive_coalesced": "#1b9e77",
                  "03_smem_tiling": "#7570b3"}
LANE_CMAP = "viridis"
SECTOR_FILL = "#fde0c5"
CONFLICT_COLOR = "#d62728"


def save_svg(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path



"""The committed figures: figures/NN_<slug>_<what>.svg, each made by one registered function.
`python -m helpers figures` regenerates them (`--check` says which are stale).
"""

from __future__ import annotations
import tempfile
from pathlib import Path
from typing import Callable

from helpers.views.ladder_report import draw_11_ladder, draw_11_roofline, draw_11_smem_roofline  # noqa: E402  (drawn from the newest committed ladder)
from helpers.core.paths import FIGURES_DIR
from helpers.views.dispatch_plots import draw_11_sweep
from helpers.views.figures import draw_02_naive_mapping, draw_03_bank_grid, draw_03_reuse

# name -> function(path) that writes figures/<name>.svg
FIGURES: dict[str, Callable[[Path], Path]] = {
    "02_naive_mapping": draw_02_naive_mapping,
    "03_smem_tiling_bank_grid": draw_03_bank_grid,
    "03_smem_tiling_reuse": draw_03_reuse,
    "11_autotuning_ladder": draw_11_ladder,
    "11_autotuning_roofline": draw_11_roofline,
    "11_autotuning_smem_roofline": draw_11_smem_roofline,
    "11_autotuning_sweep": draw_11_sweep,
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



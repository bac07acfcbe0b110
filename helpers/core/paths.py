"""Where the course's folders are: the one place that computes the repository root."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # helpers/core/paths.py -> the repository
KERNELS = ROOT / "kernels"
NOTEBOOKS = ROOT / "notebooks"
RESULTS_DIR = ROOT / "results"
FIGURES_DIR = ROOT / "figures"
README = ROOT / "README.md"
RESULTS_PAGE = ROOT / "docs" / "results.md"   # the ladder's table (python -m helpers results-table --write)


def rel(path: Path | str) -> str:
    """`path` relative to the repository when it lies inside it (as the course prints paths), else as given."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)

"""Maintainer check: every figure a notebook draws is readable at the width a notebook shows it.

JupyterLab shows a figure at most about NOTEBOOK_WIDTH_IN inches wide (its content column) and shrinks a wider one
to fit, and its text with it: a 22-inch row of four panels shows its 8.5-point titles at 4 points. A figure is
readable when its titles, axis labels and tick labels are at least SMALLEST_PT points after that shrinking.

Two checks: `literal_widths` reads the `figsize=(width, height)` a notebook's own code writes (no figure drawn), and
`unreadable` looks at a drawn figure (tests/maintain/test_figures_readable.py draws those of the course's figure
functions and of the notebooks' cells through helpers/maintain/cell_runner.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

NOTEBOOK_WIDTH_IN = 10.5     # JupyterLab's content column at its default zoom: about 1000 pixels at 96 per inch
SMALLEST_PT = 6.0            # the smallest title, label or tick label a learner can read there
# a figsize the notebook writes itself: no wider than this, where matplotlib's default 10-point text still reads
WIDEST_LITERAL_IN = NOTEBOOK_WIDTH_IN * 10 / SMALLEST_PT


@dataclass(frozen=True)
class Unreadable:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def literal_widths(nb) -> list[Unreadable]:
    """Every `figsize=(W, H)` with constant W wider than WIDEST_LITERAL_IN in the notebook's code (the drawn figure's
    own text sizes are checked by `unreadable`)."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.source.lstrip().startswith("%"):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "figsize" and isinstance(node.value, ast.Tuple) \
                    and node.value.elts and isinstance(node.value.elts[0], ast.Constant):
                width = node.value.elts[0].value
                if isinstance(width, (int, float)) and width > WIDEST_LITERAL_IN:
                    out.append(Unreadable(f"cell {i}", f"figsize width {width} in: a notebook shows it "
                                                       f"{NOTEBOOK_WIDTH_IN} in wide, where even 10-point text "
                                                       f"reads at {10 * NOTEBOOK_WIDTH_IN / width:.1f} pt; lay the "
                                                       f"panels out in rows"))
    return out


def _texts(fig):
    """(what, text artist) of every title, axis label and tick label of the figure."""
    if fig._suptitle is not None:
        yield "the figure's title", fig._suptitle
    for ax in fig.axes:
        for what, t in (("title", ax.title), ("left title", ax._left_title), ("right title", ax._right_title),
                        ("x label", ax.xaxis.label), ("y label", ax.yaxis.label)):
            yield what, t
        for t in ax.get_xticklabels() + ax.get_yticklabels():
            yield "tick label", t


def unreadable(fig, where: str) -> list[Unreadable]:
    """The figure's text that a notebook shows smaller than SMALLEST_PT (after shrinking it to NOTEBOOK_WIDTH_IN)."""
    width = fig.get_size_inches()[0]
    scale = min(1.0, NOTEBOOK_WIDTH_IN / width)
    found = []
    for what, t in _texts(fig):
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() * scale < SMALLEST_PT:
            found.append(Unreadable(where, f"{width:.1f} in wide, so its {what} {t.get_text()[:40]!r} shows at "
                                           f"{t.get_fontsize() * scale:.1f} pt (at least {SMALLEST_PT:g})"))
            break     # one is enough to say so
    return found

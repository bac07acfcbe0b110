"""Every figure a notebook draws is readable at the width a notebook shows it (issue 34, point 2): 06's row of four
bank grids was 22 inches wide, its titles shrunk to 4 points (helpers/maintain/figures_readable.py)."""

import re

import matplotlib
import nbformat
import pytest

from helpers.core.paths import NOTEBOOKS
from helpers.maintain import cell_runner, figures_readable as readable

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTEBOOK_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
DRAWS = re.compile(r"\bfigures\.\w|\bplt\.|_plots\.\w|\bplot_\w+\(|display\.throughput")
STAGES = ("02", "03", "04", "05", "06", "07", "08", "09")


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_no_figure_the_notebook_sizes_itself_is_too_wide_to_read(path):
    found = readable.literal_widths(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}:\n" + "\n".join(map(str, found))


@pytest.mark.slow
@pytest.mark.emulator
@pytest.mark.parametrize("stage", STAGES)
def test_every_figure_a_notebook_cell_draws_is_readable_at_notebook_width(stage):
    """The drawing cells run here (with the cells they need), as they draw in the notebook."""
    nb = nbformat.read(next(NOTEBOOKS.glob(f"{stage}_*.ipynb")), as_version=4)
    cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and DRAWS.search(c.source)
             and not c.source.lstrip().startswith("%")]
    found, drawn = [], []
    cell_runner.run(nb, cells, on_figure=lambda i, fig: (drawn.append(i), found.extend(readable.unreadable(fig, f"cell {i}"))))
    assert drawn or not cells, f"notebook {stage}: its drawing cells {cells} drew nothing here"
    assert not found, "\n".join(map(str, found))


@pytest.mark.slow
@pytest.mark.emulator
@pytest.mark.xfail(strict=True, reason="helpers/views/widgets.py draws the tile explorer 4.6 in per bank grid + 5 in: "
                                       "14.2 in for two loads, its tick labels at 5.5 pt; that file belongs to the "
                                       "explorer's speed work (issue 34, point 4), which should cap it")
def test_the_tile_explorer_s_figure_is_readable_at_notebook_width():
    from helpers.views import widgets
    fig = widgets.draw_tile_config(widgets.run_tile_config("05_2d_thread_tiling"))
    try:
        assert readable.unreadable(fig, "05's explorer") == []
    finally:
        plt.close(fig)


def test_the_check_finds_the_22_inch_row_and_passes_the_2_by_2_grid():
    wide = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "fig, axes = plt.subplots(1, 4, figsize=(22, 6.4))")])
    assert [str(u) for u in readable.literal_widths(wide)] == [
        "cell 0: figsize width 22 in: a notebook shows it 10.5 in wide, where even 10-point text reads at 4.8 pt; "
        "lay the panels out in rows"]
    for size, ok in (((22, 6.4), False), ((10, 10.5), True), ((13, 4), True)):
        fig, axes = plt.subplots(1, 4 if not ok else 2, figsize=size)
        for ax in fig.axes:
            ax.set_title("06_padded (BM=128, ...)", fontsize=8.5)
        assert (readable.unreadable(fig, "f") == []) == ok, size
        plt.close(fig)

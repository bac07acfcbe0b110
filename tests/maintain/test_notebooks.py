"""The house form of the committed notebooks (helpers/core/notebook_files.py makes it, helpers/maintain/notebooks.py
checks it): outputs only on the cells nbval checks, fixed metadata, the course's first cell, no images there."""

import nbformat
import pytest

from helpers.core import notebook_files, paths
from helpers.maintain import notebooks


def _nb():
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell(notebooks.FIRST_CELL, execution_count=1,
                                      outputs=[nbformat.v4.new_output("stream", text="Backend: ...\n")])
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('PASS')", execution_count=2,
                                        outputs=[nbformat.v4.new_output("stream", text="PASS\n")])
    checked.metadata["execution"] = {"iopub.status.busy": "2026-01-01"}
    nb.cells = [first, checked]
    nb.metadata["widgets"] = {"state": {}}
    return nb


def test_house_form():
    nb = _nb()
    assert any("outputs on a cell not marked" in p for p in notebooks.problems(nb))
    house = notebook_files.house_form(nb)
    assert notebooks.problems(house) == []
    assert house.cells[0].outputs == [] and house.cells[0].execution_count is None
    assert house.cells[1].outputs[0]["text"] == "PASS\n" and house.cells[1].execution_count == 2
    assert "execution" not in house.cells[1].metadata and "widgets" not in house.metadata
    assert nb.cells[0].outputs, "house_form must not change its argument"


def test_problems_catch_images_and_a_foreign_first_cell():
    nb = _nb()
    nb.cells[0].source = "import helpers"
    nb.cells[1].outputs.append(nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"}))
    found = " ".join(notebooks.problems(notebook_files.house_form(nb)))
    assert "first code cell" in found and "image/png" in found


@pytest.mark.parametrize("name", ["00_setup", "02_naive", "03_smem_tiling"])
def test_committed_notebooks_are_in_house_form(name):
    nb = nbformat.read(paths.NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert notebooks.problems(nb, name) == []
    assert sum(notebook_files.is_checked(c) for c in nb.cells) >= 1

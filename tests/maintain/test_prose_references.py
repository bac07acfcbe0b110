"""Every `module.name` a notebook's prose tells a learner to call exists (issue 34, point 2): 06 told the learner to
call `figures.per_line_view(trace)`, which is `accesses.per_line_view` (helpers/maintain/references.py)."""

import nbformat
import pytest

from helpers.core.paths import NOTEBOOKS
from helpers.maintain import references

NOTEBOOK_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_every_module_name_the_prose_names_resolves(path):
    found = references.dangling(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}:\n" + "\n".join(map(str, found))


def test_the_names_are_found_and_checked():
    text = ("In a notebook, `figures.per_line_view(trace)` puts the totals beside the source; "
            "`accesses.per_line_view(trace)` too. `helpers.measure.bench.time_variant`, `stages.ThreadTile1DConfig`, "
            "`helpers/measure/intensity.py`, `view.text(all_lines=True)`, e.g. `accesses.py`.")
    assert references.names(text) == ["figures.per_line_view", "accesses.per_line_view",
                                      "helpers.measure.bench.time_variant", "stages.ThreadTile1DConfig"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text),
                                         nbformat.v4.new_markdown_cell("`helpers.measure.nothing_here` and "
                                                                       "`resources.occupancy`")])
    assert [str(d) for d in references.dangling(nb)] == [
        "cell 0: `figures.per_line_view` does not exist: helpers.views.figures has no 'per_line_view'",
        "cell 1: `helpers.measure.nothing_here` does not exist: helpers.measure has no 'nothing_here'"]

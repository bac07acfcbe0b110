"""What the prose says a cell shows or offers is what it shows and offers (issue 34, point 5), on notebooks 02-09
(helpers/maintain/prose_and_output.py). Each rule with what a notebook said before it was fixed."""

import nbformat
import pytest

from support import checked_notebook

from helpers.core.paths import NOTEBOOKS
from helpers.maintain import prose_and_output as prose

STAGES = ("02", "03", "04", "05", "06", "07", "08", "09")


def _notebook(stage):
    return nbformat.read(next(NOTEBOOKS.glob(f"{stage}_*.ipynb")), as_version=4)


@pytest.mark.parametrize("stage", STAGES)
def test_the_prose_and_the_outputs_agree(stage):
    nb = _notebook(stage)
    found = [*prose.block_claims(nb), *prose.default_claims(nb), *prose.quoted_strings(nb)]
    assert not found, "\n".join(map(str, found))


@pytest.mark.parametrize("stage", ("04", "05", "06"))
def test_the_explorer_offers_every_value_the_prose_asks_for(stage):
    found = prose.explorer_values(_notebook(stage), arch="sm_90")
    assert not found, "\n".join(map(str, found))


def test_05_s_request_for_tn_16_is_found():
    nb = checked_notebook("Things to try in the explorer:\n- TM = TN = 8, then TN = 16: how many rows?\n- BN / TN = 64 / 4 = 16",
             ("widgets.tile_explorer(\"05_2d_thread_tiling\")", ""))
    nb.cells[1].source = 'widgets.tile_explorer("05_2d_thread_tiling")'
    assert [str(m) for m in prose.explorer_values(nb, arch="sm_90")] == [
        "cell 0: asks for TN = 16 in 05_2d_thread_tiling's explorer, whose TN slider offers 1, 2, 4, 8"]


def test_a_trace_of_one_block_under_first_middle_last_is_found():
    nb = checked_notebook("It checks them in the\nfirst, a middle and the last block of a problem:",
             ("print(t.blocks)", "BM=128, BN=128   blocks (0,): 0 races\nBM=12, BN=12   blocks (0, 21, 35): 0 races\n"))
    assert [str(m) for m in prose.block_claims(nb)] == [
        "cell 1: cell 0 says the trace checks the first, a middle and the last block; this output traced blocks (0,)"]


def test_06_s_each_default_configuration_is_found():
    printed = ("05_2d_thread_tiling  (BM=128, BN=128, BK=16, TM=8, TN=8): As 8192 B, Bs 8192 B\n"
               "06_padded            (BM=128, BN=128, BK=16, TM=8, TN=8, PAD=1): As 8704 B, Bs 8192 B\n")
    nb = checked_notebook("The shared arrays of each default configuration, read from a trace:", ("print(x)", printed))
    found = [str(m) for m in prose.default_claims(nb)]
    assert len(found) == 1 and "05_2d_thread_tiling (BM=128, BN=128, BK=16, TM=8, TN=8)" in found[0]


def test_06_s_quoted_string_is_found_and_markdown_is_not():
    shown = nbformat.v4.new_code_cell('if gpu:\n    shown = table\nelse:\n    shown = "Not timed: ..."\nshown')
    fine = nbformat.v4.new_code_cell('if gpu:\n    shown = table\nelse:\n    shown = display.NOT_TIMED\nshown')
    nb = nbformat.v4.new_notebook(cells=[shown, fine, nbformat.v4.new_code_cell('f"{x}"')])
    assert [m.cell for m in prose.quoted_strings(nb)] == [0, 2]


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_an_introduction_is_followed_by_what_it_introduces(notebook):
    found = prose.dangling_introductions(nbformat.read(NOTEBOOKS / notebook, as_version=4))
    assert not found, "\n".join(map(str, found))


def test_04_s_trace_announced_above_another_section_is_found():
    """Cell 38 of 04 as a learner saw it: the trace it announces came after the "Waves" subsection."""
    nb = checked_notebook("## 6 · Banks\n\nThe trace of the kernel as it is now (block 0, warp 0):",
                          "### Waves: how many blocks the GPU runs at once\n\nOccupancy says ... the table above:",
                          ("print(waves)", "BM= 64 BN= 64: 3 blocks per SM\n"),
                          ("print(accesses.bank_summary(trace))", "line  access    requests\n"))
    found = [str(m) for m in prose.dangling_introductions(nb)]
    assert found == ["cell 0: it ends by introducing what comes next, but the next cell is Markdown "
                     "('### Waves: how many blocks the GPU runs at once'); put the cell it introduces right after it"]
    nb.cells[0].source = "The trace:<!-- fact: x -->\n"       # a marker after the colon still ends with it
    assert len(prose.dangling_introductions(nb)) == 1
    nb.cells.insert(1, nb.cells.pop(3))
    assert prose.dangling_introductions(nb) == []

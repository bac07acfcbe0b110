"""The tables of committed results a notebook shows agree with its prose (issue 34, point 1): each names its file,
shows the file the sentence introducing it cites, shows each row once, and shows the number the prose states for
every fact whose row it holds (helpers/maintain/results_on_screen.py). The cells that are not # NBVAL_CHECK_OUTPUT
run here without a GPU: they print committed results."""

import nbformat
import pytest

from support import checked_notebook

from helpers.core.paths import NOTEBOOKS
from helpers.maintain import results_on_screen as screen

pytestmark = pytest.mark.emulator     # a cell the tables need may trace a kernel

STAGES = ("02", "03", "04", "05", "06", "07", "08", "09")


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_every_table_of_committed_results_agrees_with_the_prose(stage):
    nb = nbformat.read(next(NOTEBOOKS.glob(f"{stage}_*.ipynb")), as_version=4)
    found = screen.problems(nb)
    assert not found, "\n".join(map(str, found))


# ---- the rules, on what the notebooks showed before (issue 34) ---------------------------------------------------
TUNING = "results/stages_04_05_h200_2026-11-25.json"
DEFAULT = "tuning_run_tflops/04_1d_thread_tiling/BM64,BN64,BK16,TM16"     # 22.18 in TUNING


def test_a_table_that_names_no_file_or_another_than_its_introduction_is_found():
    nb = checked_notebook(f"The file `{TUNING}` holds every row:", ("committed = gpu_results.gpu_results('04')", "config tflops\n"),
             "More:", ("print(ncu.committed(label))", "Measured ... from `results/ladder_h200_2026-11-22.json`\n"))
    problems = [str(p) for p in screen.problems(nb)]
    assert any("cell 1" in p and "names no file" in p for p in problems), problems
    assert any("cell 1" in p and f"cites {TUNING}" in p for p in problems), problems
    assert not any("cell 3" in p and "cites" in p for p in problems)   # its introduction cites no file


def test_04_s_table_of_four_files_under_one_name_is_found():
    """Cell 27 as a learner saw it: the ladder's name on top, the default's row from several files."""
    printed = ("Measured on NVIDIA H200 on 2026-11-22; from `results/ladder_h200_2026-11-22.json`\n"
               "BM=64, BN=64, BK=16, TM=16   256  80  6.21  22.13  43.75\n"
               "BM=64, BN=64, BK=16, TM=16   256  80  6.20  22.18  44.29\n"
               "BM=64, BN=64, BK=16, TM=16   NaN NaN  6.19  22.15  43.70\n")
    nb = checked_notebook(f"The file `{TUNING}` holds every row:", ("committed.rows", printed),
             f"the default ran at **22.18 TFLOP/s<!-- fact: {DEFAULT} -->**")
    problems = [str(p) for p in screen.problems(nb)]
    assert any(f"cites {TUNING}, but it shows results/ladder_h200_2026-11-22.json" in p for p in problems), problems
    assert any(f"shows the row of {DEFAULT} from results/ladder_h200_2026-11-22.json" in p for p in problems), problems


def test_a_row_shown_twice_or_with_another_number_than_the_prose_is_found():
    header = f"from `{TUNING}`\nconfig                        tflops\n"
    twice = checked_notebook(("committed.table()", header + "BM=64, BN=64, BK=16, TM=16   22.18\nBM=64, BN=64, BK=16, TM=16   22.13\n"),
                f"ran at 22.18 TFLOP/s<!-- fact: {DEFAULT} -->")
    assert any("2 times" in str(p) for p in screen.problems(twice))
    other = checked_notebook(("committed.table()", header + "BM=64, BN=64, BK=16, TM=16   22.13\n"), f"ran at 22.18 TFLOP/s<!-- fact: {DEFAULT} -->")
    assert [str(p) for p in screen.problems(other)] == [
        f"cell 0: cell 1 says 22.18 ({DEFAULT}), but the table shows: BM=64, BN=64, BK=16, TM=16   22.13"]
    same = checked_notebook(("committed.table()", header + "BM=64, BN=64, BK=16, TM=16   22.18\nBM=64, BN=64, BK=16, TM=16, TN=4   33.70\n"),
               f"ran at 22.18 TFLOP/s<!-- fact: {DEFAULT} -->")
    assert screen.problems(same) == []     # 05's longer label is not 04's row
    # a table without the fact's column does not show its value: only its rows are counted
    no_column = checked_notebook(("committed.table()", f"from `{TUNING}`\nconfig   registers\nBM=64, BN=64, BK=16, TM=16   80\n"),
                    f"ran at 22.18 TFLOP/s<!-- fact: {DEFAULT} -->")
    assert screen.problems(no_column) == []


def test_the_prose_s_rounding_is_the_table_s():
    assert screen.holds("x 22.126 y", "22.13") and screen.holds("x 43.75 y", "43.8") and screen.holds("17.4 %", "17")
    assert not screen.holds("x 22.18 y", "22.13") and not screen.holds("registers 22 y", "22.13")
    assert screen.paths("from `results/ncu_*/sass.txt.gz` and results/ncu_h200_2026-11-23/:") == \
        {"results/ncu_h200_2026-11-23"}
    assert screen.covers({"results/ncu_h200_2026-11-23"}, "results/ncu_h200_2026-11-23/comparison.json")
    assert not screen.covers({"results/ncu_h200_2026-11-23"}, "results/ncu_h200_2026-11-22")

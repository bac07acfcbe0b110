"""A prediction's checker says what the notebook shows (issue 34): 04's checker quoted 43.8 % from one run while the
table showed others; 05's blamed a conflict on As where section 6 shows As conflict-free once the compiler merges
the loads, and the conflict on Bs."""

import re

import nbformat
import pytest

from helpers.core.paths import NOTEBOOKS, rel
from helpers.course import exercises
from helpers.course.exercises import solutions
from helpers.measure import facts
from helpers.measure.facts.notebook_04 import TUNING_RUN

pytestmark = pytest.mark.emulator      # 05's message is traced from the kernel


def _notebook(stage):
    return nbformat.read(next(NOTEBOOKS.glob(f"{stage}_*.ipynb")), as_version=4)


@pytest.mark.parametrize("stage", ("04", pytest.param("05", marks=pytest.mark.slow)))
def test_the_table_the_prose_and_the_checker_read_one_run(stage):
    nb = _notebook(stage)
    files = {m for c in nb.cells if c.cell_type == "code"
             for m in re.findall(r"gpu_results\.gpu_results\(\"\d\d\", file=\"([^\"]+)\"\)", c.source)}
    assert files == {rel(TUNING_RUN)}, f"notebook {stage}'s table reads {files}, its facts {rel(TUNING_RUN)}"
    message = exercises.CHECKERS[f"check_{stage}_prediction"](*solutions.solution(f"check_{stage}_prediction")).message
    assert rel(TUNING_RUN) in message
    if stage == "04":
        pct = facts.value("tuning_run_pct_cublas/04_1d_thread_tiling/BM64,BN64,BK16,TM16")
        assert message.startswith(f"{pct:.1f} %")


def _wide_loads_shown(nb) -> dict[tuple[str, str, int], int]:
    """(tile, array, bytes per load) -> ways, from the checked cell of section 6 that counts the loads both ways."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and "-byte loads" in c.source and c.outputs)
    text = "".join(o.get("text", "") for o in cell.outputs)
    found = {}
    for tile, array, size, verdict in re.findall(r"^(\d+ x \d+): load (As|Bs) as\s+(\d+)-byte loads: .*?, "
                                                 r"(no conflict|\d+-way conflict)$", text, re.M):
        found[(tile.replace(" x ", " × "), array, int(size))] = 1 if verdict == "no conflict" else int(verdict.split("-")[0])
    assert len(found) == 8, text
    return found


def _conflicts_said(phrase: str) -> set[tuple[str, int]]:
    return {(array, int(ways)) for ways, array in re.findall(r"(\d+)-way (?:conflict|one) on (As|Bs)", phrase)}


@pytest.mark.slow
def test_05_s_prediction_explains_8_x_8_s_loss_by_the_conflicts_section_6_shows():
    shown = _wide_loads_shown(_notebook("05"))
    message = exercises.check_05_prediction(*solutions.solution("check_05_prediction")).message
    written = re.search(r"As the source writes them, 16 × 4's loads have (.*?) and 8 × 8's (.*?) \(", message)
    merged = re.search(r"Merged by the compiler into (\d+)-byte loads of As and (\d+)-byte loads of Bs, 16 × 4's have "
                       r"(.*?) and 8 × 8's (.*?)\.", message)
    assert written and merged, message
    widths = {"As": int(merged[1]), "Bs": int(merged[2])}
    for tile, said_written, said_merged in (("16 × 4", written[1], merged[3]), ("8 × 8", written[2], merged[4])):
        assert _conflicts_said(said_written) == {(a, w) for (t, a, size), w in shown.items()
                                                 if t == tile and size == 4 and w > 1}, (tile, said_written)
        assert _conflicts_said(said_merged) == {(a, w) for (t, a, size), w in shown.items()
                                                if t == tile and size == widths[a] and w > 1}, (tile, said_merged)

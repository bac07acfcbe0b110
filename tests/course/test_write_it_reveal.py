"""Attempt before reveal (issue 30, points 1 and 3): the course's kernel is shown once the learner's own passes,
or when they ask for it anyway, and that request is recorded where a teacher's grader reads it (the learner's
record, and the metadata of the output the notebook keeps); side by side, the two kernels with the instruments'
numbers; the learner's ladder. On the CPU emulator (the GPU halves: tools/write_it_gpu.py)."""

from __future__ import annotations

import nbformat
import pytest

from helpers.course import write_it
from helpers.course.write_it import record
from helpers.teach.grading import kernel_cells
from helpers.teach.grading.results import ExerciseResult

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


@pytest.fixture
def mine(tmp_path, monkeypatch):
    monkeypatch.setenv(record.FOLDER_VARIABLE, str(tmp_path / "my_kernels"))
    return tmp_path / "my_kernels"


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    write_it.enable(ip)
    return ip


def _as_output(shown) -> dict:
    """What Jupyter keeps of a displayed object in the notebook file."""
    text, meta = shown._repr_markdown_()
    return nbformat.v4.new_output("display_data", data={"text/markdown": text}, metadata={"text/markdown": meta})


def test_nothing_is_revealed_before_an_attempt_passes_unless_asked(mine, shell):
    early = write_it.reveal("04")
    assert early.startswith("**Not yet.**") and "kernels/04_1d_thread_tiling.cu" not in early
    assert "give_up=True" in early and record.events("04", "reveal") == []
    shell.run_cell_magic("kernel", "04", write_it.exercise("04").starter_path.read_text())   # an attempt, not done
    assert write_it.reveal("04").startswith("**Not yet.**")
    asked = write_it.reveal("04", give_up=True)
    assert "kernels/04_1d_thread_tiling.cu" in asked and "```diff" in asked and "before yours passed" in asked
    assert [e["before_passing"] for e in record.events("04", "reveal")] == [True]
    assert record.notes(record.history("04")).startswith("asked to see the course's kernel before passing (")


def test_a_passing_kernel_reveals_and_the_earlier_request_stays_on_record(mine, shell):
    write_it.reveal("04", give_up=True)
    assert shell.run_cell_magic("kernel", "04", write_it.exercise("04").solution_path.read_text()).ok
    after = write_it.reveal("04")
    assert "shown because yours passed" in after and "kernels/04_1d_thread_tiling.cu" in after
    assert [e["before_passing"] for e in record.events("04", "reveal")] == [True, False]
    # the output of the reveal after passing still carries the request before it: the grader reads it there
    cell = nbformat.v4.new_code_cell("write_it.reveal('04')", outputs=[_as_output(after)])
    assert record.notes_from_outputs([cell])["04"].startswith("asked to see the course's kernel before passing")


def test_a_reveal_after_passing_alone_says_nothing_to_the_teacher(mine, shell):
    assert shell.run_cell_magic("kernel", "04", write_it.exercise("04").solution_path.read_text()).ok
    cell = nbformat.v4.new_code_cell("write_it.reveal('04')", outputs=[_as_output(write_it.reveal("04"))])
    assert record.notes_from_outputs([cell]) == {}


def test_the_graders_report_carries_the_record_from_the_outputs_handed_in(mine, monkeypatch):
    hint = write_it.hint("04")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%%kernel 04\n// mine"),
        nbformat.v4.new_code_cell("write_it.reveal('04', give_up=True)",
                                  outputs=[_as_output(write_it.reveal("04", give_up=True))]),
        nbformat.v4.new_code_cell("write_it.hint('04')", outputs=[_as_output(hint)]),
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("display_data", data={"text/plain": "1"},
                                                                       metadata={"text/markdown": {record.METADATA: 7}})])])
    kind = kernel_cells.KernelCells(exercises=(("04", "04"),))
    monkeypatch.setattr(kernel_cells.KernelCells, "judge_source",
                        lambda self, ex_id, source, sandbox, deadline=None: ExerciseResult(f"kernel {ex_id}", "right", "PASSED."))
    [result] = kind.results(nb, "04", None, None)
    assert result.status == "right"
    assert result.message.startswith("[the learner's record: asked to see the course's kernel before passing (")
    assert "hints seen: level 1" in result.message and result.message.endswith("PASSED.")


@pytest.mark.slow
def test_side_by_side_shows_the_diff_both_lessons_and_the_instruments_reasons(mine, shell):
    solution = write_it.exercise("05").solution_path.read_text()
    assert write_it.side_by_side("05").startswith("**Not yet**")
    assert shell.run_cell_magic("kernel", "05", solution).ok
    text = write_it.side_by_side("05")
    assert "```diff" in text and "+++ kernels/05_2d_thread_tiling.cu" in text
    assert "| shared loads per result per k | 0.5 | 0.5 |" in text               # the lesson, from both traces
    assert "| registers per thread |" in text and "| occupancy (warps) |" in text
    assert "| shared wavefronts beyond the ideal (bank conflicts) |" in text
    assert "Times: on a GPU only" in text
    # ptxas gives the exercise's kernel more registers than the course's (no __launch_bounds__): one fewer block
    assert "fewer warps per SM to hide latency" in text


@pytest.mark.slow
def test_the_learners_ladder_checks_each_saved_kernel_beside_the_courses(mine, shell):
    assert shell.run_cell_magic("kernel", "04", write_it.exercise("04").solution_path.read_text()).ok
    shell.run_cell_magic("kernel", "05", write_it.exercise("05").starter_path.read_text())
    ladder = write_it.ladder(ids=("03", "04", "05"))
    rungs = {r.exercise: r for r in ladder.rungs}
    assert rungs["03"].status == "not saved" and rungs["03"].course == 1.0
    assert rungs["04"].status == "passed" and rungs["04"].yours == pytest.approx(8 / 9)
    assert rungs["04"].course == pytest.approx(8 / 9) and rungs["05"].status == "not done yet"
    text = ladder.text()
    assert "04 1D thread tiling" in text and "multiply-adds per shared load" in text and "no times" in text
    assert "| 04 1D thread tiling | passed | multiply-adds per shared load | 0.889 | 0.889 |" in ladder._repr_markdown_()

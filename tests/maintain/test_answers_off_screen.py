"""No exercise's answer is on the screen above it (issue 21, point 2), in notebooks 02-10 and in
their student copies.

For every checker call, the right answer comes from the registry (helpers/course/exercises/solutions/) and is looked
for, in the forms a learner would see it (helpers/maintain/answers_on_screen.py: the Python literal,
any distinctive number, and for small numbers only the forms the course's instruments print them
in), in every markdown cell and output above the call. Here: the committed notebooks, whose outputs
are those of the # NBVAL_CHECK_OUTPUT cells (what a student copy keeps). The outputs of the other
cells exist only when the notebook runs: the root conftest.py makes the same check as nbval runs each
notebook, on what that run printed, and fails the checker's cell.
"""

from types import SimpleNamespace

import nbformat
import pytest

from helpers.core.paths import ROOT
from helpers.course import exercises
from helpers.course.exercises import stage08, stage09, stage10
from helpers.course.exercises.calls import checker_calls
from helpers.maintain import answers_on_screen as screen
from helpers.teach import copies

pytestmark = pytest.mark.emulator

NOTEBOOKS = {stage: next((ROOT / "notebooks").glob(f"{stage}_*.ipynb")) for stage in screen.STAGES}


def _calls(nb) -> list[str]:
    return [call.name for c in nb.cells if c.cell_type == "code" for call in checker_calls(c.source)]


@pytest.mark.slow
@pytest.mark.parametrize("stage", screen.STAGES)
def test_no_answer_is_on_the_screen_above_its_exercise(stage):
    """The prose, the checked outputs, the kernel sources, diffs and committed tables the cells show (run here),
    and the right-answer messages of the checkers above."""
    nb = nbformat.read(NOTEBOOKS[stage], as_version=4)
    assert _calls(nb), f"notebook {stage} calls no checker"
    found = screen.leaks(nb, screen.shown_without_running(nb))
    assert found == [], "\n".join(map(str, found))


@pytest.mark.slow
def test_the_readme_a_learner_reads_first_shows_no_answer():
    found = screen.readme_leaks()
    assert found == [], "\n".join(found)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["08", "09", "10"])
def test_nor_in_the_student_copy(stage):
    copy = copies.student_copy(nbformat.read(NOTEBOOKS[stage], as_version=4))
    assert screen.leaks(copy) == []


@pytest.mark.slow
def test_every_checker_of_the_notebooks_has_forms_to_look_for():
    """A small number (2, 4, 32) is on every screen: an answer made only of such numbers is looked
    for in the forms the instruments print it in, never as a bare number."""
    called = {name for stage in screen.STAGES for name in _calls(nbformat.read(NOTEBOOKS[stage], as_version=4))}
    assert set(screen.EXEMPT) <= called and set(screen.EXEMPT) == {"check_02_exercise_1"}
    for name in sorted(called - set(screen.EXEMPT)):
        args = screen.solution(name)
        forms = screen.forms(name, args)
        numbers = [x for x in screen._components(args) if isinstance(x, (int, float)) and not isinstance(x, bool)]
        specific = [f for f in forms if f.what != "the Python literal of the answer"]
        assert forms, name
        if numbers and not any(screen.distinctive(x) for x in numbers):
            assert specific, f"{name}: answer {args} has only small numbers; give RULES a form to look for them in"


# ---- the forms, on what the notebooks printed before the exercises were moved off the screen -------------
def _nb(*cells):
    """A notebook of (markdown text) and (code source, printed text) cells."""
    nb = nbformat.v4.new_notebook()
    for c in cells:
        if isinstance(c, str):
            nb.cells.append(nbformat.v4.new_markdown_cell(c))
        else:
            src, out = c
            nb.cells.append(nbformat.v4.new_code_cell(
                src, outputs=[nbformat.v4.new_output("stream", name="stdout", text=out)] if out else []))
    return nb


def _old(monkeypatch, answers: dict, constants=()):
    """The registry's answers as they were (the questions then asked about what the notebooks print)."""
    for module, name, value in constants:
        monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(screen, "solution", lambda name: answers[name])


BEFORE = [
    # (checker, its answer then, what a cell above it printed or said, what the form is)
    ("check_08_exercise_1", ((8, 4),),
     "BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8      warps 8, lanes 4 x 8, shared: As 8448 B, Bs 8192 B "
     "(registry: 16640 B)", "the registry table's row"),
    ("check_08_exercise_1", ((8, 4),),
     "a warp's 32 lanes form a (WM/TM) × (WN/TN) = 4 × 8 grid; the block's\n8 warps form a (BM/WM) × (BN/WN) = 4 × 2 "
     "grid", None),
    ("check_08_exercise_2", (16640,), "shared: As 8448 B, Bs 8192 B (registry: 16640 B)", "the number 16640"),
    ("check_09_exercise_1", (24960,), "shared: As 12672 B, Bs 12288 B (registry: 24960 B)", "the number 24960"),
    ("check_09_exercise_2", (5,), "5 of 7 intervals compute while tiles load; at most 1 tile loading",
     "the schedule's summary line"),
    ("check_09_exercise_3", ((136, 152),), "5 races; the first: block 0, between barriers 1 and 2: thread 0 stores As "
     "(shared word 0) at line 136 and thread 2 loads it at line 152, with no barrier between them",
     "a race naming both lines"),
    ("check_10_exercise_1", (112640,), "BM=128, BN=128, BK=32, WM=64, WN=64, STAGES=3, ROUND=1          128 threads, "
     "dynamic shared memory 112640 B", "the number 112640"),
    ("check_10_exercise_2", (512,), "older warp-level HMMA (134 million instructions, 512 multiply-adds each: one "
     "16 × 16 × 8 `mma_sync` is four)", "prose: N multiply-adds"),
    ("check_10_exercise_3", (2.68,), "Dropping the rounding (ROUND = 0) gave 94.2, 25 %,\n  with 2.7 times the RMS "
     "error.", None),
    ("check_10_exercise_4", ((131072, 8192),), "With N = BM = 256 that is 131,072 multiply-adds per instruction",
     "prose: N multiply-adds"),
]


@pytest.mark.parametrize("checker, answer, printed, form", BEFORE, ids=[f"{b[0]}-{i}" for i, b in enumerate(BEFORE)])
def test_the_forms_catch_what_was_on_the_screen(monkeypatch, checker, answer, printed, form):
    _old(monkeypatch, {checker: answer}, [(stage08, "EX08_1_CONFIG", dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8)),
                                          (stage09, "EX09_2_TILES", 6)])
    nb = _nb("## 1 · Something", ("print(table)", printed), "**Exercise.** ...", (f"{checker}('?')", ""))
    found = screen.leaks(nb)
    assert {(leak.checker, leak.cell, leak.call_cell) for leak in found} == {(checker, 1, 3)}, found
    assert form is None or form in {leak.form for leak in found}
    # the same text below the exercise gives nothing away
    assert screen.leaks(_nb("**Exercise.** ...", (f"{checker}('?')", ""), ("print(table)", printed))) == []


def test_markdown_counts_as_on_the_screen(monkeypatch):
    _old(monkeypatch, {"check_10_exercise_3": (2.68,)})
    nb = _nb("ROUND = 0 gave 2.7 times the RMS error.", ("check_10_exercise_3('?')", ""))
    assert [leak.cell for leak in screen.leaks(nb)] == [0]


def test_a_number_is_found_in_the_forms_a_notebook_prints_it_in():
    form = screen.Form("n", screen.number(16640))
    for text in ("16640 B", "(registry: 16640 B)", "16,640 bytes", "16 640", "16\u202f640 bytes"):
        assert screen.find(text, form), text
    for text in ("166400", "116640", "16640.5", "1.16640", "2,16640"):
        assert not screen.find(text, form), text


def test_a_ratio_counts_when_rounded_as_printed_or_accepted_by_the_checker():
    want = stage10._ex10_3_ratio()
    (form,) = [f for f in screen.forms("check_10_exercise_3", (round(want, 2),)) if "times" in f.what]
    assert screen.find(f"errs {want:.1f} times as far", form) and screen.find(f"{want:.2f} times", form)
    assert not screen.find("2.8 times wmma (85)", form)
    assert not screen.find("ROUND = 0 lets the bits drop: 2.65 times the RMS", form)   # 10_wgmma's, not the answer
    assert not exercises.check_10_exercise_3(2.65).ok and "two decimals" in exercises.check_10_exercise_3(2.65).message


def test_small_numbers_alone_are_not_looked_for():
    """09's exercise 2 (9 intervals) is not found in '9 warps' or 'block 9'; its schedule line is."""
    forms = screen.forms("check_09_exercise_2", (9,))
    text = "9 warps; block 9; 0 of 13 intervals"
    assert not any(screen.find(text, f) for f in forms)
    tiles = stage09.EX09_2_TILES
    assert any(screen.find(f"9 of {tiles + 1} intervals compute while tiles load", f) for f in forms)


def test_nbval_report_fails_the_checker_cell_when_a_run_printed_the_answer(monkeypatch):
    """As nbval runs a notebook, what each cell printed counts, not what was stored."""
    _old(monkeypatch, {"check_08_exercise_2": (16640,)})
    nb = _nb("# 08", ("print(x)", ""), "**Exercise 2.**", ("check_08_exercise_2('?')", ""))
    parent = SimpleNamespace(nb=nb, path=ROOT / "notebooks" / "08_made_up.ipynb")

    class IPyNbCell(SimpleNamespace):
        pass

    def run(index, printed):
        item = IPyNbCell(parent=parent, cell=nb.cells[index],
                         test_outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])
        report = SimpleNamespace(outcome="passed", failed=False, longrepr=None)
        screen.nbval_report(item, SimpleNamespace(when="call"), report)
        return report

    monkeypatch.setattr(screen, "_RUN_OUTPUTS", {})
    assert run(1, "registry: 16640 B").outcome == "passed"
    report = run(3, "Not yet: replace the placeholder")
    assert report.outcome == "failed" and "cell 1" in report.longrepr and "16640" in report.longrepr
    monkeypatch.setattr(screen, "_RUN_OUTPUTS", {})
    assert run(1, "nothing to see").outcome == "passed" and run(3, "Not yet").outcome == "passed"


# ---- prose, kernel headers, the README and earlier checkers' messages (issue 34, point 3) -----------------------
OLD_06 = [   # what notebook 06 said above its prediction before issue 34, and the form that finds it
    ("The conflicts of 16 × 4 exist only in the source: stage 05's default\n  gives the three fixes nothing to do.",
     "prose: nothing for the fixes to do"),
    ("Transposing removes the first,\n  and section 5 shows it gained 4.7%<!-- fact: run_06_07_change_pct/"
     "06_transposed_a/BM128,BN128,BK8,TM8,TN8 --> in exactly that configuration.", "a marked fact of the run"),
]


@pytest.mark.parametrize("text, form", OLD_06, ids=[f for _, f in OLD_06])
def test_06_s_prose_above_its_prediction_is_found(text, form):
    found = screen.leaks(_nb(text, ("check_06_prediction('?')", "")))
    assert [(leak.cell, leak.form) for leak in found] == [(0, form)], found


def test_a_kernel_header_the_notebook_shows_counts(monkeypatch):
    """06's kernel header, shown by display.kernel_source above the prediction, said that padding only costs."""
    from helpers.core.markdown import Markdown
    from helpers.views import display
    header = ("// In 05's default 16 x 4 configuration a warp holds a single thread row, its reads of A are "
              "broadcasts\n// with no conflict to remove, and padding only costs.")
    monkeypatch.setattr(display, "kernel_source", lambda name: Markdown(f"```cpp\n{header}\n```"))
    nb = _nb("## 2 · The kernels", ("from helpers import display, stages\npadded = stages.variant('06_padded')", ""),
             ("display.kernel_source(padded.name)", ""), "### Predict", ("check_06_prediction('?')", ""))
    shown = screen.shown_without_running(nb)
    assert 2 in shown and "padding only costs" in screen.shown(nb.cells[2], shown[2])
    assert [(leak.cell, leak.form) for leak in screen.leaks(nb, shown)] == [(2, "prose: a fix only costs")]
    assert screen.leaks(nb) == []      # without running the display cell, the header is not seen


def test_an_earlier_checker_s_right_message_counts(monkeypatch):
    """A learner who answered exercise 1 right reads its message before exercise 2."""
    _old(monkeypatch, {"check_08_exercise_1": ((8, 4),), "check_08_exercise_2": (16640,)})
    monkeypatch.setattr(screen, "right_message", lambda name: "Right: the tiles take 16640 B." if name ==
                        "check_08_exercise_1" else "Right.")
    nb = _nb(("check_08_exercise_1('?')", ""), "**Exercise 2.**", ("check_08_exercise_2('?')", ""))
    assert [(leak.checker, leak.cell) for leak in screen.leaks(nb)] == [("check_08_exercise_2", 0)]


@pytest.mark.slow
def test_the_readme_s_old_results_table_answers_04_s_prediction(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("## Results\n\n| stage | kernel | configuration | TFLOP/s | % of cuBLAS |\n|---|---|---|---:|---:|\n"
                      "| 04 1D thread tiling | `04_1d_thread_tiling` | BM=64, BN=64, BK=16, TM=16 | 22.25 | 44.2 |\n")
    found = screen.readme_leaks(readme)
    assert any(f.startswith("check_04_prediction: README.md shows its answer as the kernel's row of a results table")
               for f in found), found

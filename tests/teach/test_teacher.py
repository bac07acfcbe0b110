"""The teacher kit: solutions for every checker, student and teacher copies, and the grader.

The grader test executes one notebook (stage 02, its setup cells and Exercises section only,
--exercises-only) in a fresh kernel, in the grader's sandbox (tests/teach/test_sandbox.py tests the
sandbox itself): about 10-20 s."""

import ast
import csv
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.run import backend
from helpers.course import exercises
from helpers.course.exercises import solutions
from helpers.course.exercises.calls import checker_calls
from helpers.teach import copies, sandbox
from helpers.teach.grading import notebook, results, run

pytestmark = pytest.mark.emulator

ROOT = paths.ROOT
NB02 = ROOT / "notebooks" / "02_naive.ipynb"


# ---- the registry of checkers and solutions --------------------------------------------------------
CHECKERS = exercises.CHECKERS


def _checker_functions(module) -> dict:
    return {n: f for n, f in vars(module).items() if exercises.CHECKER_NAME.match(n) and inspect.isfunction(f)}


def test_the_registry_covers_every_checker_of_every_stage_module():
    assert len(CHECKERS) >= 30 and list(CHECKERS) == sorted(CHECKERS)          # in stage order
    for module in exercises.STAGE_MODULES:
        stage = module.__name__.rsplit("stage", 1)[1]
        defined = _checker_functions(module)
        assert defined and all(n.startswith(f"check_{stage}_") for n in defined), module.__name__
        assert set(defined) <= set(solutions.SOLUTIONS), f"{module.__name__}: the registry misses some"
        assert all(CHECKERS[n] is f for n, f in defined.items())
    assert _checker_functions(exercises) == CHECKERS           # the package re-exports every one
    assert set(solutions.SOLUTIONS) == set(CHECKERS)


def test_the_registry_lives_apart_from_the_checkers_where_the_sandbox_hides_it():
    folder = ROOT / "helpers" / "course" / "exercises" / "solutions"
    assert Path(solutions.__file__).parent == folder and "helpers/course/exercises/solutions" in sandbox.HIDDEN
    for module in (exercises, *exercises.STAGE_MODULES):      # the checkers hold no registry of their own
        assert not hasattr(module, "SOLUTIONS") and not hasattr(module, "solution"), module.__name__


def test_every_checker_a_notebook_calls_is_registered():
    called = {c.name for p in (ROOT / "notebooks").glob("*.ipynb")
              for cell in nbformat.read(p, as_version=4).cells if cell.cell_type == "code"
              for c in checker_calls(cell.source)}
    assert called and called <= set(solutions.SOLUTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_has_a_solution_it_accepts(name):
    args = solutions.solution(name)
    fb = CHECKERS[name](*args)
    assert fb.ok and fb.status == "right", fb
    assert ast.literal_eval(f"({copies.as_source(args)},)") == args   # the source reads back as the answer


def test_solution_of_an_unknown_checker_says_what_to_add():
    with pytest.raises(KeyError, match="helpers/course/exercises/solutions/__init__.py.*exercises/stage99.py"):
        solutions.solution("check_99_exercise_1")


def test_as_source():
    assert copies.as_source(((5, 13),)) == "(5, 13)"
    assert copies.as_source((1, 32)) == "1, 32"
    assert copies.as_source(({3, 1, 2},)) == "{1, 2, 3}" and copies.as_source((set(),)) == "set()"
    assert copies.as_source(("A",)) == "'A'" and copies.as_source(((7,),)) == "(7,)"


# ---- placeholders and first-time messages --------------------------------------------------------
def test_every_placeholder_of_the_notebooks_counts_as_not_attempted():
    known = copies.placeholders()
    called = {c.name for p in (ROOT / "notebooks").glob("*.ipynb")
              for cell in nbformat.read(p, as_version=4).cells if cell.cell_type == "code"
              for c in checker_calls(cell.source)}
    assert called and called <= set(known)
    for name in called:
        fb = CHECKERS[name](*ast.literal_eval(f"({known[name]},)"))
        assert fb.status == "not attempted" and not fb.ok, (name, fb)
        assert "Then run the cell again" in fb.message and str(fb).startswith("Not yet: replace the placeholder")


def test_feedback_statuses():
    assert exercises.check_02_exercise_1("02_naive_coalesced").status == "right"
    wrong = exercises.check_02_exercise_1("02_naive")
    assert wrong.status == "wrong" and str(wrong).startswith("Not yet:")


def test_the_emulator_banner_says_what_it_means(cpu_backend):
    lines = backend.banner().splitlines()
    assert lines[0].startswith("Backend: CPU emulator") and len(lines) == 2
    assert "every notebook and exercise works here" in lines[1] and "results/" in lines[1]


# ---- finding and replacing checker calls -----------------------------------------------------------
def test_checker_calls_in_source():
    src = ('# «naïve» first\nfrom helpers.course.exercises import check_02_exercise_1\ncheck_02_exercise_1("?")\n'
           'x = exercises.check_05_exercise_2((\n    "?", "?"))\nprint(check_09_exercise_2())\nother("?")')
    calls = checker_calls(src)
    assert [(c.name, c.args) for c in calls] == [("check_02_exercise_1", '"?"'),
                                                 ("check_05_exercise_2", '(\n    "?", "?")'),
                                                 ("check_09_exercise_2", "")]
    new = copies.replace_answers(src, lambda name, args: {"check_02_exercise_1": "'x'",
                                                           "check_09_exercise_2": "5"}.get(name))
    assert "check_02_exercise_1('x')" in new and "check_09_exercise_2(5)" in new and '(\n    "?", "?")' in new
    assert checker_calls("!ls\ncheck_02_exercise_1(1)") == []   # a magic: not Python, left alone


# ---- copies -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nb02_and_its_teacher_copy():
    original = nbformat.read(NB02, as_version=4)
    teacher_nb = copies.teacher_copy(original, machine="a test machine")
    return original, teacher_nb


def _exercise_sources(nb):
    return [c.source for c in nb.cells if c.cell_type == "code" and checker_calls(c.source)]


def test_teacher_copy_fills_in_every_answer(nb02_and_its_teacher_copy):
    original, teacher_nb = nb02_and_its_teacher_copy
    assert teacher_nb.cells[1].source.startswith("**Teacher copy.**") and "a test machine" in teacher_nb.cells[1].source
    calls = [c for s in _exercise_sources(teacher_nb) for c in checker_calls(s)]
    assert len(calls) == 5     # the prediction before section 4, and exercises 1-4
    for c in calls:
        assert CHECKERS[c.name](*ast.literal_eval(f"({c.args},)")).ok
    assert len(teacher_nb.cells) == len(original.cells) + 1


def test_student_copy_keeps_the_checkers_and_loses_the_solutions(nb02_and_its_teacher_copy, tmp_path):
    original, teacher_nb = nb02_and_its_teacher_copy
    student = copies.student_copy(teacher_nb)
    assert _exercise_sources(student) == _exercise_sources(original)     # every call back on its placeholder
    assert not any(c.source.startswith("**Teacher copy.**") for c in student.cells)
    unrevealed = copies._answered_below_prediction(original)
    assert [c.source for i, c in enumerate(student.cells) if i not in unrevealed] == \
        [c.source for i, c in enumerate(original.cells) if i not in unrevealed]
    checked = [c for c in student.cells if c.cell_type == "code" and c.outputs]
    assert checked and all("NBVAL_CHECK_OUTPUT" in c.source for c in checked)   # what nbval compares, kept
    bare = copies.student_copy(teacher_nb, hints=False, outputs=False)
    assert not any(c.get("outputs") for c in bare.cells if c.cell_type == "code")
    assert "<summary>Hint" in "".join(c.source for c in original.cells)
    assert "<summary>Hint" not in "".join(c.source for c in bare.cells)
    assert _exercise_sources(bare) == _exercise_sources(original)


@pytest.mark.parametrize("path", sorted(paths.NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem[:2])
def test_a_student_copy_shows_no_measurement_a_prediction_asks_about(path):
    """Cold learners found the prediction's answer in the outputs a student copy kept below it: from the
    prediction to the end of the performance section the copy has no outputs and no nbval marks."""
    original = nbformat.read(path, as_version=4)
    student = copies.student_copy(original)
    cells = original.cells
    at = [i for i, c in enumerate(cells) if c.cell_type == "code" and "_prediction(" in c.source]
    unrevealed = copies._answered_below_prediction(original)
    if not at:
        assert not unrevealed
        return
    # the measurements it asks about are the performance section's: just after the prediction (06-12) or two
    # sections below it, after the learner's kernel and its correctness (02-05), whose checked outputs stay
    headings = [i for i in range(at[0], len(cells)) if cells[i].source.startswith("## ")] + [len(cells)]
    performance = [k for k, i in enumerate(headings[:-1]) if "Performance" in cells[i].source.splitlines()[0]]
    assert performance, "the prediction asks about a performance section below it"
    first, end = headings[performance[0]], headings[performance[0] + 1]
    assert unrevealed == {i for i in (*range(at[0] + 1, headings[0]), *range(first + 1, end))
                          if cells[i].cell_type == "code"}
    assert any(c.cell_type == "code" for c in cells[first:end]), "the performance section measures something"
    for i in unrevealed:
        assert not student.cells[i].outputs and "NBVAL_CHECK_OUTPUT" not in student.cells[i].source
    kept = [c for i, c in enumerate(student.cells) if i not in unrevealed and c.cell_type == "code" and c.outputs]
    assert kept, "the checked outputs outside the performance section stay"


@pytest.mark.slow
def test_cli_writes_student_and_teacher_copies(tmp_path):
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "student-copies", str(tmp_path / "s"), str(NB02),
                        "--no-hints"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "wrote 1 student copy" in r.stdout, r.stderr
    nb = nbformat.read(tmp_path / "s" / NB02.name, as_version=4)
    assert _exercise_sources(nb) == _exercise_sources(nbformat.read(NB02, as_version=4))
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "student-copies", str(tmp_path), "nope.ipynb"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no such notebook: nope.ipynb" in r.stderr


# ---- grading ------------------------------------------------------------------------------------
def test_exercise_cells_are_the_setup_and_the_exercises():
    for name in ("02_naive", "09_double_buffering"):   # 09: Summary and Exercises share a cell
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        cells = run.exercise_cells(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert cells[0] is code[0] and cells[1] is code[1]     # the first cell and the imports
        assert [c for c in cells if checker_calls(c.source)] == \
               [c for c in code if checker_calls(c.source)]
        assert len(cells) < len(nb.cells) / 2


@pytest.mark.slow
def test_grade_reports_right_wrong_not_attempted_and_error(nb02_and_its_teacher_copy, tmp_path):
    if sandbox.find_bwrap() is None and not os.environ.get("CI"):
        pytest.skip("grading needs bubblewrap (sudo apt-get install bubblewrap); .ci/run installs it")
    _, teacher_nb = nb02_and_its_teacher_copy
    nb = copies.student_copy(teacher_nb)
    answers = {"check_02_exercise_1": "'02_naive_coalesced'",    # right
               "check_02_exercise_2": "(13, 5)"}                 # wrong: swapped
    for cell in nb.cells:                                        # exercise 3 stays "?": not attempted
        if cell.cell_type == "code":
            cell.source = copies.replace_answers(cell.source, lambda name, args: answers.get(name))
            if "check_02_exercise_4(" in cell.source:
                cell.source = "1 / 0   # a crash before the check\n" + cell.source
    path = tmp_path / "alice_02.ipynb"
    nbformat.write(nb, path)
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", str(path), str(tmp_path / "bob.ipynb"),
                        "--exercises-only", "--timeout", "300", "--json", str(tmp_path / "g.json"),
                        "--csv", str(tmp_path / "g.csv")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "no such notebook" in r.stderr      # bob handed nothing in: refused before running
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", str(path), "--exercises-only",
                        "--timeout", "300", "--json", str(tmp_path / "g.json"), "--csv", str(tmp_path / "g.csv")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "1 right, 1 wrong" in r.stdout and "1 error" in r.stdout
    graded = json.loads((tmp_path / "g.json").read_text())
    assert graded[0]["stage"] == "02" and graded[0]["mode"] == "setup and exercise cells"
    checked = [e for e in graded[0]["exercises"] if isinstance(e["exercise"], int)]
    assert [(e["exercise"], e["status"]) for e in checked] == [(1, "right"), (2, "wrong"), (3, "not attempted"),
                                                               (4, "error")]
    assert [e["status"] for e in graded[0]["exercises"] if e["check"] == "check_02_prediction"] == ["not attempted"]
    kernels = [e for e in graded[0]["exercises"] if not isinstance(e["exercise"], int)
               and e["check"] != "check_02_prediction"]   # a %%kernel cell
    assert all(e["status"] == "not attempted" and "NOT DONE YET" in e["message"] for e in kernels)  # the starter
    messages = {e["exercise"]: e["message"] for e in checked}
    assert "swapped" in messages[2] and "run the cell again" in messages[3] and "ZeroDivisionError" in messages[4]
    rows = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert [row["status"] for row in rows][:4] == ["right", "wrong", "not attempted", "error"]


def test_grade_survives_a_file_that_is_not_a_notebook(tmp_path):
    path = tmp_path / "05_broken.ipynb"
    path.write_text("{ not json")
    g = notebook.grade(path)
    assert g.results == [] and "could not read it" in g.problem
    assert "no exercises graded" in results.report([g])

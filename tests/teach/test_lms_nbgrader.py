"""`teacher export nbgrader`: nbgrader source notebooks (helpers/teach/lms/nbgrader.py), checked without nbgrader.

Each checker call of notebook 02 becomes an answer cell (its right answer between nbgrader's solution markers,
then the checker's call on it) and a locked test cell; replacing the solution regions as nbgrader's release does
leaves no right answer in the notebook; the answer and test cells of an exercise, run in one namespace as
nbgrader runs them, pass with the right answer and fail with a wrong or missing one."""

import re

import nbformat
import pytest

from helpers.core import paths
from helpers.course.exercises import CHECKERS, solutions
from helpers.course.exercises.calls import checker_calls
from helpers.course.write_it import magic
from helpers.teach import copies, points
from helpers.teach.lms import nbgrader

NB02 = paths.ROOT / "notebooks" / "02_naive.ipynb"
KERNEL_SOLUTION = paths.ROOT / "helpers" / "course" / "write_it" / "solutions" / "02.cu"
GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]+$")          # what nbgrader accepts
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("nbgrader")
    written = nbgrader.export(out, [NB02])
    assert written == [out / "source" / "stage_02" / NB02.name]
    return out, nbformat.read(written[0], as_version=4)


def release(nb):
    """What `nbgrader generate_assignment` does to the solution cells: each region between the markers becomes
    the stub, indented as the BEGIN line (nbgrader's ClearSolutions), and outputs go."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            lines, inside = [], False
            for line in cell.source.split("\n"):
                if "BEGIN SOLUTION" in line:
                    assert not inside, "nested BEGIN SOLUTION"
                    inside = True
                    lines += [re.match(r"\s*", line).group(0) + s for s in STUB]
                elif "END SOLUTION" in line:
                    assert inside, "END SOLUTION without BEGIN"
                    inside = False
                elif not inside:
                    lines.append(line)
            assert not inside, "no END SOLUTION"
            cell.source = "\n".join(lines)
        if cell.cell_type == "code":
            cell.outputs = []
    return nb


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_every_checker_call_becomes_an_answer_cell_and_a_locked_test_cell(exported):
    out, nb = exported
    course = nbformat.read(NB02, as_version=4)
    checks = [c.name for cell in course.cells if cell.cell_type == "code"
              for c in checker_calls(cell.source) if c.name in CHECKERS]
    assert len(checks) == 5, checks                 # the prediction and exercises 1-4
    table = points.defaults()["02"]
    for check in checks:
        name = nbgrader.answer_name(check)
        answer = [i for i, c in enumerate(nb.cells) if meta(c).get("solution") and f"{name} = " in c.source]
        assert len(answer) == 1, check
        a, t = nb.cells[answer[0]], nb.cells[answer[0] + 1]
        assert meta(a) | {"grade_id": None} == {"grade": False, "grade_id": None, "locked": False, "schema_version": 3,
                                                "solution": True, "task": False}
        region = re.search(r"### BEGIN SOLUTION\n(.*)\n### END SOLUTION", a.source, re.S)
        assert region and region.group(1).startswith(f"{name} = "), a.source
        assert re.search(rf"\b{check}\(\*?{name}\)", a.source[region.end():]), "the learner's call on the answer"
        assert meta(t) | {"grade_id": None} == {"grade": True, "grade_id": None, "locked": True, "points":
                                                table[check], "schema_version": 3, "solution": False, "task": False}
        assert f"import {check} as _check" in t.source and "assert _feedback.ok" in t.source
    metas = [meta(c) for c in nb.cells if meta(c)]
    ids = [m["grade_id"] for m in metas]
    assert len(ids) == len(set(ids)) and all(GRADE_ID.match(i) for i in ids), ids
    assert all(m.get("schema_version") == 3 and (not m["grade"] or isinstance(m["points"], float)) for m in metas)
    cell_ids = [c.id for c in nb.cells]
    assert len(cell_ids) == len(set(cell_ids))
    nbformat.validate(nb)
    readme = (out / "README.md").read_text()
    assert "nbgrader generate_assignment stage_02" in readme and "nbgrader autograde stage_02" in readme
    assert "no sandbox" in readme and "c.Execute.timeout" in readme


def test_the_kernel_cell_holds_the_solution_between_markers_and_each_step_is_a_test(exported):
    if not KERNEL_SOLUTION.is_file():
        pytest.skip("no write-it solutions here (a teacher's copy of the course has them)")
    _, nb = exported
    kernel = [c for c in nb.cells if meta(c).get("grade_id") == "kernel_02_answer"]
    assert len(kernel) == 1 and meta(kernel[0])["solution"] and not meta(kernel[0])["grade"]
    assert kernel[0].source.startswith("%%kernel 02\n// ### BEGIN SOLUTION\n")
    assert KERNEL_SOLUTION.read_text().rstrip("\n") in kernel[0].source
    ids = [meta(c).get("grade_id") for c in nb.cells]
    first = ids.index("tbt_kernel_folder")
    assert first < ids.index("kernel_02_answer") < ids.index("kernel_02_check")
    steps = {meta(c)["grade_id"]: meta(c)["points"] for c in nb.cells if meta(c).get("grade")
             and meta(c)["grade_id"].startswith("kernel_02_")}
    want = {f"kernel_02_{k}": v for k, v in points.KERNEL_STEPS.items() if v > 0 and k not in points.GPU_ONLY}
    assert steps == want and all(meta(c)["locked"] for c in nb.cells if meta(c).get("grade"))


def test_the_released_notebook_holds_no_right_answer(exported):
    _, nb = exported
    released = release(nb)
    code = "\n".join(c.source for c in released.cells if c.cell_type == "code")
    for cell in released.cells:
        if meta(cell).get("solution"):
            assert "\n".join(STUB) in cell.source
    for check in ("check_02_prediction", *(f"check_02_exercise_{k}" for k in range(1, 5))):
        name = nbgrader.answer_name(check)
        assert not re.search(rf"^\s*{name}\s*=", code, re.M), f"{name} is still assigned"
        right = copies.as_source(solutions.solution(check))
        for cell in released.cells:        # no checker call, nor anything else, holds the answer's text
            for call in checker_calls(cell.source) if cell.cell_type == "code" else ():
                assert call.args.strip() not in (right, f"({right})"), (check, cell.source)
        assert right not in code, check
    if KERNEL_SOLUTION.is_file():
        starter = (paths.ROOT / "helpers" / "course" / "write_it" / "starters" / "02.cu").read_text()
        solved = [ln.strip() for ln in KERNEL_SOLUTION.read_text().splitlines()
                  if len(ln.strip()) > 12 and ln.strip() not in starter]
        assert solved and not [ln for ln in solved if ln in code]


def _run(cells, namespace):
    for cell in cells:
        exec(compile(cell.source, f"<{meta(cell)['grade_id']}>", "exec"), namespace)


def test_an_exercise_s_test_cell_passes_with_the_right_answer_and_fails_otherwise(exported, capsys):
    _, nb = exported
    answer = next(c for c in nb.cells if meta(c).get("grade_id") == "02_exercise_1_answer")
    test = next(c for c in nb.cells if meta(c).get("grade_id") == "02_exercise_1_test")
    _run([answer, test], {})                       # the source's answer: the test passes

    wrong = nbformat.from_dict(answer)
    wrong.source = answer.source.replace("answer_02_1 = '02_naive_coalesced'", "answer_02_1 = '02_naive'")
    assert wrong.source != answer.source
    namespace = {}
    _run([wrong], namespace)
    with pytest.raises(AssertionError, match="check_02_exercise_1.*wrong: in 02_naive, threadIdx.x picks the ROW"):
        _run([test], namespace)

    student = next(c for c in release(nb).cells if meta(c).get("grade_id") == "02_exercise_1_answer")
    namespace = {}
    with pytest.raises(NotImplementedError):        # the released cell as a student gets it
        _run([student], namespace)
    with pytest.raises(NameError, match="answer_02_1"):
        _run([test], namespace)


def test_a_kernel_cell_holding_nbgrader_s_stub_brings_the_starter(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(magic.FOLDER_VARIABLE, str(tmp_path))
    assert magic.run_cell("02", "\n".join(STUB) + "\n") is None
    out = capsys.readouterr().out
    assert "here is the starter" in out and "sgemm_coalesced" in out
    assert not magic.saved_path("02").exists()


def test_a_kernel_left_on_its_starter_fails_every_step_test(exported, tmp_path, monkeypatch, capsys):
    if not KERNEL_SOLUTION.is_file():
        pytest.skip("no write-it solutions here (a teacher's copy of the course has them)")
    _, nb = exported
    monkeypatch.setenv(magic.FOLDER_VARIABLE, str(tmp_path))
    magic.save("02", (paths.ROOT / "helpers" / "course" / "write_it" / "starters" / "02.cu").read_text())
    cells = [c for c in nb.cells if meta(c).get("grade_id", "").startswith("kernel_02_")
             and meta(c)["grade_id"] != "kernel_02_answer"]
    namespace = {}
    _run(cells[:1], namespace)                     # the locked check cell never raises
    assert len(cells) == 5
    for step in cells[1:]:
        with pytest.raises(AssertionError, match="not attempted: the saved kernel is the starter"):
            _run([step], namespace)


def test_the_command_line_writes_the_export(tmp_path, capsys):
    from helpers.cli import main
    assert main(["teacher", "export", "nbgrader", str(tmp_path), str(NB02)]) == 0
    assert "assignments stage_02" in capsys.readouterr().out
    assert (tmp_path / "source" / "stage_02" / NB02.name).is_file() and (tmp_path / "README.md").is_file()

"""nbgrader: `teacher export nbgrader OUT [NOTEBOOK ...]` writes nbgrader *source* notebooks,
OUT/source/stage_NN/<notebook>.ipynb, and OUT/README.md (what to run, what is graded, the trust model).

Tagging the course's checker cells would not do: a solution cell without solution markers is replaced whole
by `nbgrader generate_assignment` (the checker's call with it), and a test cell is restored from the source
when nbgrader grades (every student would get the teacher's answer). So each checked exercise's cell
`check_NN_exercise_K(<placeholder>)` becomes two cells:

1. an autograded-answer cell (solution, not graded): `answer_NN_K = <the right answer>` between nbgrader's
   solution markers, then the checker's call on `answer_NN_K`, so the learner still sees the feedback;
2. an autograder-tests cell (graded, locked, its points from helpers/teach/points.py or --points) asserting
   that the checker's verdict on `answer_NN_K` is right, its feedback as the message.

A write-it `%%kernel NN` cell becomes a solution cell whose kernel (the course's, helpers/course/write_it/
solutions/) lies between the markers; after the exercise's last kernel cell come a locked cell that checks the
kernel the cells saved, and a graded test cell per step of the check that earns points (compiles, correct,
safe, lesson; timing runs only on a GPU and is left out). A locked cell before the first kernel cell gives
nbgrader's runs (validate, autograde) a fresh folder for saved kernels, so no run judges another's kernel.
Every other cell is kept as a student copy has it (helpers/teach/copies.py), with its outputs cleared.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from helpers.course import write_it
from helpers.course.exercises import CHECKER_NAME, CHECKERS, solutions
from helpers.course.exercises.calls import checker_calls
from helpers.course.write_it.verdict import STEPS
from helpers.teach import copies, points
from helpers.teach.grading import notebook
from helpers.teach.grading.kernel_cells import KernelCells

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
KERNEL_BEGIN, KERNEL_END = "// " + BEGIN, "// " + END
SCHEMA_VERSION = 3
KERNEL_FOLDER_ID = "tbt_kernel_folder"


def assignment(stage: str) -> str:
    return f"stage_{stage}"


def metadata(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
             points_: float | None = None) -> dict:
    """A cell's nbgrader metadata (schema 3): an answer (solution), a test (grade + locked) or read-only (locked)."""
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points_ if points_ is not None else 0.0
    return {"nbgrader": meta}


def _cell(source: str, cell_id: str, meta: dict):
    import nbformat
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = cell_id.replace("_", "-")[:64]
    cell.metadata.update(meta)
    return cell


def answer_name(check: str) -> str:
    """check_02_exercise_3 -> answer_02_3; check_02_prediction -> answer_02_prediction."""
    m = CHECKER_NAME.match(check)
    return f"answer_{m.group(1)}_{m.group(2) or 'prediction'}"


def _label(check: str) -> str:
    m = CHECKER_NAME.match(check)
    return f"exercise {m.group(2)} of stage {m.group(1)}" if m.group(2) else f"the prediction of stage {m.group(1)}"


def _arity(args_source: str) -> int:
    return len(ast.parse(f"f({args_source})", mode="eval").body.args)


# ---- checker cells --------------------------------------------------------------------------------------
def checker_cells(cell, table: dict, missing: list[str]) -> list:
    """The answer cell and a test cell per checker call of `cell` (the cell alone, unchanged, where it calls
    no checker or one without a solution)."""
    calls = [c for c in checker_calls(cell.source) if c.name in CHECKERS]
    answers = {}
    for call in calls:
        try:
            answers[call.name] = solutions.solution(call.name)
        except KeyError:
            missing.append(call.name)
    calls = [c for c in calls if c.name in answers]
    if not calls:
        return [cell]
    source = cell.source
    regions = []
    for call in reversed(calls):
        name, many = answer_name(call.name), _arity(call.args) > 1
        value = "(" + copies.as_source(answers[call.name]) + ")" if many else copies.as_source(answers[call.name])
        shape = f"({call.args})" if many else call.args
        regions.insert(0, f"# Your answer to {_label(call.name)}, in the shape of: {name} = {shape}\n"
                          f"{BEGIN}\n{name} = {value}\n{END}")
        source = source[:call.start] + ("*" if many else "") + name + source[call.end:]
    first_line = cell.source.count("\n", 0, min(c.start for c in calls))   # the regions go above its line
    lines = source.split("\n")
    head = "\n".join(lines[:first_line])
    answer_source = "\n".join(p for p in (head, "\n".join(regions), "\n".join(lines[first_line:])) if p)
    stage, first = CHECKER_NAME.match(calls[0].name).group(1), calls[0].name.removeprefix("check_")
    out = [_cell(answer_source, f"{first}_answer", metadata(f"{first}_answer", solution=True))]
    for call in calls:
        short = call.name.removeprefix("check_")
        worth = float(table.get(stage, {}).get(call.name, points.EXERCISE))
        out.append(_cell(test_source(call.name, _arity(call.args) > 1, worth), f"{short}_test",
                         metadata(f"{short}_test", grade=True, locked=True, points_=worth)))
    return out


def test_source(check: str, many: bool, worth: float) -> str:
    name = answer_name(check)
    return (f"# Autograder test: {_label(check)}, {points.number(worth)} point{'s' * (worth != 1)} (locked: nbgrader "
            f"restores this cell when it grades).\n"
            f"from helpers.course.exercises import {check} as _check\n"
            f"_feedback = _check({'*' if many else ''}{name})\n"
            f"assert _feedback.ok, f\"{check}({'*' if many else ''}{name}): {{_feedback.status}}: {{_feedback.message}}\"")


# ---- kernel cells ---------------------------------------------------------------------------------------
KINDS = KernelCells()
FOLDER_SOURCE = """# Autograder setup (locked): while nbgrader validates or grades this notebook, the %%kernel cells save to a
# fresh folder, so a check judges the kernel this run saved, never one an earlier run left behind.
import os as _os, tempfile as _tempfile
if _os.environ.get("NBGRADER_EXECUTION"):
    _os.environ["TBT_MY_KERNELS"] = _tempfile.mkdtemp(prefix="tbt-kernels-")"""

CHECK_SOURCE = """# Autograder (locked): the kernel of exercise {id} that the %%kernel {id} cells above saved, checked again for
# the tests below (a kernel left on its starter earns nothing, though the starter compiles).
from helpers.core.kernel_source import same_kernel as _same_kernel
from helpers.course.write_it import exercise as _exercise, magic as _magic
_kernel_{id} = {{"verdict": None, "why": ""}}
try:
    _source = _magic.load("{id}")
    if not _source.strip() or _same_kernel(_source, _exercise("{id}").starter_path.read_text()):
        _kernel_{id}["why"] = "not attempted: the saved kernel is the starter, untouched"
    else:
        _kernel_{id}["verdict"] = _magic.checked("{id}", _magic.saved_path("{id}"), "your saved kernel", timed=False)
except Exception as _error:
    _kernel_{id}["why"] = f"not checked: {{type(_error).__name__}}: {{_error}}"
print(_kernel_{id}["verdict"] or _kernel_{id}["why"])"""

STEP_SOURCE = """# Autograder test: %%kernel {id}, step "{step}" ({what}), {worth} (locked).
assert _kernel_{id}["verdict"] is not None, _kernel_{id}["why"]
_step = next((s for s in _kernel_{id}["verdict"].steps if s.name == "{step}"), None)
assert _step is not None and _step.ok, (f"step {step} " + ("not reached" if _step is None else "failed") + ": "
                                        + _kernel_{id}["verdict"].last_line())"""


def kernel_solution_cell(cell, exercise_id: str):
    """The `%%kernel NN` cell with the course's kernel between the solution markers (None: no solution here)."""
    try:
        kernel = write_it.solution(exercise_id).rstrip("\n")
    except Exception:
        return None
    head = cell.source.split("\n", 1)[0].rstrip()
    cid = f"kernel_{exercise_id}_answer"
    return _cell(f"{head}\n{KERNEL_BEGIN}\n{kernel}\n{KERNEL_END}", cid, metadata(cid, solution=True))


def kernel_test_cells(exercise_id: str, stage: str, table: dict) -> list:
    steps = table.get(stage, {}).get(f"kernel {exercise_id}", points.KERNEL_STEPS)
    cid = f"kernel_{exercise_id}_check"
    out = [_cell(CHECK_SOURCE.format(id=exercise_id), cid, metadata(cid, locked=True))]
    for step, worth in steps.items():
        if worth > 0 and step not in points.GPU_ONLY:
            gid = f"kernel_{exercise_id}_{step}"
            text = STEP_SOURCE.format(id=exercise_id, step=step, what=STEPS[step],
                                      worth=f"{points.number(worth)} point{'s' * (worth != 1)}")
            out.append(_cell(text, gid, metadata(gid, grade=True, locked=True, points_=float(worth))))
    return out


def _kernel_id(cell) -> str | None:
    m = KINDS._head().match(cell.source) if cell.cell_type == "code" else None
    return m.group(1) if m else None


# ---- notebooks ------------------------------------------------------------------------------------------
def source_notebook(nb, table: dict, known: dict[str, str] | None = None) -> tuple[object, list[str]]:
    """The nbgrader source notebook of a course notebook, and the checkers and kernels left as they were (no
    solution for them)."""
    nb = copies.student_copy(nb, outputs=False, known=known)
    stage = notebook.stage_of(nb, Path("x"))
    missing: list[str] = []
    kernel_ids = [k for k in (_kernel_id(c) for c in nb.cells) if k]
    last = {k: max(i for i, c in enumerate(nb.cells) if _kernel_id(c) == k) for k in kernel_ids}
    cells, solved, folder_done = [], set(), False
    for index, cell in enumerate(nb.cells):
        kid = _kernel_id(cell)
        if kid and not folder_done:
            cells.append(_cell(FOLDER_SOURCE, KERNEL_FOLDER_ID, metadata(KERNEL_FOLDER_ID, locked=True)))
            folder_done = True
        if kid and kid not in solved and not cell.source.split("\n", 1)[0].split()[2:]:
            new = kernel_solution_cell(cell, kid)
            if new is None:
                missing.append(f"%%kernel {kid}")
            else:
                cell, _ = new, solved.add(kid)
        if cell.cell_type == "code" and not kid:
            cells += checker_cells(cell, table, missing)
        else:
            cells.append(cell)
        if kid and index == last[kid] and kid in solved:
            cells += kernel_test_cells(kid, stage, table)
    nb.cells = cells
    return nb, missing


def export(out: Path, notebooks: list[Path], points_file: Path | None = None) -> list[Path]:
    """Writes OUT/source/stage_NN/<name>.ipynb per notebook and OUT/README.md; returns the notebooks' paths."""
    import nbformat
    table = points.load(points_file)
    known = copies.placeholders()
    written, missing = [], []
    for path in notebooks:
        nb, _ = notebook.read(Path(path))
        stage = notebook.stage_of(nb, Path(path))
        if stage is None:
            raise ValueError(f"{path}: no stage (its title starts '# NN ·' or its name 'NN_')")
        source, left = source_notebook(nb, table, known)
        missing += left
        dest = Path(out) / "source" / assignment(stage) / Path(path).name
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(source, dest)
        written.append(dest)
    if missing:
        print(f"warning: no solution for {', '.join(sorted(set(missing)))}: left as a student copy has it "
              f"(not graded)", file=sys.stderr)
    (Path(out) / "README.md").write_text(readme(written, Path(out)))
    return written


README = """# nbgrader source notebooks of Tile by Tile

Written by `python -m helpers teacher export nbgrader` (docs/grading.md). One assignment per stage, its
source notebook in `source/<assignment>/`:

{table}

## Use them

1. Make the nbgrader course folder **inside the course's checkout** (the notebooks' first cell finds `helpers/`
   in the working folder or above it), e.g. `tile-by-tile/nbgrader-course/`, and copy `source/` into it.
2. In its `nbgrader_config.py`, give the cells time: the kernels run on the CPU emulator without a GPU, and a
   cell can take minutes where nbgrader allows 30 s by default:

       c = get_config()
       c.Execute.timeout = 600

3. `nbgrader generate_assignment stage_02` writes the students' version to `release/` (each answer between the
   solution markers becomes `# YOUR CODE HERE` + `raise NotImplementedError()`); release it as you do.
4. Once collected: `nbgrader autograde stage_02` runs each submission and scores its test cells;
   `nbgrader generate_feedback stage_02` gives each student the checker's feedback.

## What is graded

- A checked exercise: its answer cell holds `answer_NN_K = ...` (the student writes it where the stub is; a
  comment gives the placeholder's shape) and calls the checker on it, so the student sees the feedback; the
  locked test cell below asserts that the checker finds it right, its points from the course's points table
  (`python -m helpers teacher points FILE`, then `--points FILE` at export). A prediction is worth 0 by default.
- A write-it `%%kernel NN` cell: in the released notebook it holds nbgrader's stub; run as it is, it brings the
  course's starter into the cell (or the student's saved kernel). After the exercise's last kernel cell, a
  locked cell checks the kernel the cells saved, and a graded test cell per step of the check earns that step's
  points (compiles, correct, safe, lesson): partial credit per step. A kernel left on its starter earns
  nothing. The timing step needs a GPU, so it is not graded here. A locked cell before the first kernel cell
  gives each nbgrader run (validate, autograde) a fresh folder for saved kernels.
- A test cell that writes to stderr scores 0 in nbgrader, as one that raises does.

## What nbgrader does not guard (its trust model)

nbgrader runs each student's notebook **in one Jupyter kernel with the tests**, with your rights, files and
network: no sandbox. Student code runs before the test cells and can replace a checker, edit `helpers/`, read
the solution registry (`helpers/course/exercises/solutions/`, the reference kernels in
`helpers/course/write_it/solutions/`) or your files, or end the kernel. nbgrader restores the locked cells'
source when it grades, and that is all. `python -m helpers teacher grade` (bubblewrap, or `--container`)
judges every answer in the grader's own process and runs student code in a sandbox without the solutions:
use it, or run nbgrader in a disposable container without the solutions, where grades must not be forged.
"""


def readme(written: list[Path], out: Path) -> str:
    import nbformat
    rows = ["| assignment | notebook | graded cells | points |", "|---|---|---|---|"]
    for path in written:
        cells = [c.metadata.get("nbgrader", {}) for c in nbformat.read(path, as_version=4).cells]
        graded = [m for m in cells if m.get("grade")]
        rows.append(f"| `{path.parent.name}` | `{path.relative_to(out)}` | {len(graded)} | "
                    f"{points.number(sum(m['points'] for m in graded))} |")
    return README.format(table="\n".join(rows))

"""Tools for teachers: copies of the notebooks to hand out or to keep, and a grader.

    python -m helpers teacher student-copies OUTDIR [NOTEBOOK ...] [--no-hints] [--no-outputs]
    python -m helpers teacher teacher-copies OUTDIR [NOTEBOOK ...]
    python -m helpers teacher grade STUDENT.ipynb [...] [--exercises-only] [--json F] [--csv F]

What an answer is here: every checked exercise is one call of a checker in a code cell,
`check_05_exercise_1(("?", "?"))`; the learner replaces the placeholders with an answer. The
solutions are not in the notebooks: each stage's module of helpers/course/exercises registers them
beside its checkers (SOLUTIONS), computed the way the checkers compute their answers.

- A **student copy** has every checker call back on its placeholder (whatever answer the source
  notebook held), the checkers and everything else kept, and by default the outputs of the cells
  marked # NBVAL_CHECK_OUTPUT (what a correct run prints; the copy still passes nbval). With
  --no-hints the <details> hints go; with --no-outputs every output goes.
- A **teacher copy** has the right answer in every checker call, computed on this machine (stage
  01's cache exercise depends on the CPU), and a note at the top saying it is not for students.
- **grade** executes each student's notebook in a fresh kernel on this machine's backend, every
  cell even after one fails (a timed-out cell is interrupted), and reports the verdict of each
  exercise's checker: right, wrong, not attempted (the placeholder is still there, or the call is
  gone), or error (its cell raised before the checker answered). The kernel's working directory
  is this course's notebooks/, so the student's first cell finds this course's helpers/ and
  kernels/. Grading runs the student's code: run it where that is safe (a container, a VM).
"""

from __future__ import annotations

import argparse
import ast
import copy
import csv
import dataclasses
import functools
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from helpers.course import exercises
from helpers.course import notebook_tools
from helpers.core.paths import ROOT
from helpers.core.paths import NOTEBOOKS
from helpers.course.exercises import is_placeholder
from helpers.core.device import host_description
from helpers.course.colab import is_badge_cell
from helpers.core import progress

HINT = re.compile(r"[ \t]*<details>\s*<summary>\s*Hint.*?</details>[ \t]*\n?", re.S | re.I)
EXERCISES_HEADING = re.compile(r"^##\s.*\bExercises?\b", re.M)
TEACHER_NOTE = ("**Teacher copy.** Every exercise cell holds its answer, computed by `helpers/course/exercises` "
                "on {machine}; run the cells to see each checker's explanation. Not for students: "
                "`python -m helpers teacher student-copies` makes their copies.")
STATUSES = ("right", "wrong", "not attempted", "error")


# ---- checker calls in a cell's source -------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Call:
    name: str             # check_05_exercise_1
    args: str             # the source between the parentheses
    start: int            # offsets of `args` in the cell's source
    end: int


def _offset(lines: list[str], line: int, col_bytes: int) -> int:
    """Character offset in the source of (1-based line, UTF-8 byte column), as ast reports them."""
    text = lines[line - 1]
    return sum(len(s) for s in lines[:line - 1]) + len(text.encode()[:col_bytes].decode(errors="ignore"))


def checker_calls(source: str) -> list[Call]:
    """The checker calls in a cell, in order. A cell Python cannot parse (IPython magics) has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if not name or not exercises.CHECKER_NAME.match(name):
            continue
        parts = [*node.args, *node.keywords]
        if parts:
            start = _offset(lines, parts[0].lineno, parts[0].col_offset)
            end = _offset(lines, parts[-1].end_lineno, parts[-1].end_col_offset)
        else:   # check_x(): the empty space between the parentheses
            end = start = _offset(lines, node.end_lineno, node.end_col_offset) - 1
        found.append(Call(name, source[start:end], start, end))
    return sorted(found, key=lambda c: c.start)


def replace_answers(source: str, answer) -> str:
    """The source with the arguments of each checker call replaced by answer(name, args) (None: kept)."""
    for call in reversed(checker_calls(source)):
        new = answer(call.name, call.args)
        if new is not None:
            source = source[:call.start] + new + source[call.end:]
    return source


def _is_placeholder(args_source: str) -> bool:
    try:
        values = ast.literal_eval(f"({args_source},)")
    except (ValueError, SyntaxError):
        return False
    return all(is_placeholder(v) or (isinstance(v, (set, frozenset)) and any(is_placeholder(x) for x in v))
               for v in values)


def placeholders(directory: Path = NOTEBOOKS) -> dict[str, str]:
    """{checker: its placeholder arguments as the course's notebooks write them}."""
    import nbformat
    found = {}
    for path in sorted(Path(directory).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                for call in checker_calls(cell.source):
                    if _is_placeholder(call.args):
                        found.setdefault(call.name, call.args)
    return found


def _placeholder_for(name: str, known: dict[str, str]) -> str:
    """The course's placeholder for `name`; for a checker no notebook shows, '?' in the shape of its solution."""
    if name in known:
        return known[name]
    try:
        args = exercises.solution(name)
    except KeyError:
        return '"?"'
    shape = lambda a: tuple("?" for _ in a) if isinstance(a, tuple) else "?"   # noqa: E731
    return as_source(tuple(shape(a) for a in args))


def as_source(args: tuple) -> str:
    """The arguments as Python source, as they go between the parentheses of the call."""
    def one(a):
        if isinstance(a, (set, frozenset)):
            return "{" + ", ".join(one(x) for x in sorted(a)) + "}" if a else "set()"
        if isinstance(a, tuple):
            return "(" + ", ".join(one(x) for x in a) + ("," if len(a) == 1 else "") + ")"
        if hasattr(a, "item"):            # a numpy scalar
            a = a.item()
        return repr(a)
    return ", ".join(one(a) for a in args)


# ---- copies -------------------------------------------------------------------------------------
def student_copy(nb, hints: bool = True, outputs: bool = True, known: dict[str, str] | None = None):
    """A copy of `nb` for students: checker calls on their placeholders; hints kept unless hints=False;
    the checked cells' outputs kept unless outputs=False (every other output cleared)."""
    known = placeholders() if known is None else known
    nb = notebook_tools.house_form(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = replace_answers(cell.source, lambda name, args: (
                None if _is_placeholder(args) else _placeholder_for(name, known)))
            if not outputs:
                cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown" and not hints and HINT.search(cell.source):
            cell.source = HINT.sub("", cell.source).rstrip()
        if cell.cell_type == "markdown" and cell.source.startswith("**Teacher copy.**"):
            cell.source = ""
    nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and c.source == "")]
    return nb


def teacher_copy(nb, machine: str | None = None):
    """A copy of `nb` with the right answer in every checker call and a note at the top."""
    import nbformat
    nb = notebook_tools.house_form(nb)
    missing = []

    def answer(name, args):
        try:
            return as_source(exercises.solution(name))
        except KeyError:
            missing.append(name)
            return None
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = replace_answers(cell.source, answer)
    if missing:
        print(f"warning: no solution for {', '.join(missing)}: left as written", file=sys.stderr)
    note = nbformat.v4.new_markdown_cell(TEACHER_NOTE.format(machine=machine or host_description()))
    note["id"] = "teacher-note"
    nb.cells.insert(1 if nb.cells and is_badge_cell(nb.cells[0]) else 0, note)
    return nb


def write_copies(kind: str, outdir: Path, notebooks: list[Path], **options) -> list[Path]:
    import nbformat
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    known = placeholders()
    written = []
    for path in progress.bar(notebooks, desc=f"{kind} copies", unit="notebook"):
        nb = nbformat.read(path, as_version=4)
        nb = student_copy(nb, known=known, **options) if kind == "student" else teacher_copy(nb)
        out = outdir / Path(path).name
        nbformat.write(nb, out)
        written.append(out)
    return written


# ---- grading ------------------------------------------------------------------------------------
def record_checks(log_path: str) -> None:
    """Wraps every checker of the course so that each call appends its verdict to `log_path` (one
    JSON object per line). The grader runs this in the student's kernel before any other cell."""
    def wrap(name, f):
        @functools.wraps(f)
        def checked(*args, **kwargs):
            try:
                fb = f(*args, **kwargs)
            except Exception as e:
                _log(name, "error", f"the checker raised {type(e).__name__}: {e}")
                raise
            status = getattr(fb, "status", None) or ("right" if fb else "wrong")
            _log(name, status, getattr(fb, "message", str(fb)))
            return fb
        checked.__tbt_recorded__ = True
        return checked

    def _log(name, status, message):
        with open(log_path, "a") as f:
            f.write(json.dumps({"check": name, "status": status, "message": message}) + "\n")

    # the package (what notebooks import) and each stage's module hold their own reference
    for module in (exercises, *exercises.STAGE_MODULES):
        for name in exercises.CHECKERS:
            f = getattr(module, name, None)
            if f is not None and not getattr(f, "__tbt_recorded__", False):
                setattr(module, name, wrap(name, f))


@dataclasses.dataclass
class ExerciseResult:
    check: str
    status: str           # one of STATUSES
    message: str

    @property
    def exercise(self) -> int:
        return int(exercises.CHECKER_NAME.match(self.check).group(2))


@dataclasses.dataclass
class Grade:
    notebook: str
    stage: str | None
    results: list[ExerciseResult]
    seconds: float
    mode: str             # "all cells" or "setup and exercise cells"
    problem: str | None = None   # the kernel died, or the notebook could not be read

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def as_dict(self) -> dict:
        return {"notebook": self.notebook, "stage": self.stage, "mode": self.mode, "seconds": round(self.seconds, 1),
                "problem": self.problem, "counts": self.counts(),
                "exercises": [dict(dataclasses.asdict(r), exercise=r.exercise) for r in self.results]}


def stage_of(nb, path: Path) -> str | None:
    """The stage id of a notebook: its title (# 05 · ...) or its file name (05_...)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.match(r"#\s+(\d\d)\b", cell.source)
            if m:
                return m.group(1)
    m = re.match(r"(\d\d)_", Path(path).name)
    return m.group(1) if m else None


def exercise_cells(nb) -> list:
    """The setup cells (code cells before the first section, ## ...) and every cell from the
    Exercises heading on: what --exercises-only runs."""
    cells, start = list(nb.cells), None
    first_section = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                          and re.search(r"^##\s", c.source, re.M)), len(cells))
    for i, c in enumerate(cells):
        if c.cell_type == "markdown" and EXERCISES_HEADING.search(c.source):
            start = i
    setup = [c for c in cells[:first_section] if c.cell_type == "code"]
    return setup + ([c for c in cells[start:]] if start is not None and start >= first_section else [])


def grade(path, timeout: int = 600, exercises_only: bool = False, backend: str | None = None) -> Grade:
    """Executes a student's notebook (allow_errors: every cell runs) and returns each exercise's verdict."""
    import nbformat
    from nbclient import NotebookClient
    path = Path(path)
    start = time.perf_counter()
    mode = "setup and exercise cells" if exercises_only else "all cells"
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:   # not a notebook, or broken JSON: say so and go on with the others
        return Grade(str(path), None, [], 0.0, mode, f"could not read it: {type(e).__name__}: {e}")
    stage = stage_of(nb, path)
    known = exercises.CHECKERS
    expected = [n for n in known if stage and n.startswith(f"check_{stage}_")]
    called = {c.name for cell in nb.cells if cell.cell_type == "code" for c in checker_calls(cell.source)}
    expected += sorted(n for n in called - set(expected) if n in known)

    run = copy.deepcopy(nb)
    if exercises_only:
        run.cells = copy.deepcopy(exercise_cells(nb))
    for cell in run.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory(prefix="tbt_grade_") as tmp:
        log = Path(tmp) / "checks.jsonl"
        inject = nbformat.v4.new_code_cell(
            f"import sys as _sys\n_sys.path.insert(0, {str(ROOT)!r})\n"
            f"from helpers.course import teacher as _teacher\n_teacher.record_checks({str(log)!r})\ndel _sys, _teacher")
        run.cells.insert(0, inject)
        env = {**os.environ, "TBT_PROGRESS": "0"}
        if backend:
            env["TBT_BACKEND"] = backend
        client = NotebookClient(run, km=notebook_tools._kernel_manager(), timeout=timeout, allow_errors=True,
                                interrupt_on_timeout=True, record_timing=False,
                                resources={"metadata": {"path": str(NOTEBOOKS)}})
        problem = None
        try:
            client.execute(env=env)
        except Exception as e:   # the kernel died or would not start: what was recorded still counts
            problem = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    last = {r["check"]: r for r in records}
    results = []
    for name in expected:
        if name in last:
            results.append(ExerciseResult(name, last[name]["status"], last[name]["message"]))
            continue
        errors = [o for c in run.cells[1:] if c.cell_type == "code" and name in c.source
                  for o in c.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            e = errors[0]
            results.append(ExerciseResult(name, "error", f"its cell raised {e.get('ename')}: {e.get('evalue')}"))
        elif problem:
            results.append(ExerciseResult(name, "error", f"not reached: {problem}"))
        elif any(name in c.source for c in run.cells[1:] if c.cell_type == "code"):
            results.append(ExerciseResult(name, "not attempted", "the cell ran, but the checker was not called"))
        else:
            results.append(ExerciseResult(name, "not attempted", "no cell calls this checker"))
    return Grade(str(path), stage, results, time.perf_counter() - start, mode, problem)


def report(grades: list[Grade], width: int = 100) -> str:
    """The grades as text: per notebook, one line per exercise; a summary table when there are several."""
    out = []
    for g in grades:
        c = g.counts()
        head = f"{g.notebook} (stage {g.stage or '?'}, {g.mode}, {g.seconds:.0f} s): " + ", ".join(
            f"{c[s]} {s}" for s in STATUSES if c[s])
        out.append(head if g.results else f"{g.notebook}: no exercises graded" + (f" ({g.problem})" if g.problem else ""))
        if g.problem and g.results:
            out.append(f"  problem: {g.problem}")
        for r in g.results:
            message = " ".join(r.message.split())
            message = message if len(message) <= width else message[:width - 3] + "..."
            out.append(f"  exercise {r.exercise:<3} {r.status:<14} {message}")
        out.append("")
    if len(grades) > 1:
        name_w = max(len("notebook"), *(len(g.notebook) for g in grades))
        out.append(f"{'notebook':<{name_w}}  " + "  ".join(f"{s:>13}" for s in STATUSES))
        for g in grades:
            c = g.counts()
            out.append(f"{g.notebook:<{name_w}}  " + "  ".join(f"{c[s]:>13}" for s in STATUSES))
    return "\n".join(out).rstrip() + "\n"


def write_csv(grades: list[Grade], path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "stage", "exercise", "check", "status", "message"])
        for g in grades:
            for r in g.results:
                w.writerow([g.notebook, g.stage, r.exercise, r.check, r.status, r.message])


# ---- command line (python -m helpers teacher ...) -----------------------------------------------
def add_parser(sub) -> None:
    t = sub.add_parser("teacher", help="student and teacher copies of the notebooks; grade students' notebooks",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    tsub = t.add_subparsers(dest="teacher_command", required=True)
    s = tsub.add_parser("student-copies", help="copies to hand out: answers back on their placeholders")
    s.add_argument("outdir", type=Path)
    s.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    s.add_argument("--no-hints", action="store_true", help="remove the <details> hints")
    s.add_argument("--no-outputs", action="store_true",
                   help="clear every output (default: keep the outputs of the # NBVAL_CHECK_OUTPUT cells)")
    c = tsub.add_parser("teacher-copies", help="copies with the right answer in every exercise cell")
    c.add_argument("outdir", type=Path)
    c.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    g = tsub.add_parser("grade", help="execute students' notebooks and report each exercise's verdict")
    g.add_argument("notebooks", nargs="+", type=Path)
    g.add_argument("--timeout", type=int, default=600, help="seconds a cell may run before it is interrupted")
    g.add_argument("--exercises-only", action="store_true",
                   help="run only the setup cells and the Exercises section (faster; an answer that uses a "
                        "variable from an earlier section then fails as an error)")
    g.add_argument("--json", type=Path, help="also write the grades to this JSON file")
    g.add_argument("--csv", type=Path, help="also write one row per exercise to this CSV file")
    g.add_argument("--backend", choices=("cpu", "gpu"), help="the backend of the students' kernels")


def main(args) -> int:
    if args.teacher_command in ("student-copies", "teacher-copies"):
        notebooks = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
        absent = [str(p) for p in notebooks if not Path(p).is_file()]
        if absent:
            print(f"error: no such notebook: {', '.join(absent)}", file=sys.stderr)
            return 2
        if args.teacher_command == "student-copies":
            written = write_copies("student", args.outdir, notebooks, hints=not args.no_hints,
                                   outputs=not args.no_outputs)
        else:
            written = write_copies("teacher", args.outdir, notebooks)
        print(f"wrote {len(written)} {args.teacher_command.split('-')[0]} cop{'y' if len(written) == 1 else 'ies'} "
              f"to {args.outdir}")
        return 0
    absent = [str(p) for p in args.notebooks if not Path(p).is_file()]
    if absent:
        print(f"error: no such notebook: {', '.join(absent)}", file=sys.stderr)
        return 2
    grades = []
    for path in progress.bar(args.notebooks, desc="grading", unit="notebook"):
        grades.append(grade(path, args.timeout, args.exercises_only, args.backend))
    print(report(grades), end="")
    if args.json:
        args.json.write_text(json.dumps([g.as_dict() for g in grades], indent=1) + "\n")
    if args.csv:
        write_csv(grades, args.csv)
    return 0

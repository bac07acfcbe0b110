"""Tools for teachers: copies of the notebooks to hand out or to keep, and a grader.

    python -m helpers teacher student-copies OUTDIR [NOTEBOOK ...] [--no-hints] [--no-outputs]
    python -m helpers teacher teacher-copies OUTDIR [NOTEBOOK ...]
    python -m helpers teacher grade STUDENT.ipynb [...] [--exercises-only] [--json F] [--csv F] [--no-sandbox]

What an answer is here: every checked exercise is one call of a checker in a code cell,
`check_05_exercise_1(("?", "?"))`; the learner replaces the placeholders with an answer. The
solutions are not in the notebooks: each stage's module of helpers/course/exercises registers them
beside its checkers (SOLUTIONS), computed the way the checkers compute their answers.

- A **student copy** has every checker call back on its placeholder (whatever answer the source
  notebook held), the checkers and everything else kept, and by default the outputs of the cells
  marked # NBVAL_CHECK_OUTPUT (what a correct run prints; the copy still passes nbval), except in
  the cells after the stage's prediction to the end of its performance section: those answer it, so
  they come without outputs (and without the nbval mark), for the learner to run after predicting.
  With --no-hints the <details> hints go; with --no-outputs every output goes.
- A **teacher copy** has the right answer in every checker call, computed on this machine (stage
  01's cache exercise depends on the CPU), and a note at the top saying it is not for students.
- **grade** runs each student's notebook in a sandbox (helpers/course/sandbox.py: bubblewrap, no
  network, writes only to temporary folders, limits on time, memory and processes), in a fresh kernel
  on this machine's backend, every cell even after one fails (a timed-out cell is interrupted), and
  judges each answer in this process from what the student wrote (helpers/course/grading.py): right,
  wrong, not attempted (the placeholder is still there, or the call is gone) or error (its cell
  raised before the checker's call). Without bubblewrap it refuses, unless --no-sandbox.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import sys
from pathlib import Path

from helpers.core import progress
from helpers.core.device import host_description
from helpers.core.paths import NOTEBOOKS
from helpers.course import exercises
from helpers.teach import grading
from helpers.maintain import notebooks as notebook_tools
from helpers.course.colab import is_badge_cell
from helpers.course.exercises import is_placeholder
from helpers.teach.grading import STATUSES, Grade, checker_calls, exercise_cells, grade  # noqa: F401
from helpers.teach.sandbox import Limits, Sandbox

HINT = re.compile(r"[ \t]*<details>\s*<summary>\s*Hint.*?</details>[ \t]*\n?", re.S | re.I)
TEACHER_NOTE = ("**Teacher copy.** Every exercise cell holds its answer, computed by `helpers/course/exercises` "
                "on {machine}; run the cells to see each checker's explanation. Not for students: "
                "`python -m helpers teacher student-copies` makes their copies.")


# ---- checker calls in a cell's source (helpers/course/grading.py finds them) -------------------------
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
    unrevealed = _answered_below_prediction(nb)
    for index, cell in enumerate(nb.cells):
        if index in unrevealed:         # the measurements a prediction asks about: the learner runs them after it
            cell.outputs, cell.execution_count = [], None
            cell.source = "\n".join(line for line in cell.source.splitlines()
                                     if line.strip().lstrip("#").strip() != notebook_tools.MARKER)
        if cell.cell_type == "code":
            cell.source = replace_answers(cell.source, lambda name, args: (
                None if _is_placeholder(args) else _placeholder_for(name, known)))
            for kind in grading.KINDS:      # a kernel cell back on its starter: no reference kernel goes out
                cell.source = getattr(kind, "starter_source", lambda _: None)(cell.source) or cell.source
            if not outputs:
                cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown" and not hints and HINT.search(cell.source):
            cell.source = HINT.sub("", cell.source).rstrip()
        if cell.cell_type == "markdown" and cell.source.startswith("**Teacher copy.**"):
            cell.source = ""
    nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and c.source == "")]
    return nb


def _answered_below_prediction(nb) -> set[int]:
    """The code cells from a stage's prediction (`check_NN_prediction(...)`) to the end of the section after it,
    its performance section: a copy that kept their outputs would show the answer before the learner commits."""
    cells = nb.cells
    start = next((i for i, c in enumerate(cells) if c.cell_type == "code"
                  and any(call.name.endswith("_prediction") for call in checker_calls(c.source))), None)
    if start is None:
        return set()
    headings = [i for i in range(start + 1, len(cells))
                if cells[i].cell_type == "markdown" and cells[i].source.startswith("## ")]
    end = headings[1] if len(headings) > 1 else len(cells)
    return {i for i in range(start + 1, end) if cells[i].cell_type == "code"}


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
        out += [f"  stopped by the sandbox: {s}" for s in g.stopped]
        for r in g.results:
            message = " ".join(r.message.split())
            message = message if len(message) <= width else message[:width - 3] + "..."
            label = f"exercise {r.exercise:<3}" if isinstance(r.exercise, int) else f"{r.exercise:<12}"
            out.append(f"  {label} {r.status:<14} {message}")
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
    g.add_argument("--time-limit", type=int, default=3600,
                   help="seconds one notebook may run in all (and of CPU per process) before it is stopped")
    g.add_argument("--no-sandbox", action="store_true",
                   help="run the notebooks without bubblewrap, with your rights, network and files: only for "
                        "notebooks you trust (the answers are still judged here, from what the notebook wrote)")


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
    if args.no_sandbox:
        print("warning: --no-sandbox: each student's notebook runs with your rights, your network and your files, "
              "and can change them and the course (its checkers included) for every grade after it. Grade only "
              "notebooks you trust this way.", file=sys.stderr)
    sandbox = Sandbox(Limits(wall_s=args.time_limit, cpu_s=args.time_limit), enabled=not args.no_sandbox,
                      backend=args.backend)    # no bubblewrap: SandboxUnavailableError, naming the fix
    grades = []
    for path in progress.bar(args.notebooks, desc="grading", unit="notebook"):
        grades.append(grade(path, args.timeout, args.exercises_only, args.backend, sandbox))
    print(report(grades), end="")
    if args.json:
        args.json.write_text(json.dumps([g.as_dict() for g in grades], indent=1) + "\n")
    if args.csv:
        write_csv(grades, args.csv)
    return 0

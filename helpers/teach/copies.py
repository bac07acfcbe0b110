"""Copies of the course's notebooks for a class: student copies to hand out (every answer back on its
placeholder, each kernel cell back on its starter, the outputs that would answer a prediction left out) and
teacher copies to keep (the right answer in every checker call, from the solution registry of
helpers/course/exercises/solutions/). `python -m helpers teacher --help` (helpers/cli/teacher.py) says what each holds."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from helpers.core import progress
from helpers.core.device import host_description
from helpers.core.notebook_files import MARKER, house_form
from helpers.core.paths import NOTEBOOKS
from helpers.course.colab import is_badge_cell
from helpers.course.exercises import is_placeholder, solutions
from helpers.course.exercises.calls import checker_calls
from helpers.teach.grading.notebook import KINDS

HINT = re.compile(r"[ \t]*<details>\s*<summary>\s*Hint.*?</details>[ \t]*\n?", re.S | re.I)
TEACHER_NOTE = ("**Teacher copy.** Every exercise cell holds its answer, computed by `helpers/course/exercises` "
                "on {machine}; run the cells to see each checker's explanation. Not for students: "
                "`python -m helpers teacher student-copies` makes their copies.")


# ---- checker calls in a cell's source (helpers/course/exercises/calls.py finds them) ------------------
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
        args = solutions.solution(name)
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
    nb = house_form(nb)
    unrevealed = _answered_below_prediction(nb)
    for index, cell in enumerate(nb.cells):
        if index in unrevealed:         # the measurements a prediction asks about: the learner runs them after it
            cell.outputs, cell.execution_count = [], None
            cell.source = "\n".join(line for line in cell.source.splitlines()
                                     if line.strip().lstrip("#").strip() != MARKER)
        if cell.cell_type == "code":
            cell.source = replace_answers(cell.source, lambda name, args: (
                None if _is_placeholder(args) else _placeholder_for(name, known)))
            for kind in KINDS:      # a kernel cell back on its starter: no reference kernel goes out
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
    """The code cells a stage's prediction (`check_NN_prediction(...)`) asks about: those after it in its own
    section, and those of the performance section after it (the first `## ` heading naming Performance), wherever
    that is (02-05 ask at the end of section 1, before the learner's kernel; 06-12 just before Performance). A copy
    that kept their outputs would show the answer before the learner commits. With no such section, every code
    cell after the prediction."""
    cells = nb.cells
    start = next((i for i, c in enumerate(cells) if c.cell_type == "code"
                  and any(call.name.endswith("_prediction") for call in checker_calls(c.source))), None)
    if start is None:
        return set()
    headings = [i for i in range(start + 1, len(cells))
                if cells[i].cell_type == "markdown" and cells[i].source.startswith("## ")] + [len(cells)]
    performance = next((k for k, i in enumerate(headings[:-1])
                        if "performance" in cells[i].source.splitlines()[0].lower()), None)
    asked = [*range(start + 1, headings[0])] + ([*range(headings[performance] + 1, headings[performance + 1])]
                                                if performance is not None else [*range(headings[0], len(cells))])
    return {i for i in asked if cells[i].cell_type == "code"}


def teacher_copy(nb, machine: str | None = None):
    """A copy of `nb` with the right answer in every checker call and a note at the top."""
    import nbformat
    nb = house_form(nb)
    missing = []

    def answer(name, args):
        try:
            return as_source(solutions.solution(name))
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

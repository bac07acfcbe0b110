"""The run of a student's notebook in the sandbox: each checker call routed through a recorder of its
arguments, every cell run even after one fails, and what the run reports back (the cells reached, their
errors, the answers recorded, what the sandbox stopped). The grader trusts none of it as a verdict."""

from __future__ import annotations

import dataclasses
import re

from helpers.course.exercises.calls import checker_calls
from helpers.teach import sandbox as sandboxing

EXERCISES_HEADING = re.compile(r"^##\s.*\bExercises?\b", re.M)

SETUP = r'''
def _tbt_setup():
    import builtins
    from IPython.display import display

    def plain(v, depth=0):
        if depth > 30:
            raise ValueError("nested too deeply")
        if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
            return plain(v.tolist(), depth + 1)
        for t in (bool, int, float, complex, str, bytes):
            if isinstance(v, t):
                return t(v)
        if v is None:
            return None
        if isinstance(v, (tuple, list)):
            return (tuple if isinstance(v, tuple) else list)(plain(x, depth + 1) for x in v)
        if isinstance(v, (set, frozenset)):
            return {plain(x, depth + 1) for x in v}
        if isinstance(v, dict):
            return {plain(k, depth + 1): plain(x, depth + 1) for k, x in v.items()}
        raise TypeError(f"a {type(v).__name__}, not a number, a string, or a tuple, list, set or dict of them")

    def answer(cell, call, name, func):
        def recorded(*args, **kwargs):
            try:
                record = {"cell": cell, "call": call, "check": name, "args": [repr(plain(a)) for a in args],
                          "kwargs": {str(k): repr(plain(v)) for k, v in kwargs.items()}}
                if len(repr(record)) > 100000:
                    raise ValueError("longer than 100000 characters")
            except Exception as e:
                record = {"cell": cell, "call": call, "check": name, "unreadable": f"{type(e).__name__}: {e}"[:300]}
            display({MIME: record}, raw=True)
            return func()(*args, **kwargs)
        return recorded
    builtins.__tbt_answer__ = answer
_tbt_setup()
del _tbt_setup
'''.replace("MIME", repr(sandboxing.ANSWER_MIME))

@dataclasses.dataclass
class Run:
    """What the grader takes from the sandboxed run: per cell (by its index in the notebook) whether it
    ran, its errors and the answers it recorded; which cells ran; what went wrong with the run; and the
    time (time.monotonic()) by which the notebook's grading ends, its kernel cells' checks included."""
    cells: dict[int, dict]
    ran: set[int]
    problem: str | None
    stopped: list[str]
    deadline: float | None = None


def instrument(source: str, index: int) -> str:
    """The cell with each checker call routed through __tbt_answer__, which records its arguments."""
    calls = checker_calls(source)
    for k, c in reversed(list(enumerate(calls))):
        fn = source[c.func_start:c.func_end]
        source = source[:c.func_start] + f"__tbt_answer__({index}, {k}, {c.name!r}, lambda: {fn})" + source[c.func_end:]
    return source


def run_notebook(nb, sandbox: sandboxing.Sandbox, timeout: int, exercises_only: bool,
                 deadline: float | None = None) -> Run:
    import nbformat
    cells = exercise_cells(nb) if exercises_only else list(nb.cells)
    position = {id(c): i for i, c in enumerate(nb.cells)}
    run = nbformat.v4.new_notebook(metadata=nb.metadata)
    run.cells = [nbformat.v4.new_code_cell(SETUP)]
    for cell in cells:
        i = position[id(cell)]
        if cell.cell_type == "code":
            run.cells.append(nbformat.v4.new_code_cell(instrument(cell.source, i), metadata={"tbt_cell": i}))
    summary, outcome = sandboxing.execute(sandbox, run, timeout)
    lim = sandbox.limits
    problem, stopped = None, []
    if outcome.timed_out:
        problem = f"the notebook ran past its {lim.wall_s:.0f} s limit and was stopped"
        stopped.append(f"the whole run, past {lim.wall_s:.0f} s (everything it started was killed)")
    elif summary is None or not summary["done"]:
        problem = f"the run ended before its end (exit status {outcome.returncode}): " + \
                  (outcome.stderr.strip().splitlines() or ["no message"])[-1][:300]
    elif summary.get("problem"):
        problem = f"the kernel stopped: {summary['problem']} (a limit, e.g. CPU time, may have ended it)"
    by_cell = {}
    for c in (summary or {}).get("cells", []):
        if isinstance(c, dict) and isinstance(c.get("cell"), int):
            by_cell[c["cell"]] = c
            stopped += [f"cell {c['cell'] + 1}: {what}" for what in sandboxing.stopped(c, lim)]   # cells from 1
    ran = {position[id(c)] for c in cells}
    return Run(by_cell, ran, problem, stopped, deadline)


def exercise_cells(nb) -> list:
    """The setup cells (code cells before the first section, ## ...), the code cells between them and the
    Exercises heading that call a checker (a stage's prediction, asked before it measures), and every cell
    from the Exercises heading on: what --exercises-only runs."""
    cells, start = list(nb.cells), None
    first_section = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                          and re.search(r"^##\s", c.source, re.M)), len(cells))
    for i, c in enumerate(cells):
        if c.cell_type == "markdown" and EXERCISES_HEADING.search(c.source):
            start = i
    setup = [c for c in cells[:first_section] if c.cell_type == "code"]
    if start is None or start < first_section:
        return setup
    asked = [c for c in cells[first_section:start] if c.cell_type == "code" and checker_calls(c.source)]
    return setup + asked + cells[start:]

"""Grading one student's notebook: read it, run it in the sandbox, and judge every kind of exercise it answers
(KINDS: checker calls, kernel cells)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from helpers.course import write_it
from helpers.teach import sandbox as sandboxing
from helpers.teach.grading.checkers import CheckerCalls
from helpers.teach.grading.kernel_cells import KernelCells
from helpers.teach.grading.results import Grade
from helpers.teach.grading.run import run_notebook

# The kinds of exercise a notebook's answers come in; a new kind has results(nb, stage, run, sandbox).
KINDS: list = [CheckerCalls(), KernelCells(exercises=tuple((e.stage, e.id) for e in write_it.exercises()))]


def stage_of(nb, path: Path) -> str | None:
    """The stage id of a notebook: its title (# 05 · ...) or its file name (05_...)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.match(r"#\s+(\d\d)\b", cell.source)
            if m:
                return m.group(1)
    m = re.match(r"(\d\d)_", Path(path).name)
    return m.group(1) if m else None


def grade(path, timeout: int = 600, exercises_only: bool = False, backend: str | None = None,
          sandbox: sandboxing.Sandbox | None = None, kinds: list | None = None) -> Grade:
    """Runs a student's notebook in the sandbox (every cell, even after one fails) and judges each answer."""
    import nbformat
    path = Path(path)
    start = time.perf_counter()
    mode = "setup and exercise cells" if exercises_only else "all cells"
    try:
        nb = nbformat.read(path, as_version=4)
        if any(not isinstance(c.get("source", ""), str) for c in nb.cells):
            raise ValueError("a cell's source is not text")
    except Exception as e:   # not a notebook, or broken JSON: say so and go on with the others
        return Grade(str(path), None, [], 0.0, mode, f"could not read it: {type(e).__name__}: {e}")
    sandbox = sandbox or sandboxing.Sandbox(backend=backend)
    stage = stage_of(nb, path)
    run = run_notebook(nb, sandbox, timeout, exercises_only)
    results = [r for kind in (KINDS if kinds is None else kinds) for r in kind.results(nb, stage, run, sandbox)]
    return Grade(str(path), stage, results, time.perf_counter() - start, mode, run.problem, run.stopped)

"""Grading one student's notebook: read it, run it in the sandbox, and judge every kind of exercise it answers
(KINDS: checker calls, kernel cells). Nothing a student writes stops the grader: a notebook it cannot read, a
cell it cannot parse, an answer it cannot take, becomes that notebook's problem or that exercise's error, and
the next notebook is graded."""

from __future__ import annotations

import json
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

MAX_NOTEBOOK_BYTES = 100 * 2 ** 20   # read into the grader's memory: outputs (plots) are what makes one large
CELL_KINDS = ("code", "markdown", "raw")


def stage_of(nb, path: Path) -> str | None:
    """The stage id of a notebook: its title (# 05 · ...) or its file name (05_...)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.match(r"#\s+(\d\d)\b", cell.source)
            if m:
                return m.group(1)
    m = re.match(r"(\d\d)_", Path(path).name)
    return m.group(1) if m else None


def read(path: Path):
    """The notebook, its cells made whole: (notebook, what was changed to read it). A cell without a kind, or
    whose source is not text, becomes a raw cell (not run, as Jupyter would not run it); characters that are not
    text (a lone surrogate, which no Jupyter kernel can receive) become U+FFFD. Raises on what is no notebook."""
    import nbformat
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"it is {size / 2 ** 20:.0f} MiB, over the {MAX_NOTEBOOK_BYTES // 2 ** 20} MiB a notebook "
                         f"may have here: clear its outputs (Edit > Clear Outputs of All Cells) and hand it in again")
    data = json.loads(path.read_bytes())
    if isinstance(data, dict) and data.get("nbformat") != 4:     # an older format: nbformat converts it
        data = nbformat.read(path, as_version=4)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("it is not a notebook (no list of cells)")
    notes, cells = [], []
    for i, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict):
            notes.append(f"cell {i} is not a cell (left out)")
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) and all(isinstance(s, str) for s in source) else source
        kind = cell.get("cell_type")
        if kind not in CELL_KINDS or not isinstance(source, str):
            notes.append(f"cell {i} has no kind Jupyter knows or no text (read as a raw cell, not run)")
            kind, source = "raw", source if isinstance(source, str) else ""
        clean = source.encode("utf-8", "replace").decode("utf-8")   # a lone surrogate: '?'
        if clean != source:
            notes.append(f"cell {i} holds characters that are not text (a lone surrogate, replaced)")
        cells.append(nbformat.from_dict({**cell, "cell_type": kind, "source": clean, "metadata": cell.get("metadata")
                                         if isinstance(cell.get("metadata"), dict) else {},
                                         **(_ran(cell) if kind == "code" else {})}))
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return nbformat.from_dict({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}), notes


def _ran(cell: dict) -> dict:
    """What a code cell handed in says of its run, kept for the grader: its execution count (which of two kernel
    cells ran last) and its outputs (the learner's record of hints and reveals); never run or trusted as a verdict."""
    count, outputs = cell.get("execution_count"), cell.get("outputs")
    return {"execution_count": count if isinstance(count, int) and not isinstance(count, bool) else None,
            "outputs": outputs if isinstance(outputs, list) else []}


def grade(path, timeout: int = 600, exercises_only: bool = False, backend: str | None = None,
          sandbox: sandboxing.Sandbox | None = None, kinds: list | None = None) -> Grade:
    """Runs a student's notebook in the sandbox (every cell, even after one fails) and judges each answer,
    everything within the sandbox's wall-clock limit (its kernel cells' checks included)."""
    path = Path(path)
    start = time.perf_counter()
    mode = "setup and exercise cells" if exercises_only else "all cells"
    try:
        nb, notes = read(path)
    except Exception as e:   # not a notebook, broken JSON, too large: say so and go on with the others
        return Grade(str(path), None, [], time.perf_counter() - start, mode,
                     f"could not read it: {type(e).__name__}: {str(e)[:300]}")
    sandbox = sandbox or sandboxing.Sandbox(backend=backend)
    stage, results, problem, stopped = None, [], None, []
    try:
        stage = stage_of(nb, path)
        run = run_notebook(nb, sandbox, timeout, exercises_only, deadline=time.monotonic() + sandbox.limits.wall_s)
        problem, stopped = run.problem, run.stopped
        for kind in (KINDS if kinds is None else kinds):
            results += kind.results(nb, stage, run, sandbox)
    except Exception as e:   # a grader bug that a notebook found: this notebook's problem, not the run's end
        problem = (f"the grader failed on this notebook ({type(e).__name__}: {str(e)[:200]}): the results above "
                   f"stand, its other exercises are not graded")
    problem = "; ".join(p for p in (problem, *notes) if p) or None
    return Grade(str(path), stage, results, time.perf_counter() - start, mode, problem, stopped, student_of(nb),
                 getattr(sandbox, "isolation", None))


def student_of(nb) -> str | None:
    """The student's name as the notebook's metadata gives it (nbformat's `authors`: [{"name": ...}]), if any."""
    authors = nb.metadata.get("authors") if isinstance(nb.metadata, dict) else None
    names = [str(a.get("name"))[:100] for a in authors if isinstance(a, dict) and a.get("name")] \
        if isinstance(authors, list) else []
    return ", ".join(names)[:300] or None

"""Keeping the committed notebooks in house form: what keeps one from it, executing one and saving it in it,
or stripping it without a run. `python -m helpers notebooks` (helpers/cli/notebooks.py) runs these and explains
the house form; helpers/core/notebook_files.py makes it.
"""

from __future__ import annotations

import time
from pathlib import Path

from helpers.core.notebook_files import MARKER, house_form, is_checked, kernel_manager
from helpers.course import colab

FORBIDDEN_IN_CHECKED = ("image/png", "image/jpeg", "image/svg+xml", "application/vnd.jupyter.widget-view+json")

# The first code cell of every notebook: it finds the course root (on Google Colab it clones the
# course first) and prints the backend banner. helpers/course/colab.py keeps it, with the repository's name.
FIRST_CELL = colab.first_cell()


def problems(nb, name: str = "notebook") -> list[str]:
    """What keeps `nb` from the house form (and from nbval comparing it reliably)."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or code[0].source.strip() != FIRST_CELL.strip():
        found.append(f"{name}: the first code cell is not the course's standard one "
                     f"(helpers.maintain.notebooks.FIRST_CELL).")
    for i, cell in enumerate(nb.cells):
        where = f"{name}, cell {i}"
        if cell.cell_type == "markdown" and cell.get("attachments"):
            found.append(f"{where}: a markdown attachment (an embedded image); put figures in figures/.")
        if cell.cell_type != "code":
            continue
        if not is_checked(cell):
            if cell.outputs:
                found.append(f"{where}: outputs on a cell not marked # {MARKER}.")
            if cell.execution_count is not None:
                found.append(f"{where}: an execution count on a cell not marked # {MARKER}.")
            continue
        if not cell.outputs:
            found.append(f"{where}: marked # {MARKER} but has no stored output to compare with.")
        for out in cell.outputs:
            if out.get("output_type") == "error":
                found.append(f"{where}: the stored output is an error ({out.get('ename')}).")
            for key in out.get("data", {}):
                if key in FORBIDDEN_IN_CHECKED:
                    found.append(f"{where}: a checked cell stores {key}; checked cells print text only.")
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                found.append(f"{where}: a checked cell wrote to stderr (a warning?); it would be compared too.")
    return found


def execute(path: Path, timeout: int = 600):
    """Runs every cell of the notebook at `path` (working directory: its folder); returns it."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, km=kernel_manager(), timeout=timeout, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()   # widget state goes into nb.metadata["widgets"]; house_form drops it
    return nb


def refresh(path, timeout: int = 600) -> float:
    """Executes the notebook on the current backend and saves it in house form. Returns seconds.
    Raises nbclient's CellExecutionError (and writes nothing) if a cell fails."""
    import nbformat
    path = Path(path)
    start = time.perf_counter()
    nb = house_form(execute(path, timeout))
    seconds = time.perf_counter() - start
    bad = problems(nb, str(path))
    if bad:
        raise RuntimeError("not saved, the result breaks the house rule:\n  " + "\n  ".join(bad))
    nbformat.write(nb, path)
    return seconds


def strip(path) -> None:
    import nbformat
    path = Path(path)
    nbformat.write(house_form(nbformat.read(path, as_version=4)), path)

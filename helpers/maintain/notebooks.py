"""Maintainer tool: keep committed notebooks in the house form.

    python -m helpers notebooks refresh notebooks/02_naive.ipynb ...   execute, then save in house form
    python -m helpers notebooks check notebooks/*.ipynb                 is each file in house form? (no run)
    python -m helpers notebooks strip notebooks/02_naive.ipynb ...      house form without executing

The house form: a code cell keeps its outputs and execution count only when it is marked
`# NBVAL_CHECK_OUTPUT` (nbval compares exactly those, in --nbval-lax mode); every other cell is
saved with no outputs and execution_count None. Marked cells must print the same text on every
backend (verdicts, tables of counts), so they may hold no images, no widgets and no errors.
Notebook metadata is reduced to a fixed kernelspec, so a refresh on another machine changes
nothing but real output. `refresh` runs on the current backend (TBT_BACKEND, or --backend).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

from helpers.course import colab
from helpers.run import backend
from helpers.core import progress

MARKER = "NBVAL_CHECK_OUTPUT"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}
FORBIDDEN_IN_CHECKED = ("image/png", "image/jpeg", "image/svg+xml", "application/vnd.jupyter.widget-view+json")

# The first code cell of every notebook: it finds the course root (on Google Colab it clones the
# course first) and prints the backend banner. helpers/colab.py keeps it, with the repository's name.
FIRST_CELL = colab.first_cell()


def is_checked(cell) -> bool:
    return cell.get("cell_type") == "code" and any(
        line.strip().lstrip("#").strip() == MARKER for line in cell.get("source", "").splitlines())


def house_form(nb):
    """A copy of `nb` in house form (outputs only on marked cells, fixed metadata)."""
    nb = copy.deepcopy(nb)
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        if not is_checked(cell):
            cell.outputs = []
            cell.execution_count = None
    return nb


def problems(nb, name: str = "notebook") -> list[str]:
    """What keeps `nb` from the house form (and from nbval comparing it reliably)."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or code[0].source.strip() != FIRST_CELL.strip():
        found.append(f"{name}: the first code cell is not the course's standard one "
                     f"(helpers.notebook_tools.FIRST_CELL).")
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


def _kernel_manager(asynchronous: bool = False):
    """A kernel in this very Python environment (as nbval's --nbval-current-env does). nbclient's cell
    timeout needs the asynchronous manager (a blocking client never lets the timeout fire)."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())

    manager = AsyncKernelManager if asynchronous else KernelManager
    return manager(kernel_name="python3", kernel_spec_manager=CurrentEnv())


def execute(path: Path, timeout: int = 600):
    """Runs every cell of the notebook at `path` (working directory: its folder); returns it."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, km=_kernel_manager(), timeout=timeout, record_timing=False,
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


def add_parser(sub) -> None:
    """`python -m helpers notebooks ...` (helpers.cli)."""
    n = sub.add_parser("notebooks", help="keep notebooks in house form: refresh (execute), check, strip",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    nsub = n.add_subparsers(dest="notebooks_command", required=True)
    r = nsub.add_parser("refresh", help="execute and save with outputs only on # NBVAL_CHECK_OUTPUT cells")
    r.add_argument("notebooks", nargs="+", type=Path)
    r.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    r.add_argument("--backend", choices=("cpu", "gpu"), help="sets TBT_BACKEND for the run")
    c = nsub.add_parser("check", help="report cells that break the house rule; executes nothing")
    c.add_argument("notebooks", nargs="+", type=Path)
    s = nsub.add_parser("strip", help="house form without executing (checked outputs stay as they were; "
                                      "prefer refresh)")
    s.add_argument("notebooks", nargs="+", type=Path)


def main(args) -> int:
    if args.notebooks_command == "check":
        import nbformat
        bad = [msg for nb in args.notebooks for msg in problems(nbformat.read(nb, as_version=4), str(nb))]
        print("\n".join(bad) if bad else f"{len(args.notebooks)} notebook(s) in house form")
        return 1 if bad else 0
    if args.notebooks_command == "strip":
        for nb in args.notebooks:
            strip(nb)
            print(f"stripped {nb}")
        return 0
    if args.backend:
        os.environ["TBT_BACKEND"] = args.backend
    print(backend.banner())
    status = 0
    for nb in progress.bar(args.notebooks, desc="executing", unit="notebook"):
        try:
            seconds = refresh(nb, args.timeout)
            progress.write(f"refreshed {nb} in {seconds:.1f} s")
        except Exception as e:  # report each notebook and go on to the next
            progress.write(f"FAILED {nb}: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
    return status


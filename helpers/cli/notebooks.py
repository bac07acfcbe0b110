"""`python -m helpers notebooks ...`: keep committed notebooks in the house form (maintainers; helpers.maintain).

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
import os
import sys
from pathlib import Path

from helpers.core import progress
from helpers.maintain import notebooks
from helpers.run import backend


def add_parser(sub) -> None:
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
        bad = [msg for nb in args.notebooks for msg in notebooks.problems(nbformat.read(nb, as_version=4), str(nb))]
        print("\n".join(bad) if bad else f"{len(args.notebooks)} notebook(s) in house form")
        return 1 if bad else 0
    if args.notebooks_command == "strip":
        for nb in args.notebooks:
            notebooks.strip(nb)
            print(f"stripped {nb}")
        return 0
    if args.backend:
        os.environ["TBT_BACKEND"] = args.backend
    print(backend.banner())
    status = 0
    for nb in progress.bar(args.notebooks, desc="executing", unit="notebook"):
        try:
            seconds = notebooks.refresh(nb, args.timeout)
            progress.write(f"refreshed {nb} in {seconds:.1f} s")
        except Exception as e:  # report each notebook and go on to the next
            progress.write(f"FAILED {nb}: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
    return status

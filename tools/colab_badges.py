"""Puts the current "Open in Colab" badge and the current first code cell in every notebook.

    python -m tools.colab_badges                 update notebooks/*.ipynb (idempotent)
    python -m tools.colab_badges --check         say which notebooks are out of date; write nothing
    python -m tools.colab_badges notebooks/10_*.ipynb   only these
    (python tools/colab_badges.py ... works too)

The badge is the notebook's first cell, a markdown cell of its own; the first code cell is
helpers.course.colab.first_cell(), the same in every notebook. Both name the GitHub repository in
helpers/course/colab.py (GITHUB_REPO): change it there and run this tool. A first code cell that is
neither the current one nor an earlier version of the course's setup cell is reported and left
alone. Exit status: 0 all current (or updated), 1 something out of date (--check) or left alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __spec__ is None:  # run by path, not as python -m tools.colab_badges: helpers/ is beside tools/
    sys.path.insert(0, str(Path(sys.path[0]).parent))

import nbformat  # noqa: E402

from helpers.core.paths import NOTEBOOKS  # noqa: E402
from helpers.course import colab  # noqa: E402

BADGE_CELL_ID = "colab-badge"
# How every version of the course's setup cell starts: those are replaced, anything else is not.
SETUP_CELL_START = "# Every notebook of the course starts with this cell"


def update(nb, name: str) -> tuple[list[str], list[str]]:
    """Brings `nb` (in place) up to date. Returns (what changed, what could not be changed)."""
    changed, refused = [], []
    want = colab.badge(name)
    badges = [c for c in nb.cells if colab.is_badge_cell(c)]
    if len(badges) != 1 or nb.cells[0] is not badges[0] or badges[0].source != want:
        nb.cells = [c for c in nb.cells if not colab.is_badge_cell(c)]
        cell = nbformat.v4.new_markdown_cell(want)
        if any("id" in c for c in nb.cells) or nb.nbformat_minor >= 5:
            cell["id"] = BADGE_CELL_ID
        else:
            cell.pop("id", None)
        nb.cells.insert(0, cell)
        changed.append("badge")
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup = colab.first_cell()
    if not code:
        refused.append("no code cell: the setup cell is missing")
    elif code[0].source != setup:
        if code[0].source.startswith(SETUP_CELL_START):
            code[0].source = setup
            changed.append("first code cell")
        else:
            refused.append("the first code cell is not the course's setup cell; put helpers.course.colab.first_cell() "
                           "there by hand")
    return changed, refused


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    p.add_argument("--check", action="store_true", help="report, write nothing; exit 1 if any is out of date")
    args = p.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    status = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        changed, refused = update(nb, path.name)
        for why in refused:
            print(f"{path}: {why}", file=sys.stderr)
            status = 1
        if not changed:
            continue
        if args.check:
            print(f"{path}: out of date ({', '.join(changed)}); run python tools/colab_badges.py")
            status = 1
        else:
            nbformat.write(nb, path)
            print(f"{path}: updated {', '.join(changed)}")
    if status == 0 and args.check:
        print(f"{len(paths)} notebook(s) have the current badge and setup cell")
    return status


if __name__ == "__main__":
    sys.exit(main())

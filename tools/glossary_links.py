"""Links the first use of each glossary term in every notebook's Markdown to its entry in docs/glossary.md.

    python -m tools.glossary_links                  link them in notebooks/*.ipynb (idempotent)
    python -m tools.glossary_links --check          list the unlinked first uses; write nothing
    python -m tools.glossary_links notebooks/12_*.ipynb   only these

Which words count, which places are left alone (headings, code, comments, links, raw HTML) and which terms are
exempt: helpers/maintain/glossary_links.py. Only Markdown sources change; outputs, execution counts and metadata
are written back as they were (nbformat). Exit status: 0 all linked (or now linked), 1 unlinked (--check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __spec__ is None:  # run by path, not as python -m tools.glossary_links: helpers/ is beside tools/
    sys.path.insert(0, str(Path(sys.path[0]).parent))

import nbformat  # noqa: E402

from helpers.maintain import glossary_links  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="report only")
    args = parser.parse_args(argv)
    matcher = glossary_links.Matcher()
    unlinked = 0
    for path in args.notebooks or glossary_links.notebook_paths():
        nb = nbformat.read(path, as_version=4)
        todo = [u for u in matcher.first_uses(nb.cells).values() if not u.linked]
        for u in todo:
            src = nb.cells[u.cell].source
            print(f"{path.name} cell {u.cell}: {src[u.start:u.end]!r} -> #{u.anchor}")
        unlinked += len(todo)
        if todo and not args.check:
            for cell, source in zip(nb.cells, matcher.link(nb.cells)):
                cell.source = source
            nbformat.write(nb, path)
    return 1 if unlinked and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

"""Maintainer check: every `module.name` the notebooks' prose tells a learner to call exists.

Prose names the course's functions by the short module names the notebooks import (`accesses.per_line_view(trace)`,
`resources.occupancy`, `stages.ThreadTile1DConfig`) or by their full path (`helpers.measure.bench.time_variant`).
A name that moved or never existed sends a learner to an AttributeError. Here: every dotted name in a notebook's
Markdown whose first part is `helpers` or a module of the notebook surface (helpers.SURFACE), resolved by importing
and reading attributes. Paths (`helpers/measure/intensity.py`, `stages.py`) are not names; variables that share
a module's name are not in the prose of these notebooks (a name such as `trace.blocks` would be read as the module's).
tests/maintain/test_prose_references.py runs it on every notebook.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

import helpers

DOTTED = re.compile(r"(?<![\w./\-])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)")
FILE_ENDINGS = {"py", "cu", "cuh", "h", "cpp", "json", "md", "ipynb", "svg", "png", "txt", "gz", "csv", "ini", "toml"}


@dataclass(frozen=True)
class Dangling:
    cell: int
    name: str
    why: str

    def __str__(self) -> str:
        return f"cell {self.cell}: `{self.name}` {self.why}"


def _resolve(head: str, parts: list[str]) -> str | None:
    """Why the name does not resolve, or None when it does."""
    if head == "helpers":
        obj, path = helpers, "helpers"
    else:
        obj, path = importlib.import_module(helpers.SURFACE[head]), helpers.SURFACE[head]
    for part in parts:
        if hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            try:
                obj = importlib.import_module(f"{path}.{part}")
            except ImportError:
                return f"does not exist: {path} has no {part!r}"
        path = f"{path}.{part}"
    return None


def names(text: str) -> list[str]:
    """The dotted names of the course's modules a text names: `accesses.per_line_view`, `helpers.measure.bench`."""
    found = []
    for m in DOTTED.finditer(text):
        head, tail = m.group(1), m.group(2).lstrip(".").split(".")
        if head != "helpers" and head not in helpers.SURFACE:
            continue
        if tail[-1] in FILE_ENDINGS or text[m.end():m.end() + 1] == "/":
            continue                  # a file: helpers/…/intensity.py, or a folder
        found.append(f"{head}.{'.'.join(tail)}")
    return found


def dangling(nb) -> list[Dangling]:
    """Every dotted name of the course's modules in the notebook's Markdown that does not resolve."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for name in names(cell.source):
            head, *parts = name.split(".")
            why = _resolve(head, parts)
            if why:
                out.append(Dangling(i, name, why))
    return out

"""Maintainer checks: what the prose says a cell shows, or offers, is what it shows and offers.

- `explorer_values`: every value the prose asks a learner to try in a tile explorer (`TM = 4, 8, 32`, `BK = 8 and
  32`, `TM = TN = 8`) is among the values its slider offers (helpers.views.widgets.fitting_options).
- `block_claims`: prose that says a trace checks "the first, a middle and the last block" is followed by a checked
  output whose every `blocks (...)` lists three blocks.
- `default_claims`: prose that introduces a table of "each default configuration" is followed by a checked output
  in which every `kernel (configuration)` is that kernel's registered default.
- `quoted_strings`: no cell ends by showing a bare Python string (Jupyter prints it quoted, 'Not timed: ...');
  text is printed or displayed as Markdown, as the other notebooks do.
- `dangling_introductions`: Markdown that ends with a colon (it introduces what comes next: "The trace of the kernel
  as it is now:") is followed by a code cell, not by another section.
tests/maintain/test_prose_and_output.py runs them on notebooks 02-09 (the last on every notebook).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from helpers.core import stages
from helpers.core.notebook_files import is_checked
from helpers.views import widgets

EXPLORER = re.compile(r"widgets\.tile_explorer\(\s*[\"'](\w+)[\"']")
# "TM = 4, 8, 32, 64", "BN = 32, then 16", "BK = 8 and 32", "TM = TN = 8", "PAD = 1, 2 and 4"
ASKED = re.compile(r"(?<!/ )(?<!/)\b((?:[A-Z]{2,3} = )+)(\d+)(?!\s*/)"
                   r"((?:(?:,\s*(?:then\s+)?|\s+and\s+|\s+then\s+)\d+\b(?!\s*[×x%/]))*)")
THREE_BLOCKS = re.compile(r"the\s+first,\s+a\s+middle\s+and\s+the\s+last\s+block")
BLOCKS = re.compile(r"blocks \(([\d, ]*)\)")
DEFAULTS = re.compile(r"\b(?:each|every) default configuration\b")
KERNEL_AND_CONFIG = re.compile(r"\b(\d\d_\w+)\s*\(((?:[A-Z_]+=\d+(?:, )?)+)\)")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class Mismatch:
    cell: int
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.what}"


def _next_code(nb, i: int) -> int | None:
    return next((j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code"), None)


def _stored_text(cell) -> str:
    return "\n".join(o.get("text", "") if o.get("output_type") == "stream"
                     else str(o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", []))


def explorer_values(nb, arch: str | None = None) -> list[Mismatch]:
    """Values the prose asks for in the notebook's tile explorer that its sliders do not offer."""
    explorers = {m.group(1) for c in nb.cells if c.cell_type == "code" for m in EXPLORER.finditer(c.source)}
    out = []
    for name in sorted(explorers):
        v = stages.variant(name)
        fields = set(widgets.config_fields(v))
        offered = {f: widgets.fitting_options(v, f, arch) for f in fields}
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown" or "explorer" not in cell.source:
                continue
            for m in ASKED.finditer(cell.source):
                names = [n.strip() for n in m.group(1).split("=") if n.strip()]
                values = [int(m.group(2))] + [int(x) for x in re.findall(r"\d+", m.group(3))]
                for f in (n for n in names if n in fields):
                    missing = [x for x in values if x not in offered[f]]
                    if missing:
                        out.append(Mismatch(i, f"asks for {f} = {', '.join(map(str, missing))} in {name}'s explorer, "
                                               f"whose {f} slider offers {', '.join(map(str, offered[f]))}"))
    return out


def block_claims(nb) -> list[Mismatch]:
    """Prose promising a trace of the first, a middle and the last block, above an output that shows fewer."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or not THREE_BLOCKS.search(cell.source):
            continue
        j = _next_code(nb, i)
        if j is None or not is_checked(nb.cells[j]):
            continue
        for m in BLOCKS.finditer(_stored_text(nb.cells[j])):
            blocks = [b for b in m.group(1).split(",") if b.strip()]
            if len(blocks) != 3:
                out.append(Mismatch(j, f"cell {i} says the trace checks the first, a middle and the last block; "
                                       f"this output traced blocks ({m.group(1)})"))
    return out


def default_claims(nb) -> list[Mismatch]:
    """Prose introducing 'each default configuration' above an output that shows another configuration."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or not DEFAULTS.search(cell.source):
            continue
        j = _next_code(nb, i)
        if j is None or not is_checked(nb.cells[j]):
            continue
        for m in KERNEL_AND_CONFIG.finditer(_stored_text(nb.cells[j])):
            try:
                default = stages.variant(m.group(1)).default.label()
            except (KeyError, ValueError):
                continue
            if m.group(2) != default:
                out.append(Mismatch(j, f"cell {i} speaks of each default configuration; this output shows "
                                       f"{m.group(1)} ({m.group(2)}), whose default is ({default})"))
    return out


def _is_text(node, assigned: dict) -> bool:
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return True
    return isinstance(node, ast.Name) and assigned.get(node.id, False)


def quoted_strings(nb) -> list[Mismatch]:
    """Cells whose last expression is a str (a literal, an f-string, or a name some branch binds to one)."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.source.lstrip().startswith("%"):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        if not tree.body or not isinstance(tree.body[-1], ast.Expr):
            continue
        assigned: dict[str, bool] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        assigned[t.id] = assigned.get(t.id, False) or _is_text(node.value, {})
        if _is_text(tree.body[-1].value, assigned):
            out.append(Mismatch(i, "its last line shows a Python string, which Jupyter prints quoted; print it, "
                                   "or show it as Markdown (display.NOT_TIMED, helpers.core.markdown.Markdown)"))
    return out


def dangling_introductions(nb) -> list[Mismatch]:
    """Markdown ending with a colon (the introduction of what follows) whose next cell is not code."""
    out = []
    for i, cell in enumerate(nb.cells[:-1]):
        if cell.cell_type != "markdown" or not COMMENT.sub("", cell.source).rstrip().endswith(":"):
            continue
        following = nb.cells[i + 1]
        if following.cell_type != "code":
            first = next((line for line in following.source.splitlines() if line.strip()), "")
            out.append(Mismatch(i, f"it ends by introducing what comes next, but the next cell is Markdown "
                                   f"({first[:60]!r}); put the cell it introduces right after it"))
    return out

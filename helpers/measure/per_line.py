"""A kernel's source with the memory requests of its traced blocks beside each line: shared requests,
wavefronts and the worst bank conflict, global requests and 32-byte sectors, each against its ideal. The
notebooks call it as accesses.per_line_view(trace); it reads the same trace as the rest of accesses.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.kernel_source import template_base
from helpers.core.paths import ROOT
import numpy as np

from helpers.measure import request_table
from helpers.measure import trace as trace_mod


def _kernel_lines(tr: trace_mod.Trace) -> range:
    """Line numbers of the traced kernel's definition, template line to closing brace."""
    lines = tr.source.stripped.splitlines()
    name = template_base(tr.kernel)
    start = next((i for i, t in enumerate(lines) if "__global__" in t
                  and re.search(rf"\b{re.escape(name)}\s*\(", "\n".join(lines[i:i + 3]))), None)
    if start is None:
        return range(1, len(lines) + 1)
    if start > 0 and lines[start - 1].strip().startswith("template"):
        start -= 1
    depth, seen, end = 0, False, len(lines) - 1
    for i in range(start, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        seen = seen or "{" in lines[i]
        if seen and depth <= 0:
            end = i
            break
    return range(start + 1, end + 2)


@dataclass
class PerLineView:
    """The kernel's source, with the shared and global requests of the traced blocks beside each line."""
    title: str
    rows: list[dict]

    COLUMNS = ("line", "shared requests", "wavefronts", "ideal wavefronts", "max ways", "global requests",
               "sectors", "ideal sectors", "accesses", "source")

    def frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))  # the source with its comments

    def row(self, line: int) -> dict:
        return next(r for r in self.rows if r["line"] == line)

    def busy_rows(self) -> list[dict]:
        """The rows of lines where the traced blocks made requests."""
        return [r for r in self.rows if r["shared requests"] or r["global requests"]]

    def _left_out(self) -> str:
        quiet = len(self.rows) - len(self.busy_rows())
        return (f"({quiet} of the kernel's {len(self.rows)} lines made no request and are left out; "
                f"print(view.text(all_lines=True)) or view.frame() shows every line.)")

    def __str__(self) -> str:
        """Plain text of the lines with requests."""
        return self.text()

    def text(self, width: int = 72, all_lines: bool = False) -> str:
        """Plain text; the source without comments, cut at `width` characters; only the lines where the traced
        blocks made requests unless all_lines."""
        head = [self.title,
                f"{'':>4}   {'shared memory':-^33}   {'global memory':-^24}",
                f"{'line':>4}   {'requests':>8} {'wavefronts':>10} {'ideal':>6} {'ways':>5}   {'requests':>8} "
                f"{'sectors':>7} {'ideal':>7}   {'accesses':<16} source"]
        body = []
        for r in (self.rows if all_lines else self.busy_rows()):
            s = "" if not r["shared requests"] else (f"{r['shared requests']:>8} {r['wavefronts']:>10} "
                                                    f"{r['ideal wavefronts']:>6} {r['max ways']:>5}")
            g = "" if not r["global requests"] else (f"{r['global requests']:>8} {r['sectors']:>7} "
                                                    f"{r['ideal sectors']:>7}")
            src = r["code"] if len(r["code"]) <= width else r["code"][:width - 3] + "..."
            body.append(f"{r['line']:>4}   {s:<33}   {g:<24}   {r['accesses']:<16} {src}".rstrip())
        return "\n".join(head + body + ([] if all_lines else [self._left_out()]))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        th = "".join(f"<th>{html.escape(c)}</th>" for c in self.COLUMNS)
        trs = []
        for r in self.busy_rows():
            busy = True
            cells = []
            for c in self.COLUMNS:
                v = r[c]
                text = "" if v in (0, None) and c not in ("line", "source") else html.escape(str(v))
                style = "text-align:left;font-family:monospace;white-space:pre" if c == "source" else "text-align:right"
                if c == "max ways" and isinstance(v, int) and v > 1:
                    style += ";color:#b30000;font-weight:bold"
                cells.append(f'<td style="{style}">{text}</td>')
            trs.append(f'<tr style="{"background:#fff7e6" if busy else ""}">{"".join(cells)}</tr>')
        return (f"<p><b>{html.escape(self.title)}</b></p><table><thead><tr>{th}</tr></thead>"
                f"<tbody>{''.join(trs)}</tbody></table><p><i>{html.escape(self._left_out())}</i></p>")


def _display_path(path: Path) -> str:
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def per_line_view(tr: trace_mod.Trace) -> PerLineView:
    """The kernel's source lines, each with the totals of the traced blocks' requests made there:
    shared requests, wavefronts (and the conflict-free minimum), the worst conflict; global
    requests and 32-byte sectors (and the fewest the bytes fit in)."""
    t = request_table.request_table(tr)
    is_global = t.space == trace_mod.SPACES.index("global")
    touched, fewest = request_table.sector_counts(t)
    banks = request_table.bank_counts(t)
    busy, at = np.unique(t.line, return_inverse=True)
    per_line = lambda values, where: np.bincount(at, np.where(where, values, 0), busy.size).astype(np.int64)  # noqa: E731
    sums = {"shared requests": per_line(1, ~is_global), "wavefronts": per_line(banks.wavefronts, ~is_global),
            "ideal wavefronts": per_line(banks.ideal, ~is_global), "max ways": np.zeros(busy.size, np.int64),
            "global requests": per_line(1, is_global), "sectors": per_line(touched, is_global),
            "ideal sectors": per_line(fewest, is_global)}
    np.maximum.at(sums["max ways"], at, np.where(is_global, 0, banks.ways))
    totals = {line: {k: int(v[i]) for k, v in sums.items()} | {"accesses": []} for i, line in enumerate(busy.tolist())}
    # the kinds of access on each line, in the order the requests first make them
    names, name_at = np.unique(t.array.astype(str), return_inverse=True)
    _, first = np.unique((at * 3 + t.op) * max(1, names.size) + name_at, return_index=True)
    for i in np.sort(first).tolist():
        op = t.op[i]
        totals[int(t.line[i])]["accesses"].append(f"{'ld' if op == 0 else 'st' if op == 1 else 'atom'} {t.array[i]}")
    lines = sorted(set(_kernel_lines(tr)) | set(totals))
    text, code = tr.source.text.splitlines(), tr.source.stripped.splitlines()
    rows = []
    for n in lines:
        t = totals.get(n, {"shared requests": 0, "wavefronts": 0, "ideal wavefronts": 0, "max ways": 0,
                           "global requests": 0, "sectors": 0, "ideal sectors": 0, "accesses": []})
        rows.append({"line": n, **{k: v for k, v in t.items() if k != "accesses"},
                     "accesses": ", ".join(t["accesses"]), "source": text[n - 1].rstrip() if 0 < n <= len(text) else "",
                     "code": code[n - 1].rstrip() if 0 < n <= len(code) else ""})
    blocks = ", ".join(map(str, tr.blocks))
    title = (f"{tr.kernel} in {_display_path(tr.source.path)}: block{'s' if len(tr.blocks) > 1 else ''} {blocks} "
             f"of grid {tr.grid[:2]}, {tr.threads_per_block} threads each; totals per source line")
    return PerLineView(title, rows)

"""Maintainer check: a table of committed results shows what the prose beside it says.

A notebook's prose states measured numbers with fact markers (helpers/measure/facts/, docs/numbers.md), and its
code cells print tables of committed results. A learner reads both, so they must agree:

1. **A table names its file.** Every cell that shows committed results (it reads results/ through gpu_results,
   ncu.committed, a results path ...) names the file or run folder of results/ it shows, in its output.
2. **It shows the file its introduction cites.** The results paths named in the last paragraph of the Markdown just
   above such a cell (the sentence that introduces the table) are among those its output names.
3. **Its numbers are the prose's.** For every marked number of the notebook whose fact is one value of one row of
   its file (a fact with a `row`: helpers/measure/facts/common.py), every table of that file that shows the row
   shows it once (a row printed twice is a table of two runs: refused), and the row's line holds the prose's number
   as the prose rounds it. A table that shows the row from another file, in a notebook that shows no table of the
   fact's file, is the wrong file.

`shown_outputs` gives what each results cell shows: the stored outputs of a # NBVAL_CHECK_OUTPUT cell (nbval keeps
them true), and for the others the outputs of running them here (helpers/maintain/cell_runner.py: no GPU, they
print committed results). tests/maintain/test_results_on_screen.py runs this on notebooks 02-09.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.core.notebook_files import is_checked
from helpers.maintain import cell_runner
from helpers.measure import facts

# a code cell that shows committed results: it reads them through one of these
READS_RESULTS = re.compile(r"\bgpu_results\.\w|\bncu\.committed|\bresults_files\.|[\"']results[\"']|[\"']results/|"
                           r"\bladder_report\.load|\bcommitted=|\bcommitted\.\w")
RESULTS_PATH = re.compile(r"(?<![\w/])results/[\w.\-/]*[\w/]")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Problem:
    cell: int
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.what}"


def results_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and READS_RESULTS.search(c.source)
            and not c.source.lstrip().startswith("%")]


def table_text(out) -> str:
    """An output as a table reads, a row on a line: printed text, or the plain text of a displayed value (its
    Markdown, or its HTML without tags, only where it has none)."""
    if out.get("output_type") == "stream":
        return out.get("text", "")
    data = out.get("data", {})
    for kind in ("text/plain", "text/markdown"):
        if kind in data:
            return data[kind] if isinstance(data[kind], str) else "".join(data[kind])
    return re.sub(r"<[^>]+>", " ", str(data.get("text/html", "")))


def shown_outputs(nb) -> dict[int, str]:
    """Results cell -> the text its output shows: stored for a checked cell, run here for the others."""
    cells = results_cells(nb)
    ran = cell_runner.run(nb, [i for i in cells if not is_checked(nb.cells[i])])
    return {i: "\n".join(table_text(o) for o in (nb.cells[i].outputs if is_checked(nb.cells[i]) else ran[i]))
            for i in cells}


def paths(text: str) -> set[str]:
    """The results files and folders a text names (not a pattern such as `results/ncu_*/`)."""
    return {m.group().rstrip("/") for m in RESULTS_PATH.finditer(text) if text[m.end():m.end() + 1] not in "*<{"
            or m.end() == len(text)}


def covers(shown: set[str], cited: str) -> bool:
    """Whether a path the output names is the cited one, inside it, or holds it (a run folder and its files)."""
    return any(s == cited or s.startswith(cited + "/") or cited.startswith(s + "/") for s in shown)


def _introduction(nb, index: int) -> str:
    """The last paragraph of the Markdown between the code cell above `index` and it: what introduces the cell."""
    text = []
    for cell in reversed(nb.cells[:index]):
        if cell.cell_type == "code":
            break
        text.insert(0, cell.source)
    paragraphs = [p for p in re.split(r"\n\s*\n", "\n\n".join(text)) if p.strip()]
    return paragraphs[-1] if paragraphs else ""


def blocks(text: str) -> list[tuple[set[str], list[str]]]:
    """An output's text cut where a line names results files: (the files, the lines up to the next such line)."""
    out: list[tuple[set[str], list[str]]] = []
    for line in text.splitlines():
        named = paths(line)
        if named or not out:
            out.append((named, []))
        out[-1][1].append(line)
    return out


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def holds(line: str, number: str) -> bool:
    """Whether the line shows `number` (the prose's, e.g. '22.13' or '44'), each rounded to the fewer decimals of
    the two; a number with decimals is looked for among the line's numbers with decimals."""
    want = float(number.replace(",", ""))
    for token in NUMBER.findall(line.replace(",", "")):
        if _decimals(number) and not _decimals(token):
            continue
        d = min(_decimals(token), _decimals(number))
        if round(float(token), d) == round(want, d):
            return True
    return False


def _has_column(lines: list[str], titles: tuple[str, ...]) -> bool:
    """Whether the table shows the value at all: a column of one of these titles (no titles: any table does)."""
    return not titles or any(t in line for line in lines for t in titles)


def _row_lines(lines: list[str], alternatives: list[tuple[str, ...]]) -> list[str]:
    return [line for line in lines if any(all(re.search(p, line) for p in alt) for alt in alternatives)]


def problems(nb, shown: dict[int, str] | None = None) -> list[Problem]:
    """What disagrees between the notebook's tables of committed results and its prose (the rules above)."""
    shown = shown_outputs(nb) if shown is None else shown
    found = []
    for i, text in shown.items():
        named = paths(text)
        if not named:
            found.append(Problem(i, "it shows committed results but names no file of results/ (say which file "
                                    "and run the table shows)"))
        for cited in sorted(paths(_introduction(nb, i))):
            if not covers(named, cited):
                found.append(Problem(i, f"the text introducing it cites {cited}, but it shows "
                                        f"{', '.join(sorted(named)) or 'no named file'}"))
    for m_cell, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for m in facts.MARKER.finditer(cell.source):
            key, *args = m["name"].split("/")
            f = facts.FACTS.get(key)
            if f is None or f.row is None:
                continue
            alternatives = f.row(*args)
            own, other = 0, []
            for i, text in shown.items():
                for files, lines in blocks(text):
                    rows = _row_lines(lines, alternatives)
                    if not rows:
                        continue
                    if not covers(files, f.source):
                        other.append((i, ", ".join(sorted(files)) or "no named file"))
                        continue
                    own += 1
                    if len(rows) > 1:
                        found.append(Problem(i, f"its table of {f.source} shows the row of {m['name']} "
                                                f"{len(rows)} times: {' | '.join(r.strip() for r in rows)}"))
                    elif _has_column(lines, f.columns) and not holds(rows[0], m["number"]):
                        found.append(Problem(i, f"cell {m_cell} says {m['number']} ({m['name']}), but the table "
                                                f"shows: {rows[0].strip()}"))
            if not own and other:
                found.append(Problem(other[0][0], f"it shows the row of {m['name']} from {other[0][1]}, but the "
                                                  f"prose (cell {m_cell}) cites {f.source}"))
    return found

"""Maintainer check: no exercise's answer is on the screen above it.

A learner works down a notebook. If the right answer of an exercise is already printed above its
checker call (in the prose, or in the output of a cell above it, committed or made by running the
notebook), the exercise asks for nothing. For every checker call `check_NN_exercise_K(...)` of
notebooks 02-10, this module takes the right answer from the registry (helpers/course/exercises/solutions/,
computed from the course's instruments) and looks for it, in the forms a learner would see it, in
every markdown cell and every output above the call.

What counts as "the answer appears" (RULES, one entry per checker):
- every answer: the Python literal a learner would type, `(8, 4)`, `{1, 2, 3}`, `{'A'}`;
- every whole number of four or more digits that is not a power of two (16640, 112,640): such a
  number is specific enough to look for anywhere;
- what each checker's answer looks like where the course's own instruments print it: small numbers
  (2, 4, 8, 32 appear on every screen) are looked for only in those forms, e.g. a bank summary of the
  very configuration an exercise asks about, "warps 4, lanes 8 x", "9 of 11 intervals", "512
  multiply-adds", a ratio "2.7 times" within the checker's tolerance. These forms follow what the
  notebooks print; an answer printed in a new form needs a new pattern here.
One checker is reviewed by hand instead (EXEMPT, with the reason).

Beyond the cells themselves, what a learner reads first counts too:
- the kernel sources, diffs and committed tables cells above show (`shown_without_running`: the cells that print
  them run here, in this process, without the rest of the notebook; a kernel's header is its first comment);
- the messages of the checkers above, as a learner who answered them right reads them (`right_message`);
- README.md, which a learner reads before any notebook (`readme_leaks`; docs/results.md, which answers the
  predictions, says to read it after the notebooks).
A prediction's answer is a letter; its forms are the measured numbers, a sentence that says the outcome, and any
marked fact of the run it asks about (`<!-- fact: run_06_07_... -->` is a measured number of that run), listed by
each stage module's prediction_on_screen().

tests/maintain/test_answers_off_screen.py runs this on the committed notebooks (their prose and the
committed outputs of the # NBVAL_CHECK_OUTPUT cells, and what the display cells above show); the root
conftest.py runs it as nbval executes each notebook, on the outputs that run makes of every cell
(`nbval_report`).
"""

from __future__ import annotations

import functools
import html
import importlib
import re
from dataclasses import dataclass
from typing import Callable

from helpers.core import configs, stages
from helpers.core.paths import ROOT
from helpers.course import exercises
from helpers.course.exercises import (solutions, stage03, stage04, stage05, stage06, stage07, stage08, stage09,
                                      stage10)
from helpers.course.exercises.calls import checker_calls
from helpers.maintain import cell_runner, results_on_screen

STAGES = tuple(f"{n:02d}" for n in range(2, 11))     # the notebooks checked: 02 ... 10
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# checker -> why it is reviewed by hand rather than searched for
EXEMPT = {
    "check_02_exercise_1": "a choice between the two kernels the notebook is about ('02_naive' or "
                           "'02_naive_coalesced'): both names are in the question itself, and section 1 explains "
                           "the two mappings. The exercise checks that the learner took that in.",
}


# ---- what a cell shows ------------------------------------------------------------------------------
def output_text(out) -> str:
    """The text a learner sees of one output: streams, plain text, markdown, tables (HTML without its
    tags) and tracebacks; images and widgets show none."""
    kind = out.get("output_type")
    if kind == "stream":
        return out.get("text", "")
    if kind == "error":
        return ANSI.sub("", "\n".join(out.get("traceback", [])))
    data = out.get("data", {})
    parts = [data[k] for k in ("text/plain", "text/markdown", "text/latex") if k in data]
    if "text/html" in data:
        parts.append(html.unescape(re.sub(r"<[^>]+>", " ", data["text/html"])))
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


def shown(cell, outputs=None) -> str:
    """What a cell puts on the screen: a markdown cell its text, a code cell its outputs (`outputs`
    in place of the stored ones, when given)."""
    if cell.get("cell_type") == "markdown":
        return cell.get("source", "")
    if cell.get("cell_type") == "code":
        return "\n".join(output_text(o) for o in (cell.get("outputs", []) if outputs is None else outputs))
    return ""


# ---- forms of a number ----------------------------------------------------------------------------------
def number(n: int) -> str:
    """A regex for the whole number n as a notebook may print it: 16640, 16,640, 16 640 (thin spaces
    too), not as a part of a longer number."""
    forms = {str(n), f"{n:,}"} | {f"{n:,}".replace(",", sep) for sep in (" ", "\u2009", "\u202f", "\u00a0")}
    return r"(?<![\d.,])(?:" + "|".join(map(re.escape, sorted(forms, key=len, reverse=True))) + r")(?![\d]|[.,]\d)"


def _value(x) -> str:
    if isinstance(x, float) and not x.is_integer():
        return re.escape(f"{x:g}")
    return rf"{int(x)}(?:\.0+)?" if isinstance(x, float) else str(x)


def literal(answer) -> str | None:
    """A regex for the Python literal of a tuple or set answer: (8, 4), {1, 2, 3}, {'A'}."""
    if isinstance(answer, tuple) and all(isinstance(x, (int, float)) for x in answer):
        return r"\(\s*" + r"\s*,\s*".join(_value(x) for x in answer) + r"\s*\)"
    if isinstance(answer, (set, frozenset)):
        items = [f"""['"]{re.escape(x)}['"]""" if isinstance(x, str) else _value(x) for x in sorted(answer)]
        return r"\{\s*" + r"\s*,\s*".join(items) + r"\s*\}"
    return None


def distinctive(x) -> bool:
    """A whole number worth looking for anywhere: four digits or more, and not a power of two (4096,
    8192 are sizes on every screen)."""
    return isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 1000 and (abs(x) & (abs(x) - 1)) != 0


def _components(args: tuple) -> list:
    out = []
    for a in args:
        out.extend(a if isinstance(a, tuple) else [a])
    return out


# ---- the rules, one per checker ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    what: str                                   # how the answer would be printed, in words
    pattern: str                                # a regex (MULTILINE)
    accept: Callable[[re.Match], bool] | None = None   # a further test of a match


def _bank_summary(variant: str, fields: dict) -> str:
    """The header of accesses.bank_summary for this configuration: its table holds words and wavefronts."""
    v = stages.variant(variant)
    return re.escape(v.name_expression(v.config(**fields))) + r", warp 0"


def _pair_of(args) -> tuple:
    return args[0] if len(args) == 1 else args


def _rules_02(name, args) -> list[Form]:
    a, b = _pair_of(args)
    if name == "check_02_exercise_2":
        return [Form("the grid as 'gx x gy'", rf"(?<![\d.])\b{a}\s*[x×]\s*{b}\b(?![\d.])"),
                Form("the grid as CUDA's dim3 prints it", rf"\(\s*{a}\s*,\s*{b}\s*,\s*1\s*\)")]
    return [Form("the block shape", rf"\bblock\s*\(?{a}\s*[,x×]\s*{b}\b|(?<![\d.])\b{a}\s*[x×]\s*{b}\s+block")]


def _rules_03(name, args) -> list[Form]:
    words_or_tiled, n = _pair_of(args)
    if name == "check_03_exercise_1":
        t = stage03.EX03_1_TILE
        return [Form("the reuse table's row of the naive block",
                     rf"02_naive_coalesced \(block_x={t}, block_y={t}\)\s+\d+\s+\d+\s+{n}\b"),
                Form("the reuse table's row of the tile", rf"03_smem_tiling \(tile={t}\)\s+\d+\s+\d+\s+{words_or_tiled}\s"),
                Form("prose: loaded N times", rf"\b{n} for 02_naive_coalesced with an? {t}\s*[x×]\s*{t} block|"
                                              rf"\bloaded {n} times\b")]
    return [Form("the bank summary of the tile asked about", _bank_summary("03_smem_tiling", {"tile": stage03.EX03_2_TILE}))]


def _rules_04(name, args) -> list[Form]:
    a, b = _pair_of(args)
    if name == "check_04_exercise_1":
        per_block = stages.variant("04_1d_thread_tiling").default.threads() // 32
        return [Form("the occupancy table's 'blocks x warps = warps'", rf"\b{a} x {per_block} = {b}\b"),
                Form("prose: N blocks of M warps", rf"\b{a} (?:whole )?blocks? of {per_block} warps\b")]
    return [Form("the bank summary of the configuration asked about",
                 _bank_summary("04_1d_thread_tiling", stage04.EX04_2_CONFIG))]


def _rules_05(name, args) -> list[Form]:
    if name == "check_05_exercise_1":
        forms = []
        for (tm, tn), want in zip(stage05.EX05_1_TILES, _pair_of(args)):
            label = stages.variant("05_2d_thread_tiling").config(TM=tm, TN=tn).label()
            forms += [Form("prose: results / loads = answer", rf"{tm * tn} / {tm + tn} = {_value(float(want))}(?![\d])"),
                      Form("the intensity table's row of the tile", re.escape(label) + r"\)\s+[\d.]+\s+[\d.]+\s+[\d.]+"),
                      Form("prose: N multiply-adds per load",
                           rf"(?<![\d.]){_value(float(want))}\s+multiply-adds per (?:shared )?load")]
        return forms
    c = stage05.EX05_2_CONFIG
    return [Form("the bank summary of the configuration asked about", _bank_summary("05_2d_thread_tiling", c)),
            Form("the wider-loads listing of the tile", rf"{c['TM']} x {c['TN']}: load Bs as\s+4-byte loads")]


def _rules_06(name, args) -> list[Form]:
    if name == "check_06_exercise_1":
        pads = sorted(_pair_of(args)) if len(args) == 1 else sorted(args)
        head, last = ", ".join(map(str, pads[:-1])), str(pads[-1])
        listed = rf"{head}(?:,|,?\s+(?:and|or))\s+{last}" if head else last
        return [Form("prose: PAD = the good ones", rf"PAD = {listed}\b(?!,)")]
    forms = []
    for fields, ways in zip(stage06.EX06_2_FIELDS, _pair_of(args)):
        bk = fields["BK"]
        forms += [Form("prose: N-way (BK = ...)", rf"\b{ways}-way \(BK = {bk}\)"),
                  Form("the conflicts table's section of this BK", rf"^\s*8 x 8, BK = {bk}\s*$"),
                  Form("the bank summary of the configuration asked about", _bank_summary("06_transposed_a", fields))]
    return forms


def _rules_07(name, args) -> list[Form]:
    if name == "check_07_exercise_1":
        n16, _ = _pair_of(args)
        return [Form("the count from the configuration, per tile of A",
                     rf"global load A\s+traced\s+\d+ requests; from the configuration \d+ tiles x {n16} =")]
    if name == "check_07_exercise_3":
        return [Form("the bank summary of the configuration asked about", _bank_summary(v, stage07.EX07_3_CONFIG))
                for v in ("06_transposed_a", "07_vectorized")]
    return []


def _rules_08(name, args) -> list[Form]:
    c = configs.WarpTileConfig(**stage08.EX08_1_CONFIG)
    if name == "check_08_exercise_1":
        warps, rows = _pair_of(args)
        return [Form("the registry table's row", re.escape(c.label()) + rf"\s+warps {warps}, lanes {rows} x"),
                Form("prose: lanes form a grid", rf"= {rows} [×x] {c.WN // c.TN} grid;? the block's {warps} warps")]
    return []


def _rules_09(name, args) -> list[Form]:
    if name == "check_09_exercise_2":
        (n,) = args
        tiles = stage09.EX09_2_TILES
        return [Form("the schedule's summary line", rf"\b{n} of {tiles + 1} intervals compute"),
                Form("the schedule of 09_double_buffering over this many tiles",
                     rf"sgemm_double_buffering<[^>]*>, block 0 of [^\n]*\({tiles} k-tiles\)")]
    if name == "check_09_exercise_3":
        write, read = _pair_of(args)
        return [Form("a race naming both lines", rf"\bline {write}\b[^\n]*\bline {read}\b")]
    return []


def _ratio_accepted(m: re.Match) -> bool:
    """A factor printed as 'N.NN times': the answer rounded as printed, or one the checker accepts."""
    got = float(m.group(1))
    places = len(m.group(1).split(".")[1])
    want = stage10._ex10_3_ratio()
    return round(want, places) == got or exercises.check_10_exercise_3(got).ok


def _rules_10(name, args) -> list[Form]:
    if name == "check_10_exercise_2":
        return [Form("prose: N multiply-adds", number(args[0]) + r"\s+multiply-adds")]
    if name == "check_10_exercise_3":
        return [Form("a factor N.NN times (the answer rounded, or within the checker's tolerance)",
                     r"(?<![\d.])(\d+\.\d+)\s*(?:times|×)", _ratio_accepted)]
    if name == "check_10_exercise_4":
        fmas, read = _pair_of(args)
        return [Form("prose: N multiply-adds", number(fmas) + r"\s+multiply-adds"),
                Form("prose: N bytes of A", number(read) + r"\s+bytes of A")]
    return []


_BY_STAGE = {"02": _rules_02, "03": _rules_03, "04": _rules_04, "05": _rules_05, "06": _rules_06, "07": _rules_07,
             "08": _rules_08, "09": _rules_09, "10": _rules_10}


def forms(name: str, args: tuple) -> list[Form]:
    """Every form in which checker `name`'s answer `args` counts as on the screen."""
    found = []
    shape = _pair_of(args)
    if (pattern := literal(shape)) is not None:
        found.append(Form("the Python literal of the answer", pattern))
    for x in _components(args):
        if distinctive(x):
            found.append(Form(f"the number {x}", number(x)))
    stage = exercises.CHECKER_NAME.match(name).group(1)
    if name.endswith("_prediction"):
        return found + _prediction_forms(stage, args)
    return found + _BY_STAGE[stage](name, args)


def _prediction_forms(stage: str, args: tuple) -> list[Form]:
    """A stage's prediction is answered with a letter: on the screen as that letter quoted, or as what it rests on,
    the measured numbers themselves, in the forms its stage module lists (prediction_on_screen(): (what, regex))."""
    module = importlib.import_module(f"helpers.course.exercises.stage{stage}")
    letter = str(args[0])
    return ([Form("the letter, quoted", rf"""(?<![\w])['"]{re.escape(letter)}['"](?![\w])""")]
            + [Form(what, pattern) for what, pattern in getattr(module, "prediction_on_screen", list)()])


@functools.cache
def solution(name: str) -> tuple:
    """The registry's right answer, once per process (some are traced)."""
    return solutions.solution(name)


# ---- the search ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Leak:
    checker: str
    call_cell: int       # the cell that calls the checker
    cell: int            # the cell above it that shows the answer
    form: str
    excerpt: str

    def __str__(self) -> str:
        return (f"{self.checker} (cell {self.call_cell}): its answer is on the screen in cell {self.cell}, "
                f"as {self.form}: ...{self.excerpt}...")


def _excerpt(text: str, m: re.Match, width: int = 60) -> str:
    return text[max(0, m.start() - width):m.end() + width].replace("\n", " / ")


def find(text: str, form: Form) -> re.Match | None:
    """The first match of `form` in `text`; a space of its pattern matches any run of white space (markdown
    wraps its lines anywhere)."""
    for m in re.finditer(re.sub(r"(?<!\\) ", r"\\s+", form.pattern), text, re.M):
        if form.accept is None or form.accept(m):
            return m
    return None


@functools.cache
def right_message(name: str) -> str:
    """What checker `name` says to a learner who answered it right: they read it before the exercises below."""
    return exercises.CHECKERS[name](*solution(name)).message


# cells that show a kernel's source or its diff (its header comment: what the kernel is) and need nothing heavy
SHOWS_SOURCE = re.compile(r"\bdisplay\.(?:kernel_source|lesson_diff|kernel_diff)\(")


def shown_without_running(nb) -> dict[int, list]:
    """The outputs of the cells that show kernel sources, diffs and committed tables, made here without running the
    notebook (helpers/maintain/cell_runner.py; their outputs are not committed): cell index -> outputs."""
    cells = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code" and SHOWS_SOURCE.search(c.source)]
    cells += [i for i in results_on_screen.results_cells(nb) if not nb.cells[i].get("outputs")]
    return cell_runner.run(nb, sorted(set(cells))) if cells else {}


def leaks(nb, outputs: dict[int, list] | None = None, upto: int | None = None) -> list[Leak]:
    """Every exercise of `nb` (a notebook of STAGES) whose right answer a cell above its checker call
    shows, or the right-answer message of a checker called above it. `outputs`: cell index -> the outputs a
    run made (in place of the stored ones); `upto`: look only at the checker calls in cells before it."""
    outputs = outputs or {}
    texts = [shown(c, outputs.get(i)) for i, c in enumerate(nb.cells)]
    with_messages: set[int] = set()

    def text(j: int) -> str:   # a checker cell's text with its right-answer messages, made when a call below needs it
        if j not in with_messages:
            with_messages.add(j)
            texts[j] += "".join(f"\n{right_message(call.name)}" for call in checker_calls(nb.cells[j].get("source", ""))
                                if nb.cells[j].get("cell_type") == "code" and call.name in exercises.CHECKERS)
        return texts[j]

    found = []
    for i, cell in enumerate(nb.cells[:upto]):
        if cell.get("cell_type") != "code":
            continue
        for call in checker_calls(cell.get("source", "")):
            if call.name in EXEMPT:
                continue
            for form in forms(call.name, solution(call.name)):
                for j in range(i):
                    m = find(text(j), form)
                    if m:
                        found.append(Leak(call.name, i, j, form.what, _excerpt(text(j), m)))
                        break
    return found


def readme_leaks(path=ROOT / "README.md") -> list[str]:
    """Every exercise of STAGES whose answer README.md shows, in any of its forms: a learner reads it first."""
    import nbformat
    text = path.read_text()
    found = []
    for stage in STAGES:
        nb = nbformat.read(next((ROOT / "notebooks").glob(f"{stage}_*.ipynb")), as_version=4)
        for call in (call for c in nb.cells if c.cell_type == "code" for call in checker_calls(c.source)):
            if call.name in EXEMPT:
                continue
            for form in forms(call.name, solution(call.name)):
                m = find(text, form)
                if m:
                    found.append(f"{call.name}: {path.name} shows its answer as {form.what}: ...{_excerpt(text, m)}...")
                    break
    return found


def stage_of(path) -> str | None:
    m = re.match(r"(\d\d)_", getattr(path, "name", str(path).rsplit("/", 1)[-1]))
    return m.group(1) if m and m.group(1) in STAGES else None


# ---- beside nbval ---------------------------------------------------------------------------------------------
_RUN_OUTPUTS: dict[str, dict[int, list]] = {}     # notebook path -> cell index -> the outputs nbval's run made


def nbval_report(item, call, report) -> None:
    """For the root conftest.py: as nbval runs a cell of a notebook of STAGES, remember its outputs;
    when the cell calls a checker, fail it if a cell above it shows the checker's answer, in the
    outputs of this run (or, for a cell that did not run, its stored ones)."""
    if type(item).__name__ != "IPyNbCell" or call.when != "call" or stage_of(item.parent.path) is None:
        return
    nb = item.parent.nb
    index = next((i for i, c in enumerate(nb.cells) if c is item.cell), None)
    if index is None:
        return
    runs = _RUN_OUTPUTS.setdefault(str(item.parent.path), {})
    runs[index] = list(item.test_outputs or [])
    if not checker_calls(item.cell.get("source", "")) or report.failed:
        return
    found = [leak for leak in leaks(nb, runs, upto=index + 1) if leak.call_cell == index]
    if found:
        report.outcome = "failed"
        report.longrepr = ("An exercise's answer is on the screen above it (helpers/maintain/answers_on_screen.py):\n  "
                           + "\n  ".join(map(str, found)))

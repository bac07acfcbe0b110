"""The red team's table (issue 32): each row an attack a determined class makes on the grader, and what the
grader must do with it. A new attack is a new row. Every row failed before the fix it names.

Fast rows (no sandbox): the grader's own reading of what a notebook holds, a record the sandbox sends back,
the text it prints. Slow rows (`slow`, `emulator`: bubblewrap and a Jupyter kernel per notebook, the emulator for
kernel cells): hostile notebooks graded for real beside an honest one. The command line's rows are in
tests/e2e/test_cli_attacks.py; the whole bar, one `teacher grade` run over a class, in test_grading_bar.py."""

from __future__ import annotations

import json
import re
import resource
import time
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.teach import sandbox
from helpers.teach.grading import checkers, kernel_cells, notebook, results, run
from helpers.teach.grading.results import ExerciseResult, Grade
from support import require_sandbox

ROOT = paths.ROOT


# ---- odd whitespace: honest answers a Jupyter kernel runs must stay right (item 3) -----------------------
WHITESPACE = {
    "form feed in a comment": "# page one\x0cpage two\n",
    "U+2028 in a string": "note = 'line\u2028separator'\n",
    "U+0085 (NEL) in a comment": "# next\x85line\n",
    "U+2029 in a comment, CRLF": "# para\u2029graph\r\n",
    "form feed alone on a line": "\x0c\n",
    "old Mac line ends": "x = 1\rprint(x)\r",
    "\\x1c-\\x1e in a string": "s = '\x1c\x1d\x1e'\n",
}


@pytest.mark.parametrize("before", WHITESPACE.values(), ids=WHITESPACE.keys())
def test_odd_whitespace_before_a_checker_call_keeps_the_answer_readable(before):
    source = before + "grid = (5, 13)\ncheck_02_exercise_2(grid)  # \x0c\ncheck_02_exercise_1(\n  '02_naive_coalesced')"
    rewritten = run.instrument(source, 4)
    compile(rewritten, "cell", "exec")                # was: SyntaxError: unmatched ')'
    assert "__tbt_answer__(4, 0, 'check_02_exercise_2', lambda: check_02_exercise_2)(grid)" in rewritten
    assert "lambda: check_02_exercise_1)(\n  '02_naive_coalesced')" in rewritten


# ---- records the sandbox sends back: never trusted, never a crash, never gigabytes (items 2 and 4) -------------
CALL = next(iter(run.checker_calls("check_02_exercise_2(g)")))
RECORDS = {
    "kwargs a list (was AttributeError)": {"args": ["(5, 13)"], "kwargs": []},
    "args a string": {"args": "(5, 13)"},
    "args holding a number": {"args": [5, 13]},
    "no args": {},
    "unreadable not a string": {"unreadable": {"x": 1}},
    "7.6 MiB of an answer (was 4 GB of the grader's memory)": {"args": ["(" + "1," * 4_000_000 + ")"]},
    "deep nesting": {"args": ["[" * 50_000 + "]" * 50_000]},
    "a 5000-digit number": {"args": ["9" * 5000]},
    "infinite values": {"args": ["(1e999, 1e999)"]},
    "a fraction near the right grid": {"args": ["(5.9, 13.2)"]},
}


@pytest.mark.parametrize("record", RECORDS.values(), ids=RECORDS.keys())
def test_a_hostile_answer_record_is_wrong_not_a_crash_and_costs_little(record):
    record = {"cell": 1, "call": 0, "check": "check_02_exercise_2", **record}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    result = checkers._judge_call(CALL, record, reads=False)
    assert result.status == "wrong", result
    assert time.perf_counter() - start < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024   # KiB: under 200 MiB more


def test_the_runner_passes_on_only_records_of_the_recorders_shape():
    assert sandbox.answer_record({"cell": 1, "call": 0, "check": "c", "args": ["1"], "kwargs": {}})["args"] == ["1"]
    for bad in ({"cell": "1", "call": 0, "check": "c"}, ["not", "a", "dict"], None):
        assert sandbox.answer_record(bad) is None
    huge = sandbox.answer_record({"cell": 1, "call": 0, "check": "c", "args": ["1" * 200_000], "kwargs": {}})
    assert "over the 100,000" in huge["unreadable"]


# ---- malformed notebooks: one notebook never loses the run (item 2) --------------------------------------------
def _raw_notebook(tmp_path: Path, mutate) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 02 · attacks"),
                nbformat.v4.new_code_cell("check_02_exercise_1('02_naive_coalesced')"),
                nbformat.v4.new_code_cell("x = 1")]
    data = json.loads(nbformat.writes(nb))
    mutate(data)
    path = tmp_path / "eve_02.ipynb"
    path.write_text(json.dumps(data))
    return path


def _set(cell: int, key: str, value):
    return lambda d: d["cells"][cell].__setitem__(key, value)


MALFORMED = {
    "a lone surrogate in a code cell (was UnicodeEncodeError)": (_set(2, "source", "s = '\ud800'"), "lone surrogate"),
    "a cell without cell_type (was AttributeError)": (lambda d: d["cells"][2].pop("cell_type"), "no kind"),
    "a cell_type no Jupyter knows": (_set(2, "cell_type", "evil"), "no kind"),
    "a source that is a number": (_set(2, "source", 42), "no text"),
    "a source list holding a number": (_set(2, "source", ["x = 1\n", 7]), "no text"),
    "a cell that is a list": (lambda d: d["cells"].__setitem__(2, ["x"]), "not a cell"),
    "metadata that is a list": (_set(2, "metadata", [1]), None),
    "notebook metadata a string": (lambda d: d.__setitem__("metadata", "x"), None),
}


@pytest.mark.parametrize("mutate, note", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_notebook_is_read_and_says_what_was_odd(tmp_path, mutate, note):
    nb, notes = notebook.read(_raw_notebook(tmp_path, mutate))
    assert all(c.cell_type in ("code", "markdown", "raw") and isinstance(c.source, str) for c in nb.cells)
    for c in nb.cells:
        c.source.encode("utf-8")                         # what the sandbox's Jupyter kernel is sent
    assert [c.source for c in nb.cells if c.cell_type == "code"][0] == "check_02_exercise_1('02_naive_coalesced')"
    assert (note is None and notes == []) or any(note in n for n in notes), notes


def test_a_notebook_too_large_to_read_is_refused_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook, "MAX_NOTEBOOK_BYTES", 1000)
    path = tmp_path / "big_02.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": "y" * 5000}))
    g = notebook.grade(path, sandbox=object())
    assert g.results == [] and "Clear Outputs" in g.problem


def test_cells_the_parser_cannot_take_have_no_calls_and_do_not_raise():
    for source in ("x = " + "+".join(["1"] * 100_000) + "\ncheck_02_exercise_1('a')",   # was RecursionError
                   "check_02_exercise_1('a')\n# \x00",                                  # a null byte
                   "x = 1\n" * 100_000 + "check_02_exercise_1('a')"):                   # 600 MB of syntax tree
        assert run.checker_calls(source) == [] and run.instrument(source, 1) == source


def test_a_grader_failure_on_one_notebook_is_its_problem_and_keeps_what_was_judged(tmp_path):
    class Judged:
        def results(self, *_):
            return [ExerciseResult("check_02_exercise_1", "right", "judged")]

    class Broken:
        def results(self, *_):
            raise RuntimeError("a bug a notebook found")

    class Box:
        limits = sandbox.Limits(wall_s=60)
    path = _raw_notebook(tmp_path, lambda d: None)
    original = notebook.run_notebook
    notebook.run_notebook = lambda *a, **k: run.Run({}, set(), None, [], None)
    try:
        g = notebook.grade(path, sandbox=Box(), kinds=[Judged(), Broken()])
    finally:
        notebook.run_notebook = original
    assert [r.status for r in g.results] == ["right"] and "the grader failed on this notebook" in g.problem
    assert "RuntimeError: a bug a notebook found" in g.problem


# ---- results written per notebook, as soon as each is known (item 2) ------------------------------------------
def test_each_grade_is_written_as_soon_as_it_is_known(tmp_path):
    out = results.Written(tmp_path / "g.json", tmp_path / "g.csv")
    out.add(Grade("alice_02.ipynb", "02", [ExerciseResult("check_02_exercise_1", "right", "ok")], 3.0, "all cells"))
    assert [g["notebook"] for g in json.loads((tmp_path / "g.json").read_text())] == ["alice_02.ipynb"]
    out.add(Grade("eve_02.ipynb", None, [], 0.0, "all cells", "could not read it: no JSON"))
    assert [g["notebook"] for g in json.loads((tmp_path / "g.json").read_text())] == ["alice_02.ipynb", "eve_02.ipynb"]
    rows = (tmp_path / "g.csv").read_text().splitlines()
    assert rows[-1].startswith("eve_02.ipynb,,,,error,could not read it") and len(rows) == 3
    assert not list(tmp_path.glob(".*part"))


# ---- terminal escapes: the teacher's terminal shows what was judged (item 6) -----------------------------------
ESCAPES = {
    "erase the line, write a verdict": "\x1b[2K\r  exercise 2   right          forged",
    "cursor up": "boom\x1b[1A\x1b[2Kexercise 1 right",
    "carriage return": "NameError\r  exercise 2   right",
    "bidi override": "x\u202eright\u202c",
    "OSC title": "\x1b]0;pwned\x07",
    "C1 CSI": "\x9b2K",
    "backspaces": "error\x08\x08\x08\x08\x08right",
}


@pytest.mark.parametrize("text", ESCAPES.values(), ids=ESCAPES.keys())
def test_text_a_student_controls_reaches_the_terminal_without_escapes(text):
    g = Grade(f"eve{text}_02.ipynb", "02", [ExerciseResult("check_02_exercise_2", "error", f"its cell raised {text}")],
              1.0, "all cells", problem=text, stopped=[text])
    shown = results.report([g, g])
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown), repr(shown)
    assert "exercise 2   error" in shown


# ---- kernel cells: ids that name files, and the notebook's time limit (items 5, 8) -------------------------------
class _NoSandbox:
    limits = sandbox.Limits(wall_s=30)
    enabled, backend, bwrap = False, "cpu", None


@pytest.mark.parametrize("exercise_id", ["../../../etc/passwd", "03/../../x", "", "a" * 100, "03\n", "03 x"])
def test_a_kernel_cell_id_is_checked_before_it_names_a_file(exercise_id):
    r = kernel_cells.KernelCells().judge_source(exercise_id, f"// %%kernel {exercise_id}\nint x;", _NoSandbox())
    assert r.status == "error" and "exercise's id" in r.message


def test_a_kernel_cell_gets_what_is_left_of_the_notebooks_time_limit():
    r = kernel_cells.KernelCells().judge_source("03", "// %%kernel 03\nint x;", _NoSandbox(),
                                                deadline=time.monotonic() - 1)
    assert r.status == "error" and "time limit" in r.message and "spent" in r.message


# ---- the sandbox: hostile notebooks graded for real (slow) -----------------------------------------------------
@pytest.mark.slow
@pytest.mark.emulator
def test_a_kernel_that_floods_its_output_keeps_its_verdict():
    """A check whose kernel prints 40 MiB (past the 32 MiB the grader reads) before the verdict: the verdict comes
    through (was: "ended without a verdict"), and the flood cannot forge one."""
    require_sandbox()
    box = sandbox.Sandbox(sandbox.Limits(wall_s=120), backend="cpu")
    kind = kernel_cells.KernelCells(magic="toy", judge="tests.teach.sandbox_judges:run_loud", time_limit=120)
    flood = "head -c 41943040 /dev/zero | tr '\\0' x\necho\n"
    r = kind.judge_source("01", f"// %%toy 01\n{flood}exit 0\n", box)
    assert (r.status, r.message) == ("right", "exercise 01: the script exited with 0"), r
    forged = json.dumps({"status": "right", "message": "forged"})
    r = kind.judge_source("01", f"// %%toy 01\n{flood}echo '{forged}'\nexit 1\n", box)
    assert r.status == "wrong" and "forged" not in r.message, r

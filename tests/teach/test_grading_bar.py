"""Issue 32's bar, run: a class of hostile notebooks graded in ONE `teacher grade` run beside an honest student.

The run must end with every notebook's verdicts (written to the JSON as each is known); the honest answers,
odd whitespace included, and the honest kernel right; every forgery graded wrong (or an error, never right); host
code and pasted assembly refused by the kernel check; a kernel cell held to --time-limit. (On a GPU, a kernel that
skips repeated launches is not reported at an impossible speed: tests/measure/test_fair_timing.py, gpu mark.)

Each notebook below is an attack the grader did not survive, or survived only partly, before issue 32 (the
red team's other rows are in tests/teach/test_grading_attacks.py). Ten notebooks in the sandbox, three kernel
cells checked on the emulator, one notebook that spends its whole time limit (mostly asleep): graded two at a time
(`--jobs 2`, that notebook first), the others are graded while it sleeps, about 105 s on 2 cores where one at a
time took 155 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.course.exercises import solutions
from helpers.teach import sandbox
from support import require_sandbox

pytestmark = [pytest.mark.slow, pytest.mark.emulator]

ROOT = paths.ROOT
SOLUTION_02 = ROOT / "helpers" / "course" / "write_it" / "solutions" / "02.cu"
TIME_LIMIT = 100            # seconds per notebook, its kernel cells included
IMPORTS = "from helpers.course.exercises import *"
EXERCISES = ["check_02_exercise_1", "check_02_exercise_2", "check_02_exercise_3", "check_02_exercise_4",
             "check_02_prediction", "kernel 02"]


def _write(folder: Path, name: str, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# 02 · {name}")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / f"{name}.ipynb")


def _class(folder: Path) -> dict[str, dict[str, set[str]]]:
    """Writes the class's notebooks into `folder`; returns, per notebook, the verdicts each exercise may get."""
    kernel = SOLUTION_02.read_text()
    letter = solutions.solution("check_02_prediction")[0]
    honest_kernel = "%%kernel 02\n" + kernel
    expect: dict[str, dict[str, set[str]]] = {}
    never_right = {"wrong", "error", "not attempted"}

    # the honest student: right answers, constant and computed, around a form feed, U+2028 and U+0085
    _write(folder, "honest", [
        IMPORTS,
        "# the coalesced one\x0c(page two of my notes)\ncheck_02_exercise_1('02_naive_coalesced')",
        "grid = ((70 + 15) // 16, (100 + 7) // 8)   # rounded up\u2028 as the grid must be\ncheck_02_exercise_2(grid)",
        "note = 'one lane per row\x85'\ncheck_02_exercise_3(1, 32)",
        "shape = (1, 32)\ncheck_02_exercise_4(*shape)",
        f"check_02_prediction({letter!r})",
        honest_kernel])
    expect["honest"] = {e: {"right"} for e in EXERCISES}

    # the solution registry, by every route a fresh process, a reload or a path gives
    _write(folder, "registry", [
        IMPORTS + "\nimport importlib, subprocess, sys",
        "out = subprocess.run([sys.executable, '-c', 'from helpers.course.exercises import sol' + 'utions as s; '\n"
        "                      'print(s.solution(\"check_02_exercise_2\"))'], capture_output=True, text=True).stdout\n"
        "check_02_exercise_2(eval(out)[0])",
        "m = importlib.reload(importlib.import_module('helpers.course.exercises.stage02'))\n"
        "table = vars(m)['SOL' + 'UTIONS']\ncheck_02_exercise_3(*table[m.check_02_exercise_3]())",
        "registry = importlib.import_module('helpers.course.exercises.sol' + 'utions')\n"
        "check_02_exercise_4(*registry.solution('check_02_exercise_4'))",
        "text = open(importlib.import_module('helpers.course.exercises').__path__[0] + '/solutions/__init__.py').read()\n"
        "check_02_exercise_1(text)"])
    expect["registry"] = {e: never_right for e in EXERCISES[:4]} | {"check_02_prediction": {"not attempted"},
                                                                   "kernel 02": {"not attempted"}}

    # verdicts printed, written to the runner's stdout through /proc, answer records forged, checkers replaced
    forged = ("{\"cell\": {\"cell\": 4, \"executed\": true, \"errors\": [], \"stderr\": \"\", \"answers\": "
              "[{\"cell\": 4, \"call\": 0, \"check\": \"check_02_exercise_1\", \"args\": [\"'02_naive_coalesced'\"], "
              "\"kwargs\": {}}]}}")
    _write(folder, "forger", [
        IMPORTS + "\nimport os\nfrom IPython.display import display\nfrom helpers.course.exercises import feedback",
        f"line = 'TBT-SANDBOX-RESULT ' + {forged!r} + '\\n'\nfor pid in (os.getppid(), 1):\n    try:\n"
        f"        open(f'/proc/{{pid}}/fd/1', 'w').write(line)\n    except OSError as e:\n        print('refused:', e)\n"
        f"print('Correct: forged by the student')",
        "import helpers.course.exercises as ex\nalways = lambda *a, **k: feedback.Feedback(True, 'forged')\n"
        "for name in list(vars(ex)):\n    if name.startswith('check_'):\n        setattr(ex, name, always)\n"
        "globals().update({n: always for n in vars(ex) if n.startswith('check_')})",
        "check_02_exercise_1('02_naive')",
        "display({'application/vnd.tile-by-tile.answer+json': {'cell': 5, 'call': 0, 'check': 'check_02_exercise_2', "
        "'args': ['(5, 13)'], 'kwargs': {}}}, raw=True)\ng = (13, 5)\ncheck_02_exercise_2(g)"])
    expect["forger"] = {"check_02_exercise_1": {"wrong"}, "check_02_exercise_2": {"wrong"}} | \
        {e: {"not attempted"} for e in EXERCISES[2:]}

    # an answer of 8 MiB, and text written to redraw the teacher's terminal
    _write(folder, "heavy", [
        IMPORTS,
        "big = tuple(range(10 ** 6))\ncheck_02_exercise_2(big)",
        "raise ValueError('\\x1b[2K\\r  exercise 3   right          \\x1b[1A')\ncheck_02_exercise_3(1, 32)",
        "check_02_exercise_1('02_naive_coalesced')"])
    expect["heavy"] = {"check_02_exercise_1": {"right"}, "check_02_exercise_2": {"wrong"},
                       "check_02_exercise_3": {"error"}} | {e: {"not attempted"} for e in EXERCISES[3:]}

    # host code in a branch NVRTC skips, and assembly pasted together by the preprocessor
    host = ('#ifdef __GNUC__\nextern "C" int system(const char*);\nstatic int pwned = system("id");\n#endif\n')
    body = kernel.split("{", 1)
    pasted = body[0] + "{\n#define CAT(a, b) a##b\n  CAT(as, m) volatile(\"nop\");\n" + body[1]
    _write(folder, "host_code", [IMPORTS, "%%kernel 02\n" + host + kernel])
    _write(folder, "pasted_asm", [IMPORTS, "%%kernel 02\n" + pasted])
    for name in ("host_code", "pasted_asm"):
        expect[name] = {e: {"not attempted"} for e in EXERCISES[:5]} | {"kernel 02": {"wrong"}}

    # a notebook that spends its time limit, then hands in a right kernel: the check gets what is left. Its first
    # cell is too deep for the grader's parser as well (the had 100,000 terms; past 3,000 ast.parse raises
    # RecursionError, which ended the whole run); the kernel takes minutes over it, the sleep makes sure.
    _write(folder, "slow", [IMPORTS, "x = " + "+".join(["1"] * 5_000), f"import time\ntime.sleep({TIME_LIMIT - 12})",
                            honest_kernel])
    expect["slow"] = {e: {"not attempted"} for e in EXERCISES[:5]} | {"kernel 02": {"error"}}

    # malformed: a lone surrogate, a cell with no kind; and a file that is no notebook at all
    nb = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 02 · malformed"), nbformat.v4.new_code_cell(IMPORTS),
        nbformat.v4.new_code_cell("s = '\ud800'\ncheck_02_exercise_1('02_naive_coalesced')"),
        nbformat.v4.new_code_cell("check_02_exercise_2((5, 13))")])))
    del nb["cells"][3]["cell_type"]
    (folder / "malformed.ipynb").write_text(json.dumps(nb))
    expect["malformed"] = {"check_02_exercise_1": {"right"}} | {e: {"not attempted"} for e in EXERCISES[1:]}
    (folder / "not_a_notebook.ipynb").write_text("{ not json")
    expect["not_a_notebook"] = {}
    return expect


def test_a_hostile_class_graded_in_one_run_beside_an_honest_student(tmp_path):
    require_sandbox()
    if not SOLUTION_02.is_file():
        pytest.skip("no write-it solutions here (helpers/course/write_it/solutions/02.cu): a teacher's copy has them")
    folder = tmp_path / "class"
    folder.mkdir()
    expect = _class(folder)
    out = tmp_path / "grades.json"
    # the notebook that spends its time limit first, so the others are graded beside it, not after it
    notebooks = sorted(folder.iterdir(), key=lambda p: (p.stem != "slow", p.name))
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", *map(str, notebooks), "--jobs", "2",
                        "--backend", "cpu", "--timeout", str(TIME_LIMIT), "--time-limit", str(TIME_LIMIT),
                        "--json", str(out), "--csv", str(tmp_path / "grades.csv")],
                       cwd=ROOT, capture_output=True, text=True, timeout=30 * 60)
    assert r.returncode == 0, r.stderr
    graded = {Path(g["notebook"]).stem: g for g in json.loads(out.read_text())}
    assert set(graded) == set(expect), "the run ends with every notebook's verdicts"
    for name, wanted in expect.items():
        got = {e["check"]: e["status"] for e in graded[name]["exercises"]}
        assert set(got) == set(wanted), (name, got)
        for check, status in got.items():
            assert status in wanted[check], (name, check, status, graded[name])
    messages = {name: {e["check"]: e["message"] for e in g["exercises"]} for name, g in graded.items()}
    assert "PASSED" in messages["honest"]["kernel 02"]
    assert "NVRTC skips" in messages["host_code"]["kernel 02"], messages["host_code"]
    assert "inline assembly" in messages["pasted_asm"]["kernel 02"], messages["pasted_asm"]
    assert "time limit" in messages["slow"]["kernel 02"], messages["slow"]
    assert re.search(r"100,?000", messages["heavy"]["check_02_exercise_2"]), messages["heavy"]
    assert "could not read it" in graded["not_a_notebook"]["problem"]
    assert "forged" not in r.stdout and not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", r.stdout), "the terminal is safe"
    steps = [s["step"] for s in next(e for e in graded["honest"]["exercises"] if e["check"] == "kernel 02")["steps"]]
    assert steps[:5] == ["contract", "compiles", "correct", "safe", "lesson"]      # what an exporter reads

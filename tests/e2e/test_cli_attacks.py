"""The red team's table for the command line (issue 32, item 8; the grader's own is tests/teach/
test_grading_attacks.py): each row an input a hostile or careless user gives, and what the command must do with
it: one message naming the cause and the fix, the exit status docs/command-line.md promises, never a traceback.

Exit statuses: 0 done, 1 a wrong result, 2 bad input or a compile error (nothing ran), 3 a kernel that failed
while running, or a command this machine cannot run (no GPU, no sandbox), 130 interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from helpers.core import paths
from support import helpers_cli

ROOT = paths.ROOT
NAIVE = ["kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "4,4", "--block", "16,16", "--mnk", "64,64,64",
         "--backend", "cpu"]
USAGE, FAILED, INTERRUPTED = 2, 3, 130


@pytest.fixture(scope="module")
def not_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("bytes") / "latin1.cu"
    path.write_bytes(b"// caf\xe9: saved as Latin-1\n__global__ void k(float* C) { C[0] = 1.0f; }\n")
    return path


NOT_TEXT = {   # (was: UnicodeDecodeError, exit 1, which the table defines as "a wrong result")
    "check": lambda p: ["check", str(p), "--kernel", "k", "--grid", "1", "--block", "1", "--mnk", "8,8,8",
                        "--backend", "cpu"],
    "trace": lambda p: ["trace", str(p), "--kernel", "k", "--grid", "1", "--block", "1", "--mnk", "8,8,8",
                        "--backend", "cpu"],
    "exercise check": lambda p: ["exercise", "check", "03", str(p), "--backend", "cpu"],
    "results-table --ladder": lambda p: ["results-table", "--ladder", str(p)],
}


@pytest.mark.parametrize("argv", NOT_TEXT.values(), ids=NOT_TEXT.keys())
def test_a_file_that_is_not_utf8_is_bad_input(argv, not_text):
    r = helpers_cli(*argv(not_text))
    assert r.returncode == USAGE and "is not UTF-8 text" in r.stderr and "Traceback" not in r.stderr, r.stderr


SETTINGS = {   # (was: ValueError, OverflowError, TimeoutExpired, and at -20 a correct kernel failed)
    "TBT_WORKERS=abc": ({"TBT_WORKERS": "abc"}, r"TBT_WORKERS='abc': .* whole number from 1"),
    "TBT_WORKERS=0": ({"TBT_WORKERS": "0"}, r"TBT_WORKERS='0'"),
    "TBT_TIMEOUT=abc": ({"TBT_TIMEOUT": "abc"}, r"TBT_TIMEOUT='abc': .* above 0"),
    "TBT_TIMEOUT=nan": ({"TBT_TIMEOUT": "nan"}, r"TBT_TIMEOUT='nan'"),
    "TBT_TIMEOUT=1e30": ({"TBT_TIMEOUT": "1e30"}, r"TBT_TIMEOUT='1e30'"),
    "TBT_TIMEOUT=0": ({"TBT_TIMEOUT": "0"}, r"TBT_TIMEOUT='0'"),
    "TBT_TIMEOUT=-20": ({"TBT_TIMEOUT": "-20"}, r"TBT_TIMEOUT='-20'"),
}


@pytest.mark.emulator      # the kernel is compiled before the launch reads the setting
@pytest.mark.parametrize("env, says", SETTINGS.values(), ids=SETTINGS.keys())
def test_a_setting_out_of_range_is_named_with_its_fix(env, says):
    import re
    r = helpers_cli("check", *NAIVE, env=env)
    assert r.returncode == USAGE and re.search(says, r.stderr) and "Fix:" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


LAUNCH = {   # (was: exit 3, "the kernel failed while running", for a launch that never started)
    "--grid 4,0": ["--grid", "4,0", "--block", "16,16"],
    "--block 2048": ["--grid", "1", "--block", "2048"],
    "--shared-mem -1": ["--grid", "4,4", "--block", "16,16", "--shared-mem", "-1"],
}


@pytest.mark.parametrize("geometry", LAUNCH.values(), ids=LAUNCH.keys())
def test_bad_launch_arguments_are_bad_input(geometry):
    r = helpers_cli("check", "kernels/02_naive.cu", "--kernel", "sgemm_naive", *geometry, "--mnk", "8,8,8",
                    "--backend", "cpu")
    assert r.returncode == USAGE and r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr


def test_dispatch_refuses_sizes_past_32_bit_indexing():
    r = helpers_cli("dispatch", "--sizes", "100000x100000x4", "--backend", "cpu")     # (was: a choice printed)
    assert r.returncode == USAGE and "more than the 2,147,483,647 a 32-bit int can index" in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["sweep", "dispatch-table"])
def test_gpu_only_commands_say_so_without_a_gpu(command):
    r = helpers_cli(command, "--backend", "cpu")                                       # (was: a CuPy CUDA error)
    assert r.returncode == FAILED and f"`{command}` times kernels on a GPU" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def _as_from_a_terminal():
    """Ctrl-C's default in the command's process, as a shell gives it: a test worker may ignore SIGINT (an
    in-process IPython kernel sets it so), and Python keeps an ignored SIGINT ignored in the processes it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted(argv, after_s: float, env=None):
    proc = subprocess.Popen([sys.executable, "-m", "helpers", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                            preexec_fn=_as_from_a_terminal)
    time.sleep(after_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.slow
@pytest.mark.emulator
def test_ctrl_c_ends_a_command_with_one_line_and_status_130():
    code, _, err = _interrupted(["ladder", "--size", "256", "--backend", "cpu"], 6)    # (was: a traceback)
    assert code == INTERRUPTED and "interrupted" in err and "Traceback" not in err, err


# ---- teacher grade --------------------------------------------------------------------------------------------
def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 02 · a test")] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("option", [["--time-limit", "0"], ["--timeout", "-5"], ["--json", "no/such/folder/g.json"]])
def test_grade_refuses_bad_options_before_it_runs_anything(tmp_path, option):
    nb = _notebook(tmp_path / "a_02.ipynb", "x = 1")
    r = helpers_cli("teacher", "grade", str(nb), *option)
    assert r.returncode == USAGE and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
@pytest.mark.emulator
def test_ctrl_c_during_grading_keeps_every_grade_already_made(tmp_path):
    first = _notebook(tmp_path / "alice_02.ipynb", "from helpers.course.exercises import check_02_exercise_1\n"
                                                   "check_02_exercise_1('02_naive_coalesced')")
    slow = _notebook(tmp_path / "bob_02.ipynb", "import time\ntime.sleep(600)")
    out = tmp_path / "grades.json"
    # the first notebook's grade is on disk before the second ends: wait for it, then interrupt
    proc = subprocess.Popen([sys.executable, "-m", "helpers", "teacher", "grade", str(first), str(slow), "--json",
                             str(out), "--no-sandbox", "--timeout", "900"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 240
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == INTERRUPTED and "interrupted: 1 of 2 notebooks graded" in err, err
    assert "Traceback" not in err
    graded = json.loads(out.read_text())
    assert [g["notebook"] for g in graded] == [str(first)] and graded[0]["exercises"][0]["status"] == "right"
    assert "alice_02.ipynb" in stdout           # its report was printed as soon as it was known

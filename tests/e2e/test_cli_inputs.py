"""Every command-line input is checked before anything compiles or allocates, by the checks the
Python API uses (helpers.run.gemm.check_problem, verify.check_inputs, bench.check_timing,
kernel_loader.check_launch): the table below is the input a learner types and the message they get.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from helpers.cli import main
from helpers.core import stages
from helpers.core.device import host_memory_available
from helpers.core.errors import InputError
from helpers.measure import verify
from helpers.run import backend, gemm
from support import helpers_cli

NAIVE = ["kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "4,4", "--block", "16,16", "--backend", "cpu"]
CHECK, TRACE = ["check", *NAIVE], ["trace", *NAIVE]
USAGE = 2     # bad input, launch geometry included (docs/command-line.md's exit codes)
BIG = (46000, 46000, 46000)   # within 32-bit indexing; verifying it needs about 280 GiB


def _memory_row():
    free = host_memory_available()
    need = verify.host_bytes(*BIG)
    marks = [] if free is not None and free < need else [pytest.mark.skip(reason="this machine has the memory")]
    return pytest.param([*CHECK, "--mnk", ",".join(map(str, BIG))], USAGE,
                        r"M, N, K = 46000, 46000, 46000: verifying it needs about [\d.]+ GiB of this machine's memory, "
                        r"which has [\d.]+ [GM]iB free\. Fix: a smaller problem, e\.g\. M, N, K = \d+, \d+, \d+\.",
                        id="check --mnk 46000,46000,46000 (more memory than the machine has)", marks=marks)


INPUTS = [
    pytest.param([*CHECK, "--mnk", "0,64,64"], USAGE,
                 r"M, N and K must be at least 1, got M=0, N=64, K=64: .* Fix: sizes from 1 up",
                 id="check --mnk 0,64,64 (was: zero-size array to reduction operation)"),
    pytest.param([*CHECK, "--mnk=-1,64,64"], USAGE, r"M, N and K must be at least 1, got M=-1",
                 id="check --mnk=-1,64,64 (was: negative dimensions are not allowed)"),
    pytest.param([*CHECK, "--mnk", "100000,100000,1"], USAGE,
                 r"C would be 100000 x 100000 = 10,000,000,000 elements, more than the 2,147,483,647 a 32-bit int "
                 r"can index.*GiB of this machine's memory.* Fix: a smaller problem, e\.g\. M, N, K = \d+, \d+, 1\.",
                 id="check --mnk 100000,100000,1 (was: Unable to allocate 74.5 GiB)"),
    _memory_row(),
    pytest.param([*CHECK, "--mnk", "8,8,8", "--alpha", "nan"], USAGE,
                 r"alpha is NaN: .* Fix: a finite number", id="check --alpha nan (was: FAIL, C = nan, expected nan)"),
    pytest.param([*CHECK, "--mnk", "8,8,8", "--beta", "inf"], USAGE, r"beta is inf, which float32 .* Fix: a number between",
                 id="check --beta inf"),
    pytest.param([*CHECK, "--mnk", "8,8,8", "--alpha", "1e39"], USAGE, r"alpha is 1e\+39, which float32 .* holds only as infinity",
                 id="check --alpha 1e39 (infinite in float32)"),
    pytest.param([*CHECK, "--mnk", "8,8"], USAGE, r"--mnk takes 3 numbers", id="check --mnk 8,8"),
    pytest.param([*CHECK, "--mnk", "a,b,c"], USAGE, r"--mnk takes whole numbers", id="check --mnk a,b,c"),
    pytest.param(["check", *NAIVE[:3], "--grid", "4,0", "--block", "16,16", "--mnk", "8,8,8", "--backend", "cpu"], USAGE,
                 r"grid \(4, 0, 1\) has a dimension below 1", id="check --grid 4,0"),
    pytest.param(["check", *NAIVE[:3], "--grid", "1", "--block", "2048", "--mnk", "8,8,8", "--backend", "cpu"], USAGE,
                 r"block \(2048, 1, 1\) has 2048 threads; a CUDA block holds at most 1024", id="check --block 2048"),
    pytest.param([*CHECK, "--mnk", "8,8,8", "--shared-mem", "300000"], USAGE,
                 r"300000 bytes of dynamic shared memory, more than the \d+ bytes a block may have",
                 id="check --shared-mem 300000"),
    pytest.param([*CHECK, "--mnk", "8,8,8", "--shared-mem", "-1"], USAGE,
                 r"shared_mem must be a number of bytes >= 0", id="check --shared-mem -1"),
    pytest.param([*TRACE, "--mnk", "0,8,8"], USAGE, r"M, N and K must be at least 1, got M=0", id="trace --mnk 0,8,8"),
    pytest.param([*TRACE, "--mnk", "8,8,8", "--alpha", "nan"], USAGE, r"alpha is NaN", id="trace --alpha nan"),
    pytest.param(["ladder", "--size", "0", "--backend", "cpu"], USAGE, r"M, N and K must be at least 1, got M=0",
                 id="ladder --size 0"),
    pytest.param(["ladder", "--size", "50000", "--backend", "cpu"], USAGE,
                 r"A would be 50000 x 50000 = 2,500,000,000 elements.* Fix: a smaller problem, e\.g\. M, N, K = 46340",
                 id="ladder --size 50000 (past 32-bit indexing)"),
    pytest.param(["ladder", "--repeat", "0", "--backend", "cpu"], USAGE,
                 r"repeat = 0: a median needs at least 1 timed launch\. Fix:", id="ladder --repeat 0"),
    pytest.param(["ladder", "--json", "no/such/folder/ladder.json", "--backend", "cpu"], USAGE,
                 r"--json no/such/folder/ladder.json: the folder .*no/such/folder does not exist", id="ladder --json in no folder"),
    pytest.param(["tune", "03_smem_tiling", "--repeat", "5", "--backend", "cpu"], USAGE,
                 r"repeat = 5: a median needs at least 10 timed launches", id="tune --repeat 5"),
    pytest.param(["tune", "03_smem_tiling", "--size", "-5", "--backend", "cpu"], USAGE,
                 r"M, N and K must be at least 1, got M=-5", id="tune --size -5"),
    pytest.param(["tune", "03_smem_tiling", "--dry-run", "--radius", "-1", "--backend", "cpu"], USAGE,
                 r"radius = -1: .* Fix: e\.g\. 2", id="tune --dry-run --radius -1"),
    pytest.param(["tune", "03_smem_tiling", "--dry-run", "--count", "0", "--backend", "cpu"], USAGE,
                 r"count = 0: .* Fix: e\.g\. 3", id="tune --dry-run --count 0"),
    pytest.param(["diff", "07_vectorized", "--context", "-1"], USAGE, r"--context takes a whole number from 0 up, got -1",
                 id="diff --context -1"),
    pytest.param(["sweep", "--held-out", "12x34", "--backend", "cpu"], USAGE, r"'12x34' is not a size: give N \(a square\) "
                 r"or MxNxK", id="sweep --held-out 12x34"),
    pytest.param(["dispatch", "--precision", "fp16", "--backend", "cpu"], USAGE, r"invalid choice: 'fp16'",
                 id="dispatch --precision fp16"),
]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"
    backend.use(None)


@pytest.mark.parametrize("argv, code, message", INPUTS)
def test_bad_input_is_named_before_anything_compiles(argv, code, message, empty_cache, capsys):
    try:
        status = main(argv)
    except SystemExit as e:          # argparse's own checks
        status = e.code
    err = capsys.readouterr().err
    assert status == code, err
    assert re.search(message, err, re.S), err
    assert "Traceback" not in err
    assert not (empty_cache / "emulator").exists(), "nothing is compiled for an input that is refused"


def test_the_command_line_and_the_python_api_give_the_same_message(cpu_backend):
    naive = stages.variant("02_naive")
    for M, N, K, alpha in ((0, 64, 64, 1.0), (-1, 64, 64, 1.0), (8, 8, 8, float("nan"))):
        with pytest.raises(InputError) as api:
            verify.check(naive, verify.Shape("check", M, N, K, alpha=alpha))
        r = helpers_cli(*CHECK, f"--mnk={M},{N},{K}", "--alpha", str(alpha))
        assert r.returncode == USAGE and r.stderr.strip() == f"error: {api.value}"
    A = np.ones((4, 3), np.float32)
    with pytest.raises(InputError, match=r"beta is NaN"):
        gemm.run(naive, A, A.T.copy(), beta=float("nan"))


def test_a_damaged_ladder_is_named_by_results_table(tmp_path):
    from helpers.views import ladder_report
    text = ladder_report.newest_ladder().read_text()
    cut = tmp_path / "ladder.json"
    cut.write_text(text[: len(text) // 2])
    r = helpers_cli("results-table", "--ladder", str(cut))
    assert r.returncode == USAGE and "Traceback" not in r.stderr
    assert str(cut) in r.stderr and "is not valid JSON" in r.stderr and "cut short" in r.stderr, r.stderr
    data = json.loads(text)
    data["rows"][2]["tflops"] = float("nan")
    cut.write_text(json.dumps(data))
    r = helpers_cli("results-table", "--ladder", str(cut))
    assert r.returncode == USAGE and re.search(r"row 3 \(\w+\): tflops is nan; a measured time or rate is a positive", r.stderr)

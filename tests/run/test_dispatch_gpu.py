"""Stage 11's dispatcher on a GPU: sgemm on CuPy and NumPy arrays against float64, the sweep command.
Skipped, and reported as skipped, where CuPy sees no GPU."""

import json

import numpy as np
import pytest

from helpers.measure import dispatch_table
from helpers.run import dispatch
from helpers.run.sgemm import sgemm
from tests.support import helpers_cli

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("M, N, K, beta", [(1000, 1000, 1000, 0.0), (4095, 4097, 333, 0.5), (257, 129, 20001, 0.0),
                                            (3, 5000, 7, -1.0)])
def test_sgemm_on_cupy_arrays_matches_float64(M, N, K, beta):
    import cupy as cp
    rng = cp.random.default_rng()
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
    C0 = rng.uniform(-1, 1, (M, N), dtype=cp.float32)
    before = C0.copy()
    out = sgemm(A, B, C0, 1.5, beta)
    assert isinstance(out, cp.ndarray) and out.shape == (M, N)
    ref = 1.5 * (A.astype(cp.float64) @ B.astype(cp.float64)) + beta * C0.astype(cp.float64)
    mag = 1.5 * (cp.abs(A.astype(cp.float64)) @ cp.abs(B.astype(cp.float64))) + abs(beta) * cp.abs(C0)
    tol = 8 * np.sqrt(K) * 2.0**-24 * mag + 1e-30
    assert bool(cp.all(cp.abs(out - ref) <= tol)), dispatch.choose(M, N, K).label()
    assert bool(cp.all(C0 == before))


def test_sgemm_on_numpy_arrays_gives_numpy():
    rng = np.random.default_rng()
    A = rng.uniform(-1, 1, (300, 200)).astype(np.float32)
    B = rng.uniform(-1, 1, (200, 100)).astype(np.float32)
    out = sgemm(A, B)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_the_sweep_command_verifies_times_and_writes(tmp_path):
    out = tmp_path / "sweep.json"
    r = helpers_cli("sweep", "--sizes", "512,1000x1000x4000", "--held-out", "300x200x1000", "--repeat", "10",
                    "--rounds", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert [(x["M"], x["N"], x["K"], x["held_out"]) for x in data["rows"]] == [
        (512, 512, 512, False), (1000, 1000, 4000, False), (300, 200, 1000, True)]
    for row in data["rows"]:
        assert row["dispatcher_ms"] > 0 and row["cublas_ms"] > 0 and row["max_rel_diff_vs_cublas"] < 1e-5
        assert row["tf32"]["sgemm_ms"] > 0 and row["tf32"]["beta1"]["cublas_ms"] > 0 and row["fp32_beta1"]["sgemm_ms"] > 0
        assert 0 < row["tf32"]["error_ratio"] < 3, row["tf32"]["errors"]
    assert data["provenance"]["gpu"] and data["summary"]["shapes"] == 3 and data["rounds"] == 2
    assert data["held_out_summary"]["shapes"] == 1 and data["targets"]
    assert all(len(t) == 2 for row in data["rows"] for t in row["rounds_ms"].values())
    assert dispatch_table.load_sweep(out)["rows"]
    assert "targets" in r.stdout and "300x200x1000*" in r.stdout

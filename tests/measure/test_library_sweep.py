"""The sweep of the library call (`python -m helpers sweep`, helpers/measure/library_sweep.py), dry-run on the CPU
emulator: CuPy stood in for by NumPy and cupyx's timer by a counter, so that its bookkeeping (what is verified,
timed and reported, the in-place beta = 1 check, the summary, the targets, the table) runs here before it runs on
a GPU. The GPU run itself: tests/run/test_dispatch_gpu.py and tools/sgemm_library_gpu.sh."""

import contextlib
import sys
import types

import numpy as np
import pytest

from helpers.core.errors import VerificationError
from helpers.measure import bench, library_sweep
from helpers.run import backend

pytestmark = [pytest.mark.emulator, pytest.mark.slow]


class _FakeCupy(types.ModuleType):
    """NumPy under CuPy's names, enough for the sweep."""

    def __init__(self):
        super().__init__("cupy")
        self.__version__ = "fake"

        class _Rng:
            def __init__(self, seed):
                self.g = np.random.default_rng(seed)

            def uniform(self, lo, hi, shape, dtype=np.float64):
                return self.g.uniform(lo, hi, shape).astype(dtype)
        self.random = types.SimpleNamespace(default_rng=_Rng)

        self.tf32 = False   # cuBLAS in TF32 (bench.cublas_tf32): matmul rounds float32 inputs to TF32 first

    def matmul(self, A, B, out=None):
        if self.tf32 and A.dtype == np.float32:
            A, B = (_tf32(x) for x in (A, B))
        return np.matmul(A, B, out=out)

    def __getattr__(self, name):
        return getattr(np, name)


def _tf32(x):
    """x rounded to TF32 (10 mantissa bits), to nearest."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def _fake_benchmark(fn, args=(), n_warmup=0, n_repeat=1):
    for _ in range(n_warmup + n_repeat):
        fn(*args)
    return types.SimpleNamespace(gpu_times=[np.linspace(1e-3, 2e-3, n_repeat)], cpu_times=np.full(n_repeat, 2e-5))


@pytest.fixture
def fake_gpu(monkeypatch, cpu_backend):
    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupyx.profiler", types.SimpleNamespace(benchmark=_fake_benchmark))

    @contextlib.contextmanager
    def cublas_tf32():
        fake.tf32 = True
        try:
            yield
        finally:
            fake.tf32 = False
    monkeypatch.setattr(bench, "cublas_tf32", cublas_tf32)
    monkeypatch.setattr(bench, "provenance", lambda command=None: {"gpu": "fake", "date": "2026-11-27"})
    monkeypatch.setattr(bench, "check_timing", lambda M, N, K, n_repeat, min_repeat=1: (M, N, K))
    monkeypatch.setattr(bench, "time_variant", lambda v, M, N, K, **k: (types.SimpleNamespace(median_ms=2.0), 0.0))

    def cublas_gemm(A, B, C, alpha, beta, tf32):
        C[...] = alpha * (A @ B) + beta * C
    monkeypatch.setattr(library_sweep, "cublas_gemm", cublas_gemm)


def test_the_sweep_verifies_times_and_reports_every_call(fake_gpu, monkeypatch):
    asked = set()   # (precision, in place) of every timed beta = 1 call and every other call
    real = library_sweep.library.sgemm

    def sgemm(A, B, C=None, alpha=1.0, beta=0.0, precision="fp32", **kwargs):
        asked.add((precision, kwargs.get("out") is not None))
        return real(A, B, C, alpha, beta, precision, **kwargs)
    monkeypatch.setattr(library_sweep.library, "sgemm", sgemm)
    data = library_sweep.sweep(shapes=((17, 13, 40),), held_out=((9, 20, 70),), n_repeat=2, rounds=2)   # two rounds: C of beta = 1 keeps what each added
    assert [r["held_out"] for r in data["rows"]] == [False, True]
    for r in data["rows"]:
        assert r["dispatcher_ms"] > 0 and r["cublas_ms"] > 0 and r["fixed_ms"] == 2.0
        assert {"fp32_beta0_sgemm", "fp32_beta1_cublas", "tf32_beta0_sgemm", "tf32_beta1_sgemm", "fixed",
                "cupy_matmul"} <= set(r["rounds_ms"])
        assert r["tf32"]["choice"].startswith("11_stream_k") and r["choice"]
        # the same inputs rounded the same way: errors alike (the fake's cuBLAS sums in float64, ours in float32)
        assert 0.5 < r["tf32"]["error_ratio"] < 2 and r["tf32"]["errors"]["sgemm"]["rms"] > 0
        assert r["host_us_per_call"]["fp32_beta0_sgemm"] == pytest.approx(20.0)
        assert r["vs_cupy_matmul"] == pytest.approx(1.0)
    s = data["held_out_summary"]
    assert s["shapes"] == 1 and s["tf32_geomean_pct_cublas"] == pytest.approx(100.0)
    assert {t["what"] for t in data["targets"]} >= {"TF32 lowest", "256^3: sgemm time / cupy.matmul time"}
    assert [t["met"] for t in data["targets"] if t["what"].startswith("256^3")] == [None]   # not measured here
    text = library_sweep.table_text(data)
    assert "9x20x70*" in text and "held out" in text and "MET" in text
    assert library_sweep.misses(data) == []
    # the H100 run of 2026-11-27 timed FP32 as "TF32, beta = 1": every precision must reach the call it names
    assert asked == {("fp32", False), ("fp32", True), ("tf32", False), ("tf32", True)}, asked


def test_a_timed_call_that_stops_computing_is_not_reported(fake_gpu, monkeypatch):
    calls = []
    real = library_sweep.cublas_gemm

    def lazy(A, B, C, alpha, beta, tf32):   # right the first time, then adds nothing (a cached "result")
        calls.append(1)
        if len(calls) == 1:
            real(A, B, C, alpha, beta, tf32)
    monkeypatch.setattr(library_sweep, "cublas_gemm", lazy)
    with pytest.raises(VerificationError, match="is not C0"):
        library_sweep.sweep(shapes=((8, 8, 8),), n_repeat=2, rounds=1)
    assert backend.name() == "cpu"

"""GPU-only checks: skipped, and reported as skipped, where CuPy sees no GPU."""

import subprocess
import sys
import textwrap

import pytest

from helpers.core import paths
from helpers.run import backend
from helpers.measure import bench
from helpers.core import stages

ROOT = paths.ROOT
pytestmark = pytest.mark.gpu


def test_gpu_backend_is_selected_and_describes_the_device():
    assert backend.name() == "gpu"
    d = backend.current().device_info()
    assert d.sm_count > 0 and d.fp32_peak_tflops > 1 and d.memory_bandwidth_tbs > 0.1
    assert backend.banner().startswith("Backend: GPU")


def test_benchmark_rows_are_measured_and_consistent():
    rows = bench.ladder(1024, stages.variants(), n_repeat=10)
    cublas = {r.get("precision") or "fp32": r for r in rows if r["variant"].startswith("cublas")}
    assert rows[0]["variant"] == "cublas_sgemm" and set(cublas) == {"fp32", "tf32"}
    assert cublas["tf32"]["variant"] == "cublas_tf32" and cublas["tf32"]["median_ms"] > 0
    for r in rows[2:]:
        precision = r.get("precision") or "fp32"
        assert r["q1_ms"] <= r["median_ms"] <= r["q3_ms"] and r["repeats"] == 10
        assert r["max_rel_diff_vs_cublas"] < bench.AGREEMENT[precision]
        assert r["pct_cublas"] == pytest.approx(100 * cublas[precision]["median_ms"] / r["median_ms"])
        if precision != "fp32":
            assert r["pct_cublas_fp32"] == pytest.approx(100 * cublas["fp32"]["median_ms"] / r["median_ms"])
    assert {"gpu", "driver", "cupy", "date"} <= set(bench.provenance())


def test_kernel_timings_measure_the_kernel_not_the_python_around_it():
    # The launch checks and the synchronization once added 0.3 ms to every timed call. Interleaved,
    # the course's timing and a bare CuPy launch of the same compiled kernel agree.
    import cupy as cp
    from helpers.run import gemm
    v = stages.variant("05_2d_thread_tiling")
    n = 1024
    cfg = v.default
    kernel = gemm.kernel_for(v, cfg)
    A, B, C = bench.device_operands(n, n, n)
    bare_fn = kernel._compiled.get_function(v.name_expression(cfg))
    args = (cp.int32(n), cp.int32(n), cp.int32(n), cp.float32(1), A, B, cp.float32(0), C)
    course, bare = [], []
    for _ in range(3):
        course.append(bench.time_variant(v, n, n, n, cfg, n_repeat=30)[0].median_ms)
        bare.append(bench.time_call(lambda: bare_fn(cfg.grid(n, n), cfg.block(), args), 10, 30).median_ms)
    assert min(course) < 1.10 * min(bare), (course, bare)


def test_coalesced_mapping_is_faster_on_the_gpu():
    naive, _ = bench.time_variant(stages.variant("02_naive"), 2048, 2048, 2048, n_repeat=5)
    coalesced, _ = bench.time_variant(stages.variant("02_naive_coalesced"), 2048, 2048, 2048, n_repeat=5)
    assert coalesced.median_ms < naive.median_ms


def test_an_illegal_address_is_reported_with_recovery_advice():
    # In a child process: the failed launch leaves that process's CUDA context unusable.
    code = textwrap.dedent("""
        import numpy as np, cupy as cp
        from helpers.run.kernel_loader import load_kernel
        from helpers.core.errors import KernelCrashError
        open("/tmp/tbt_oob.cu", "w").write(
            "__global__ void k(int M, int N, int K, float alpha, const float* A, const float* B, "
            "float beta, float* C) { C[(size_t)threadIdx.x << 36] = 1.0f; }")
        k = load_kernel("/tmp/tbt_oob.cu", "k")
        C = cp.zeros(8, cp.float32)
        try:
            k((1,), (32,), (np.int32(1), np.int32(1), np.int32(1), np.float32(1), C, C, np.float32(0), C))
        except KernelCrashError as e:
            print("CAUGHT", e)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "CAUGHT" in r.stdout and "restart the Jupyter kernel" in r.stdout, r.stdout + r.stderr


def test_gpu_compile_errors_use_the_files_line_numbers(tmp_path):
    from helpers.core.errors import KernelCompileError
    from helpers.run.kernel_loader import load_kernel
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* C) {\n  C[0] = nope;\n}\n")
    with pytest.raises(KernelCompileError, match=r"bad\.cu:2"):
        load_kernel(bad, "k")

"""GPU benchmarks: kernels and cuBLAS timed in the same run, with the numbers' provenance.

Timing uses cupyx.profiler.benchmark (CUDA events): warm-up launches first, then many timed
launches; we keep the median and the quartiles. cuBLAS runs through cupy.matmul with TF32 off
(CuPy's default; CUPY_TF32=1 is refused here), except beside a TF32 kernel (stage 10), which is
compared with cuBLAS in TF32 (`time_cublas(..., tf32=True)`). GFLOP/s = 2 M N K / time.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import sys
from dataclasses import asdict, dataclass

import numpy as np

from helpers.core import paths
from helpers.run import backend
from helpers.run import gemm
from helpers.core import progress
from helpers.core.errors import CourseError, InputError, VerificationError
from helpers.measure.verify import POISON
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant


@dataclass(frozen=True)
class Timing:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    repeats: int

    def tflops(self, M: int, N: int, K: int) -> float:
        return 2.0 * M * N * K / (self.median_ms * 1e-3) / 1e12

    def row(self, M: int, N: int, K: int) -> dict:
        """The fields a results file keeps of a timing at M x N x K: median and quartiles (ms) and TFLOP/s."""
        return {"median_ms": self.median_ms, "q1_ms": self.q1_ms, "q3_ms": self.q3_ms, "tflops": self.tflops(M, N, K)}


def invocation() -> str:
    """How this process was started, as a command a reader can repeat: `python -m package.module ...` for a
    module, the path relative to the repository for a script (never a machine's own folders)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    program = f"-m {spec.name.removesuffix('.__main__')}" if spec is not None else paths.rel(sys.argv[0])
    return " ".join(["python", program, *sys.argv[1:]])


def provenance(command: str | None = None) -> dict:
    """Where and when a number was measured, stored beside every result."""
    import cupy as cp
    d = backend.current().device_info()
    return {"gpu": d.name, "compute_capability": d.compute_capability, "sm_count": d.sm_count,
            "sm_clock_ghz": round(d.clock_ghz, 3), "driver": d.driver, "cuda_runtime": d.runtime,
            "cupy": cp.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "tf32": False, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command or invocation()}


def _require_gpu():
    if backend.name() != "gpu":
        raise CourseError("Benchmarks time kernels on a GPU; this session runs the CPU emulator, whose "
                          "times say nothing about a GPU. Committed GPU results are in results/.")
    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        raise CourseError("CUPY_TF32 is set: cuBLAS would use TF32 tensor cores, not the FP32 the course "
                          "compares with. Fix: unset CUPY_TF32.")
    import cupy as cp
    return cp


def check_timing(M, N, K, n_repeat, min_repeat: int = 1) -> tuple[int, int, int]:
    """A timing's inputs, before anything compiles or allocates: the sizes (gemm.check_problem; on a
    GPU also its memory: A, B, C, and cuBLAS's C with the difference beside it) and the number of
    timed launches. Returns (M, N, K) as ints."""
    if isinstance(n_repeat, bool) or not isinstance(n_repeat, (int, np.integer)) or n_repeat < min_repeat:
        raise InputError(f"repeat = {n_repeat!r}: a median needs at least {min_repeat} timed launch"
                         f"{'es' if min_repeat > 1 else ''}. Fix: a whole number from {min_repeat} up, e.g. 30.")
    on_gpu = backend.name() == "gpu"
    return gemm.check_problem(M, N, K, 0 if on_gpu else None, f"timing {M}x{N}x{K}",
                              on_device=4 * (M * K + K * N) + 16 * M * N if on_gpu else 0)


def time_call(fn, n_warmup: int = 10, n_repeat: int = 50) -> Timing:
    from cupyx.profiler import benchmark
    _require_gpu()
    t = benchmark(fn, (), n_warmup=n_warmup, n_repeat=n_repeat).gpu_times[0] * 1e3
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return Timing(float(med), float(q1), float(q3), float(t.min()), int(t.size))


def device_operands(M: int, N: int, K: int, seed: int = 0):
    cp = _require_gpu()
    rng = cp.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
    C = cp.zeros((M, N), cp.float32)
    return A, B, C


@contextlib.contextmanager
def cublas_tf32():
    """cupy.matmul of float32 on the tensor cores in TF32 inside the block, FP32 again after."""
    from cupy._core import _routines_linalg as linalg  # CuPy's switch behind CUPY_TF32
    cp = _require_gpu()
    before = linalg.get_compute_type(cp.dtype(cp.float32))
    linalg.set_compute_type(cp.dtype(cp.float32), linalg.COMPUTE_TYPE_TF32)
    try:
        yield
    finally:
        linalg.set_compute_type(cp.dtype(cp.float32), before)


def time_cublas(M: int, N: int, K: int, n_warmup: int = 10, n_repeat: int = 50, tf32: bool = False) -> Timing:
    cp = _require_gpu()
    A, B, C = device_operands(M, N, K)
    with cublas_tf32() if tf32 else contextlib.nullcontext():
        return time_call(lambda: cp.matmul(A, B, out=C), n_warmup, n_repeat)


AGREEMENT = {"fp32": 1e-5, "tf32": 1e-2}  # largest |C - cuBLAS FP32| / largest |C| that is not a bug


def time_variant(variant: Variant, M: int, N: int, K: int, config: KernelConfig | None = None,
                 n_warmup: int = 10, n_repeat: int = 50) -> tuple[Timing, float]:
    """The kernel's timing, and its largest relative difference from cuBLAS on the same data."""
    cp = _require_gpu()
    M, N, K = check_timing(M, N, K, n_repeat)
    config = config or variant.default_for(backend.arch())   # this GPU's default
    config.check_shape(M, N, K)
    A, B, C = device_operands(M, N, K)
    steps = gemm.launches(variant, config, M, N, K, 1.0, A, B, 0.0, C)
    C.fill(POISON)  # an element the kernel never writes keeps it, and the comparison shows it
    for step in steps:
        step()  # checked, synchronized
    ref = cp.matmul(A, B)  # FP32
    rel = float(cp.max(cp.abs(C - ref)) / cp.max(cp.abs(ref)))
    # FP32 kernels agree with cuBLAS to rounding; TF32 ones to TF32's 10 mantissa bits (a wrong
    # kernel is off by the size of the elements). The odd shapes are verify's job.
    if not rel < AGREEMENT[variant.precision]:  # NaN fails too
        raise VerificationError(f"{variant.name} ({config.label()}) differs from cuBLAS at {M}x{N}x{K}: "
                                f"largest difference {rel:.2e} of the largest element; not timing it.")
    # Timed without the per-call checks and synchronization of kernel(...): with them, each call
    # measured 0.3 ms of Python as well (10 % of stage 05 at 4096^3).
    calls = [step.timed() for step in steps]
    return time_call(lambda: [call() for call in calls], n_warmup, n_repeat), rel


def ladder(size: int, variants: tuple[Variant, ...], n_repeat: int = 50) -> list[dict]:
    """Every variant this GPU can run and cuBLAS at size^3, as tidy rows. A TF32 variant's
    pct_cublas is of cuBLAS in TF32 (row "cublas_tf32"), and pct_cublas_fp32 of cuBLAS in FP32."""
    M = N = K = size
    check_timing(M, N, K, n_repeat)
    cc = backend.current().device_info().compute_capability  # kernels this GPU cannot run get no row
    variants = tuple(v for v in variants if not v.unsupported_on(cc))

    def row(name: str, config: str, t: Timing, rel: float, **extra) -> dict:
        return {"variant": name, "config": config, "M": M, "N": N, "K": K, **asdict(t),
                "tflops": t.tflops(M, N, K), **extra, "max_rel_diff_vs_cublas": rel}

    cublas = {"fp32": time_cublas(M, N, K, n_repeat=n_repeat)}
    rows = [row("cublas_sgemm", "cupy.matmul, TF32 off", cublas["fp32"], 0.0, pct_cublas=100.0)]
    if any(v.precision == "tf32" for v in variants):
        cublas["tf32"] = time_cublas(M, N, K, n_repeat=n_repeat, tf32=True)
        rows.append(row("cublas_tf32", "cupy.matmul, TF32 tensor cores", cublas["tf32"], 0.0, precision="tf32",
                        pct_cublas=100.0, pct_cublas_fp32=100.0 * cublas["fp32"].median_ms / cublas["tf32"].median_ms))
    for v in progress.bar(variants, desc=f"timing at {size}^3", unit="kernel"):
        t, rel = time_variant(v, M, N, K, n_repeat=n_repeat)
        extra = {"pct_cublas": 100.0 * cublas[v.precision].median_ms / t.median_ms}
        if v.precision != "fp32":
            extra = {"precision": v.precision, **extra, "pct_cublas_fp32": 100.0 * cublas["fp32"].median_ms / t.median_ms}
        rows.append(row(v.name, v.default_for(backend.arch()).label(), t, rel, **extra))
    return rows


def precision_rows(size: int, kernels) -> list[dict]:
    """TF32's cost on a GPU: at size^3, uniform [-1, 1) data, the largest and the RMS of |C - C64| /
    RMS(C64) against a float64 product, for cuBLAS FP32 and TF32 and each (variant, config) given."""
    cp = _require_gpu()
    A, B, _ = device_operands(size, size, size, seed=1)
    ref = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    scale = float(cp.sqrt(cp.mean(ref * ref)))

    def err(name, out):
        e = cp.abs(out.astype(cp.float64) - ref) / scale
        return {"what": name, "max_err_over_rms": float(e.max()), "rms_err_over_rms": float(cp.sqrt(cp.mean(e * e)))}

    rows = [err("cuBLAS FP32", cp.matmul(A, B))]
    with cublas_tf32():
        rows.append(err("cuBLAS TF32", cp.matmul(A, B)))
    for v, cfg in kernels:
        cfg = cfg or v.default_for(backend.arch())
        out = cp.full((size, size), POISON, cp.float32)
        for step in gemm.launches(v, cfg, size, size, size, 1.0, A, B, 0.0, out):
            step()
        rows.append(err(f"{v.name} ({cfg.label()})", out))
    return rows

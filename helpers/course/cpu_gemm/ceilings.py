"""This core's own ceilings and what a measurement records about the machine.

The ceilings: FMA throughput (many independent accumulators) and one dependent FMA chain, copy
bandwidth at each cache level and from DRAM, the caches' sizes (Linux sysfs), and what the
compiled code really is (vector width, FMA instructions by kind). machine() is the provenance
stored beside every committed result.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

from helpers.course.cpu_gemm import vector_width  # noqa: F401  (first: sets up LLVM before numba loads)

# isort: split

import llvmlite
import numba
import numpy as np
from numba import njit

from helpers.core.arch import FLOAT_BYTES
from helpers.course.cpu_gemm.versions import FLAGS, as_version, operands

VECTOR_REGISTERS = 32            # x86-64 with AVX-512: zmm0..zmm31 (16 with AVX2 alone)


# ---- the CPU's own ceilings ---------------------------------------------------------------------
FMA_ACCUMULATORS = 256


@njit(**FLAGS)
def _fma_chains(n, x, y):
    acc = np.empty(FMA_ACCUMULATORS, np.float32)
    for j in range(FMA_ACCUMULATORS):
        acc[j] = j
    for _ in range(n):
        for j in range(FMA_ACCUMULATORS):     # 256 independent chains: FMAs need not wait
            acc[j] = acc[j] * x + y
    return acc.sum()


@njit(**FLAGS)
def _fma_one_chain(n, x, y):
    acc = np.float32(1.0)
    for _ in range(n):
        acc = acc * x + y                    # each FMA waits for the one before
    return acc


def fma_peak(seconds: float = 0.3) -> float:
    """Single-core FP32 throughput in GFLOP/s: FMAs on independent accumulators (no memory
    traffic: the 256 accumulators stay in registers), best of 3 runs of about `seconds`."""
    x, y = np.float32(0.9999), np.float32(1e-4)
    _fma_chains(1, x, y)
    n = 1000
    while True:
        t = time.perf_counter()
        _fma_chains(n, x, y)
        dt = time.perf_counter() - t
        if dt > seconds / 4:
            break
        n *= 4
    n = max(1, int(n * seconds / dt))
    best = min(_timed(_fma_chains, n, x, y) for _ in range(3))
    return 2.0 * n * FMA_ACCUMULATORS / best / 1e9


def fma_latency_gflops(seconds: float = 0.2) -> float:
    """GFLOP/s of ONE chain of dependent FMAs: the speed limit of a loop with a single accumulator."""
    x, y = np.float32(0.9999), np.float32(1e-4)
    _fma_one_chain(1, x, y)
    n = 10_000_000
    dt = _timed(_fma_one_chain, n, x, y)
    n = max(1, int(n * seconds / dt))
    return 2.0 * n / min(_timed(_fma_one_chain, n, x, y) for _ in range(3)) / 1e9


def _timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


@njit(**FLAGS)
def _copy(dst, src, times):
    for _ in range(times):
        for i in range(src.size):
            dst[i] = src[i]


def copy_bandwidth(nbytes: int, seconds: float = 0.2) -> float:
    """GB/s of copying an array of `nbytes` into another, repeated, counting read + write
    (2 x nbytes per copy). Small sizes stay in a cache; the largest must come from DRAM."""
    n = max(16, nbytes // FLOAT_BYTES)
    src = np.random.default_rng(0).random(n, dtype=np.float32)
    dst = np.empty_like(src)
    _copy(dst, src, 2)
    times = max(1, int(seconds * 10e9 / (2 * n * FLOAT_BYTES)))   # about `seconds` at 10 GB/s
    t = min(_timed(_copy, dst, src, times) for _ in range(3))
    return 2.0 * n * FLOAT_BYTES * times / t / 1e9


def cache_sizes() -> dict:
    """Data and unified cache sizes in bytes of CPU 0, from Linux sysfs ({} elsewhere)."""
    out = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for d in sorted(base.glob("index*")) if base.is_dir() else []:
        try:
            level, kind, size = ((d / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        if kind == "Instruction":
            continue
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        out[f"L{level}"] = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return out


def bandwidth_sizes(caches: dict | None = None) -> dict:
    """Array sizes for copy_bandwidth: half of L1, half of L2 and 4 x L3 (so two arrays of that
    size sit well inside the level, or well outside every cache)."""
    caches = caches or cache_sizes() or {"L1": 32 * 2**10, "L2": 1 * 2**20, "L3": 32 * 2**20}
    sizes = {"L1": caches.get("L1", 32 * 2**10) // 4, "L2": caches.get("L2", 2**20) // 4}
    sizes["DRAM"] = max(4 * caches.get("L3", 32 * 2**20), 256 * 2**20)
    return sizes


def vector_bits() -> int:
    """The widest vector register the compiled FMA benchmark uses: 512, 256, 128, or 0 if the
    assembly cannot be read (or is not x86)."""
    _fma_chains(1, np.float32(1), np.float32(0))
    asm = "\n".join(_fma_chains.inspect_asm().values())
    for bits, reg in ((512, "%zmm"), (256, "%ymm"), (128, "%xmm")):
        if any(line.strip().startswith("vfmadd") and reg in line for line in asm.splitlines()):
            return bits
    return 0


def fma_instructions(v, **params) -> dict:
    """How many FMA instructions of each kind the compiled version contains (x86 assembly):
    {'512-bit': n, '256-bit': n, '128-bit': n, 'scalar': n, 'on the stack': n}. The last counts
    vector FMAs that read an accumulator from the stack (an operand like 656(%rsp)): a block of C
    the compiler did NOT keep in registers. A quick look at what LLVM made of the loops."""
    fn = as_version(v).function(**params)
    A, B, C = operands(3, 3, 3)
    fn(np.float32(1), A, B, np.float32(0), C)
    asm = "\n".join(fn.inspect_asm().values())
    out = {"512-bit": 0, "256-bit": 0, "128-bit": 0, "scalar": 0, "on the stack": 0}
    for line in asm.splitlines():
        op = line.strip().split(None, 1)
        if not op or not op[0].startswith("vfmadd"):
            continue
        if op[0].endswith("ss"):
            out["scalar"] += 1
            continue
        out["512-bit" if "%zmm" in line else "256-bit" if "%ymm" in line else "128-bit"] += 1
        out["on the stack"] += "(%rsp" in line
    return out


def kib(b: int) -> str:
    """A byte count as KiB, or MiB from 1 MiB up: how cache and block sizes are written."""
    return f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 1024:g} KiB"


# ---- the machine, and what a measurement records ------------------------------------------------
def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo; platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info() -> list[dict]:
    """What threadpoolctl reports about NumPy's BLAS: library, version, kernel (architecture), threads."""
    from threadpoolctl import threadpool_info
    keep = ("internal_api", "prefix", "version", "architecture", "threading_layer", "num_threads")
    return [{k: d.get(k) for k in keep} for d in threadpool_info() if d.get("user_api") == "blas"]


def machine(command: str | None = None) -> dict:
    """Where and when a number was measured: stored beside every result."""
    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "caches": cache_sizes(),
            "threads_used": 1, "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "numba_vector_bits": vector_bits(),
            "numba_cpu_features_changed": os.environ.get("NUMBA_CPU_FEATURES", "").endswith("-prefer-256-bit"),
            "blas": blas_info(),
            "openblas_env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                             "OPENBLAS_NUM_THREADS")},
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command or " ".join(["python"] + sys.argv)}


def measure_ceilings(seconds: float = 0.3) -> dict:
    """This core's roofs: FMA throughput (and one dependent chain), copy bandwidth at each level."""
    sizes = bandwidth_sizes()
    return {"fma_peak_gflops": fma_peak(seconds), "fma_one_chain_gflops": fma_latency_gflops(seconds),
            "copy_bytes": sizes, "copy_gbs": {lvl: copy_bandwidth(b, seconds) for lvl, b in sizes.items()}}


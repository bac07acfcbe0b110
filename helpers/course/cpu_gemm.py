"""Stage 01: SGEMM on one CPU core, from the triple loop to cache blocking.

Every version computes C = alpha * A @ B + beta * C in place, float32, row-major, on one core,
compiled by Numba (LLVM) with the same flags. Each is the previous one plus one idea:

    naive_ijk        the textbook triple loop: a dot product per element of C
    loop_order_ikj   the same arithmetic with the j loop innermost: unit stride, vectorized
    unroll_k4        i-k-j with four rows of B per pass over the row of C
    register_block   an MR x NR block of C held in registers while k runs (MR, NR)
    cache_block      + packing and MC x KC / KC x NC blocks sized for the caches (MR, NR, MC, KC, NC)

VERSIONS lists them in that order; the notebook, the benchmark and the tests iterate it. Block
sizes are parameters: a factory compiles one function per parameter set (cached), so the sizes
are compile-time constants to LLVM, which unrolls the loops over them.

Also here: the CPU's own ceilings (an FMA-throughput microbenchmark and copy bandwidth at each
cache level), timing against single-threaded OpenBLAS (through NumPy, threadpoolctl), the
committed benchmark results, the roofline and block-size panel, and the stage's exercise checkers.

Vector width. On Intel cores with AVX-512, LLVM by default prefers 256-bit vectors (a tuning
flag from the days when 512-bit code lowered the clock). OpenBLAS uses 512-bit registers there,
so to compare like with like this module asks LLVM for full-width vectors, by setting
NUMBA_CPU_FEATURES before Numba compiles anything, unless you set it yourself.
vector_bits() reports what the compiled code really uses.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def _prefer_full_width_vectors() -> None:
    """On x86-64 with AVX-512, lets LLVM use 512-bit vectors (see the module's docstring).
    Only takes effect if Numba has compiled nothing yet in this process; never overrides a
    NUMBA_CPU_FEATURES you set."""
    if "NUMBA_CPU_FEATURES" in os.environ or platform.machine().lower() not in ("x86_64", "amd64"):
        return
    try:
        import llvmlite.binding as ll
        features = ll.get_host_cpu_features()
    except Exception:   # no llvmlite or no host features: Numba's defaults apply
        return
    if features.get("avx512f"):
        os.environ["NUMBA_CPU_FEATURES"] = features.flatten() + ",-prefer-256-bit"


_prefer_full_width_vectors()

import numpy as np                                   # noqa: E402
from numba import carray, njit, types                # noqa: E402
from numba.core import cgutils                       # noqa: E402
from numba.extending import intrinsic                # noqa: E402

from helpers.core.arch import FLOAT_BYTES         # noqa: E402
from helpers.core.paths import FIGURES_DIR, RESULTS_DIR, ROOT  # noqa: E402
from helpers.measure import verify                 # noqa: E402
from helpers.core.markdown import Markdown
from helpers.core import progress
from helpers.views.widgets import interactive_output


# The same flags for every version. "contract" lets LLVM fuse a * b + c into one FMA instruction,
# nothing more: no reordering of sums, so a reduction stays in the order the source writes it.
# error_model="numpy": no Python-style division checks. Bounds are not checked (Numba's default).
FLAGS = dict(fastmath={"contract"}, error_model="numpy")


# ---- building blocks ---------------------------------------------------------------------------
@intrinsic
def stack_floats(typingctx, n):
    """A pointer to n float32 on the stack (n a compile-time constant). Memory from np.empty lives
    on the heap, and the compiler must assume any other array might share it, so it keeps every
    update in memory; a stack buffer is private to the function, so LLVM may keep it in registers."""
    if not isinstance(n, types.IntegerLiteral) or n.literal_value < 1:
        return None

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float32), size=n.literal_value)
    return types.CPointer(types.float32)(n), codegen


@njit(**FLAGS)
def scale_c(beta, C):
    """C = beta * C, and with beta == 0 sets C to 0 without reading it (as BLAS does: a NaN in
    the old C must not survive). Every version starts here and then adds alpha * A @ B."""
    M, N = C.shape
    for i in range(M):
        c = C[i]
        if beta == 0:
            for j in range(N):
                c[j] = 0
        else:
            for j in range(N):
                c[j] *= beta


@njit(**FLAGS)
def add_edges(alpha, A, B, C, M0, N0):
    """C += alpha * A @ B on the strips a blocked loop nest leaves over: rows M0.. (every column)
    and columns N0.. (rows above M0). It uses the i-k-j order of loop_order_ikj."""
    M, K = A.shape
    N = B.shape[1]
    for i in range(M):
        j0 = 0 if i >= M0 else N0
        if j0 >= N:
            continue
        c = C[i, j0:]
        for k in range(K):
            a = alpha * A[i, k]
            b = B[k, j0:]
            for j in range(N - j0):
                c[j] += a * b[j]


# ---- the versions ----------------------------------------------------------------------------
@njit(**FLAGS)
def sgemm_naive_ijk(alpha, A, B, beta, C):
    M, K = A.shape
    N = B.shape[1]
    scale_c(beta, C)
    for i in range(M):
        for j in range(N):
            acc = np.float32(0.0)
            for k in range(K):               # B[k, j] walks down a column: N floats apart
                acc += A[i, k] * B[k, j]     # each FMA waits for the previous one (one acc)
            C[i, j] += alpha * acc


@njit(**FLAGS)
def sgemm_loop_order_ikj(alpha, A, B, beta, C):
    M, K = A.shape
    N = B.shape[1]
    scale_c(beta, C)
    for i in range(M):
        c = C[i]                             # row i of C
        for k in range(K):
            a = alpha * A[i, k]
            b = B[k]                         # row k of B: contiguous
            for j in range(N):               # independent updates at unit stride: vectorized
                c[j] += a * b[j]


@njit(**FLAGS)
def sgemm_unroll_k4(alpha, A, B, beta, C):
    M, K = A.shape
    N = B.shape[1]
    scale_c(beta, C)
    K4 = K - K % 4
    for i in range(M):
        c = C[i]                             # row i of C
        for k in range(0, K4, 4):            # four rows of B per pass over row i of C:
            a0 = alpha * A[i, k]             # c[j] is loaded and stored once per 4 FMAs
            a1 = alpha * A[i, k + 1]
            a2 = alpha * A[i, k + 2]
            a3 = alpha * A[i, k + 3]
            b0, b1, b2, b3 = B[k], B[k + 1], B[k + 2], B[k + 3]
            for j in range(N):
                c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
        for k in range(K4, K):               # the K % 4 rows left over
            a = alpha * A[i, k]
            b = B[k]                         # row k of B: contiguous
            for j in range(N):               # independent updates at unit stride: vectorized
                c[j] += a * b[j]


@functools.lru_cache(maxsize=None)
def register_block(MR: int = 4, NR: int = 64):
    """The register-blocked SGEMM for an MR x NR block of C, compiled once per (MR, NR)."""
    check_block_sizes(MR=MR, NR=NR)
    SIZE = MR * NR                                   # a compile-time constant, like MR and NR

    @njit(**FLAGS)
    def sgemm_register_block(alpha, A, B, beta, C):
        M, K = A.shape
        N = B.shape[1]
        scale_c(beta, C)
        acc = carray(stack_floats(SIZE), (MR, NR))   # (MR, NR) block of C: in registers
        for j0 in range(0, N - NR + 1, NR):          # K x NR panel of B: stays in L2 for all i0
            for i0 in range(0, M - MR + 1, MR):
                for i in range(MR):
                    for j in range(NR):
                        acc[i, j] = 0
                for k in range(K):
                    b = B[k, j0:j0 + NR]             # (NR,) piece of row k of B
                    for i in range(MR):
                        a = A[i0 + i, k]             # one float of A, used NR times
                        for j in range(NR):
                            acc[i, j] += a * b[j]
                for i in range(MR):
                    c = C[i0 + i, j0:j0 + NR]
                    for j in range(NR):
                        c[j] += alpha * acc[i, j]
        add_edges(alpha, A, B, C, M - M % MR, N - N % NR)

    return sgemm_register_block


@njit(**FLAGS)
def pack_a(A, i0, mc, p0, kc, Ap):
    """Copies A[i0:i0+mc, p0:p0+kc] into panels of MR rows, k-major: Ap[q, p, i] =
    A[i0 + q*MR + i, p0 + p], rows past mc zero. The micro-kernel then reads Ap[q] front to back."""
    MR = Ap.shape[2]
    for q in range((mc + MR - 1) // MR):
        panel = Ap[q]
        for i in range(MR):
            if q * MR + i < mc:
                row = A[i0 + q * MR + i, p0:p0 + kc]
                for p in range(kc):
                    panel[p, i] = row[p]
            else:
                for p in range(kc):
                    panel[p, i] = 0


@njit(**FLAGS)
def pack_b(B, p0, kc, j0, nc, Bp):
    """Copies B[p0:p0+kc, j0:j0+nc] into panels of NR columns, k-major: Bp[q, p, j] =
    B[p0 + p, j0 + q*NR + j], columns past nc zero."""
    NR = Bp.shape[2]
    for q in range((nc + NR - 1) // NR):
        w = min(NR, nc - q * NR)
        for p in range(kc):
            dst = Bp[q, p]
            src = B[p0 + p, j0 + q * NR:j0 + q * NR + w]
            for j in range(w):
                dst[j] = src[j]
            for j in range(w, NR):
                dst[j] = 0


@functools.lru_cache(maxsize=None)
def cache_block(MR: int = 4, NR: int = 64, MC: int = 128, KC: int = 256, NC: int = 1024):
    """The cache-blocked SGEMM (GotoBLAS loop order, packed A and B), compiled once per parameter set."""
    check_block_sizes(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC)
    SIZE = MR * NR

    @njit(**FLAGS)
    def sgemm_cache_block(alpha, A, B, beta, C):
        M, K = A.shape
        N = B.shape[1]
        scale_c(beta, C)
        Ap = np.empty((MC // MR, KC, MR), np.float32)   # (MC, KC) block of A, packed: in L2
        Bp = np.empty((NC // NR, KC, NR), np.float32)   # (KC, NC) panel of B, packed: in L3/L2
        acc = carray(stack_floats(SIZE), (MR, NR))      # (MR, NR) block of C: in registers
        for jc in range(0, N, NC):
            nc = min(NC, N - jc)
            for pc in range(0, K, KC):
                kc = min(KC, K - pc)
                pack_b(B, pc, kc, jc, nc, Bp)
                for ic in range(0, M, MC):
                    mc = min(MC, M - ic)
                    pack_a(A, ic, mc, pc, kc, Ap)
                    for jr in range(0, nc, NR):         # (KC, NR) micro-panel of B: L1 (or L2)
                        b_panel = Bp[jr // NR]
                        for ir in range(0, mc, MR):
                            a_panel = Ap[ir // MR]
                            for i in range(MR):
                                for j in range(NR):
                                    acc[i, j] = 0
                            for p in range(kc):         # the micro-kernel
                                a = a_panel[p]          # (MR,) column of the A block
                                b = b_panel[p]          # (NR,) row of the B panel
                                for i in range(MR):
                                    ai = a[i]
                                    for j in range(NR):
                                        acc[i, j] += ai * b[j]
                            mr = min(MR, mc - ir)       # the part of the block inside C
                            nr = min(NR, nc - jr)
                            for i in range(MR):
                                if i < mr:
                                    c = C[ic + ir + i, jc + jr:jc + jr + nr]
                                    for j in range(NR):
                                        if j < nr:
                                            c[j] += alpha * acc[i, j]

    return sgemm_cache_block


# ---- the registry of versions -----------------------------------------------------------------
BLOCK_LIMITS = dict(MR=(1, 16), NR=(1, 256), MC=(1, 4096), KC=(1, 4096), NC=(1, 16384))


def check_block_sizes(**sizes) -> None:
    """Raises ValueError naming the first broken rule: whole numbers in range, MC a multiple of
    MR, NC a multiple of NR (the packed buffers hold whole panels)."""
    for name, value in sizes.items():
        lo, hi = BLOCK_LIMITS[name]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ValueError(f"{name} must be a whole number, got {value!r}.")
        if not lo <= value <= hi:
            raise ValueError(f"{name} = {value} is out of range: {lo} <= {name} <= {hi}.")
    for big, small in (("MC", "MR"), ("NC", "NR")):
        if big in sizes and small in sizes and sizes[big] % sizes[small]:
            raise ValueError(f"{big} = {sizes[big]} must be a multiple of {small} = {sizes[small]} "
                             f"(the packed block holds whole panels of {small}).")


@dataclass(frozen=True)
class Version:
    """One CPU version of SGEMM: a compiled function, or a factory taking block sizes."""
    name: str
    title: str
    idea: str
    build: object                          # a Numba function, or a factory (MR=..., ...) -> function
    defaults: tuple[tuple[str, int], ...] = ()

    @property
    def params(self) -> dict:
        return dict(self.defaults)

    def function(self, **params):
        """The compiled (or compile-on-first-call) function for these block sizes."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"{self.name} takes no {', '.join(sorted(unknown))}; its block sizes are "
                            f"{', '.join(self.params) or 'none'}.")
        if not self.defaults:
            return self.build
        p = {**self.params, **params}
        return self.build(*(int(p[k]) if isinstance(p[k], (int, np.integer)) and not isinstance(p[k], bool)
                            else p[k] for k in self.params))   # always positional: one cache entry per set

    def source(self) -> str:
        """The Python source of this version, as it is in helpers/cpu_gemm.py now."""
        import inspect
        target = self.build if self.defaults else self.build.py_func
        return inspect.getsource(target)

    def label(self, **params) -> str:
        p = {**self.params, **params}
        return self.name + (f" ({', '.join(f'{k}={v}' for k, v in p.items())})" if p else "")

    def intensity(self, **params) -> float:
        """FLOP per byte that the innermost loop loads and stores (the data the core asks of its
        caches for each FMA), in the steady state, edges ignored."""
        p = {**self.params, **params}
        if self.name == "naive_ijk":
            return 2 / (2 * FLOAT_BYTES)                 # load A[i,k] and B[k,j] per FMA
        if self.name == "loop_order_ikj":
            return 2 / (3 * FLOAT_BYTES)                 # load b[j], load and store c[j]
        if self.name == "unroll_k4":
            return 8 / (6 * FLOAT_BYTES)                 # 4 loads of B, c[j] loaded and stored once
        mr, nr = p["MR"], p["NR"]                        # MR + NR loads per MR * NR FMAs
        return 2 * mr * nr / ((mr + nr) * FLOAT_BYTES)


VERSIONS: tuple[Version, ...] = (
    Version("naive_ijk", "Naive i-j-k",
            "one dot product per element of C; B read down its columns", sgemm_naive_ijk),
    Version("loop_order_ikj", "Loop order i-k-j",
            "the j loop innermost: every array read along its rows, the loop vectorized",
            sgemm_loop_order_ikj),
    Version("unroll_k4", "Unrolled by 4 along k",
            "four rows of B per pass over a row of C: a quarter of the loads and stores of C",
            sgemm_unroll_k4),
    Version("register_block", "Register blocking",
            "an MR x NR block of C in registers while k runs: MR + NR loads per MR x NR FMAs",
            register_block, (("MR", 4), ("NR", 64))),
    Version("cache_block", "Cache blocking with packing",
            "blocks of A and B sized for L2 and L1, copied into contiguous panels",
            cache_block, (("MR", 4), ("NR", 64), ("MC", 128), ("KC", 256), ("NC", 1024))),
)


def version(name: str) -> Version:
    for v in VERSIONS:
        if v.name == name:
            return v
    raise KeyError(f"no CPU version {name!r}; versions are {', '.join(v.name for v in VERSIONS)}")


def _as_version(v) -> Version:
    return v if isinstance(v, Version) else version(v)


def show_source(name: str):
    """A version's source as Markdown (a Python code block), read from this file now."""
    return Markdown(f"`helpers/cpu_gemm.py`, `{name}`:\n\n```python\n{version(name).source().rstrip()}\n```")


def source_diff(old: str, new: str, context: int = 1):
    """What changes from version `old` to version `new` (a unified diff of their sources), as Markdown."""
    import difflib
    a, b = version(old).source().splitlines(), version(new).source().splitlines()
    diff = difflib.unified_diff(a, b, old, new, n=context, lineterm="")
    return Markdown("```diff\n" + "\n".join(list(diff)[2:]) + "\n```")


# ---- running and checking -----------------------------------------------------------------------
def run(v, A, B, C0, alpha: float = 1.0, beta: float = 0.0, **params) -> np.ndarray:
    """alpha * A @ B + beta * C0 by version v (a Version or its name), on copies: a new C."""
    fn = _as_version(v).function(**params)
    A = np.ascontiguousarray(A, np.float32)
    B = np.ascontiguousarray(B, np.float32)
    C = np.array(C0, dtype=np.float32, order="C", copy=True)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"shapes do not chain: A {A.shape}, B {B.shape}, C {C.shape}; "
                         f"need A (M, K), B (K, N), C (M, N).")
    fn(np.float32(alpha), A, B, np.float32(beta), C)
    return C


def check(v, s: verify.Shape, rng: np.random.Generator | None = None, **params) -> verify.Check:
    """Runs version v once on fresh random data of shape s and compares with float64."""
    rng = rng or np.random.default_rng()
    A, B, C0 = verify.random_operands(s, rng)
    C = run(v, A, B, C0, s.alpha, s.beta, **params)
    ref, tol = verify.reference(A, B, C0, s.alpha, s.beta)
    return verify.compare(C, C0, ref, tol, s)


def check_catalogue(v, shapes=verify.CATALOGUE, seed: int | None = None, **params) -> verify.Report:
    """Version v on every shape given (fresh random data each), as a verify.Report."""
    v = _as_version(v)
    rng = np.random.default_rng(seed)
    return verify.Report(v.label(**params), [check(v, s, rng, **params) for s in shapes], "cpu")


# ---- timing -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    median_s: float
    q1_s: float
    q3_s: float
    min_s: float
    repeats: int

    def gflops(self, M: int, N: int, K: int) -> float:
        return 2.0 * M * N * K / self.median_s / 1e9


def time_call(fn, n_warmup: int = 1, n_repeat: int = 5) -> Timing:
    """Calls fn() n_warmup times untimed (compilation, caches), then n_repeat times timed."""
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(statistics.median(times), q[0], q[2], min(times), len(times))


def operands(M: int, N: int, K: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32),
            rng.uniform(-1, 1, (M, N)).astype(np.float32))


def time_version(v, M: int, N: int | None = None, K: int | None = None, n_warmup: int = 1, n_repeat: int = 5,
                 **params) -> Timing:
    """Times version v on random M x N x K operands (alpha 1, beta 0), one thread."""
    N, K = N or M, K or M
    fn = _as_version(v).function(**params)
    A, B, C = operands(M, N, K)
    one, zero = np.float32(1), np.float32(0)
    return time_call(lambda: fn(one, A, B, zero, C), n_warmup, n_repeat)


def time_openblas(M: int, N: int | None = None, K: int | None = None, n_warmup: int = 2,
                  n_repeat: int = 9) -> Timing:
    """NumPy's matmul (OpenBLAS SGEMM) limited to one thread, same operands as time_version."""
    from threadpoolctl import threadpool_limits
    N, K = N or M, K or M
    A, B, C = operands(M, N, K)
    with threadpool_limits(limits=1, user_api="blas"):
        return time_call(lambda: np.matmul(A, B, out=C), n_warmup, n_repeat)


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
    fn = _as_version(v).function(**params)
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
    import llvmlite
    import numba
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


def benchmark(sizes=(1024, 512), n_repeat: int = 5, versions=VERSIONS, log=None) -> list[dict]:
    """Every version and single-threaded OpenBLAS at each size, one row each. Each version is
    checked on two odd shapes first. Timing runs in rounds (every contestant once per round,
    after one untimed warm-up round), so slow drifts of a shared machine hit all of them alike;
    the row keeps the median, quartiles and minimum."""
    log = log or (lambda *_: None)
    for v in versions:
        for s in (verify.shape("primes"), verify.shape("non-multiples of every tile")):
            c = check(v, s)
            if not c.ok:
                raise verify.VerificationError(f"{v.label()} is wrong, not timed:\n{c.details()}")
    from threadpoolctl import threadpool_limits
    rows = []
    shown = progress.bar(total=len(sizes) * (n_repeat + 1), desc="timing rounds", unit="round")
    for n in sizes:
        A, B, C = operands(n, n, n)
        one, zero = np.float32(1), np.float32(0)
        calls = {v.name: functools.partial(v.function(), one, A, B, zero, C) for v in versions}
        calls["openblas"] = functools.partial(np.matmul, A, B, out=C)
        times: dict[str, list[float]] = {name: [] for name in calls}
        with threadpool_limits(limits=1, user_api="blas"):
            for rnd in range(n_repeat + 1):
                for name, fn in calls.items():
                    t = time.perf_counter()
                    fn()
                    if rnd:                        # round 0 is the warm-up
                        times[name].append(time.perf_counter() - t)
                log(f"{n}^3: round {rnd} of {n_repeat} done")
                shown.update()
        base = statistics.median(times["openblas"])
        for v in (*versions, None):
            name = v.name if v else "openblas"
            ts = times[name]
            q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
            med = statistics.median(ts)
            rows.append({"version": name, "params": v.params if v else {}, "M": n, "N": n, "K": n,
                         "median_s": med, "q1_s": q[0], "q3_s": q[2], "min_s": min(ts), "repeats": len(ts),
                         "gflops": 2.0 * n**3 / med / 1e9, "pct_openblas": 100.0 * base / med,
                         "intensity_flop_per_byte": v.intensity() if v else None})
    shown.close()
    return rows


# ---- committed results --------------------------------------------------------------------------
def results_files(directory: Path | str = RESULTS_DIR) -> list[Path]:
    return sorted(Path(directory).glob("cpu_gemm_*.json"))


def load_results(path: Path | str | None = None, directory: Path | str = RESULTS_DIR) -> dict | None:
    """A committed benchmark (the newest results/cpu_gemm_*.json by default), or None if there is none."""
    if path is None:
        files = results_files(directory)
        if not files:
            return None
        path = max(files, key=lambda p: (json.loads(p.read_text())["machine"]["date"], p.name))
    data = json.loads(Path(path).read_text())
    data["file"] = Path(path).relative_to(ROOT).as_posix() if Path(path).is_relative_to(ROOT) else str(path)
    return data


def results_label(data: dict) -> str:
    m = data["machine"]
    blas = m["blas"][0] if m.get("blas") else {}
    return (f"Measured on {m['cpu']} ({m['logical_cpus']} logical CPUs, one used) on {m['date'][:10]}; "
            f"Numba {m['numba']} ({m['numba_vector_bits']}-bit vectors), NumPy {m['numpy']} with "
            f"{blas.get('internal_api', 'BLAS')} {blas.get('version', '')} ({blas.get('architecture', '?')} "
            f"kernel), one thread; from `{data['file']}`")


def results_table(data: dict, size: int | None = None) -> str:
    """The committed rows as a Markdown table: version, size, median, GFLOP/s, % of OpenBLAS."""
    lines = ["| version | block sizes | size | median ms | GFLOP/s | % of OpenBLAS |", "|---|---|---|---:|---:|---:|"]
    for r in data["rows"]:
        if size and r["M"] != size:
            continue
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "—"
        lines.append(f"| {r['version']} | {params} | {r['M']}³ | {r['median_s'] * 1e3:,.1f} | {r['gflops']:.1f} | "
                     f"{r['pct_openblas']:.0f}% |")
    return "\n".join(lines)


def best_blocked(data: dict, size: int = 1024) -> dict:
    rows = [r for r in data["rows"] if r["M"] == size and r["version"] in ("register_block", "cache_block")]
    return max(rows, key=lambda r: r["gflops"])


def bar_verdict(data: dict, size: int = 1024, bar: float = 50.0) -> str:
    """Whether the best blocked version reaches `bar` % of single-threaded OpenBLAS at size^3."""
    best = best_blocked(data, size)
    met = best["pct_openblas"] >= bar
    return (f"At {size}³ the best blocked version, {best['version']}, runs at {best['gflops']:.1f} GFLOP/s, "
            f"{best['pct_openblas']:.0f}% of single-threaded OpenBLAS: the {bar:.0f}% bar is "
            f"{'met' if met else 'NOT met'}.")


# ---- figures --------------------------------------------------------------------------------------
VERSION_COLORS = {"naive_ijk": "#d95f02", "loop_order_ikj": "#7570b3", "unroll_k4": "#e7298a",
                  "register_block": "#66a61e", "cache_block": "#1b9e77", "openblas": "#444444"}
LEVEL_COLORS = {"L1": "#3182bd", "L2": "#6baed6", "DRAM": "#9ecae1"}
SVG_RC = {"svg.hashsalt": "tile-by-tile", "svg.fonttype": "none", "font.size": 9}


def plot_results(data: dict, ax=None):
    """GFLOP/s of every version and OpenBLAS at each committed size (grouped bars), the measured
    FMA peak as a line. Returns the figure."""
    import matplotlib.pyplot as plt
    sizes = sorted({r["M"] for r in data["rows"]})
    names = [v.name for v in VERSIONS] + ["openblas"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4))
    else:
        fig = ax.figure
    width = 0.8 / len(sizes)
    alphas = np.linspace(1.0, 0.4, len(sizes))
    for s_i, n in enumerate(sizes):
        by_name = {r["version"]: r for r in data["rows"] if r["M"] == n}
        xs = [i + (s_i - (len(sizes) - 1) / 2) * width for i in range(len(names))]
        ys = [by_name[nm]["gflops"] if nm in by_name else 0 for nm in names]
        bars = ax.bar(xs, ys, width * 0.95, color=[VERSION_COLORS[nm] for nm in names],
                      alpha=alphas[s_i], edgecolor="black", linewidth=0.4)
        for b, y in zip(bars, ys):
            ax.annotate(f"{y:.0f}" if y >= 10 else f"{y:.1f}", (b.get_x() + b.get_width() / 2, y),
                        xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    from matplotlib.patches import Patch
    ax.legend([Patch(facecolor="gray", alpha=a, edgecolor="black", linewidth=0.4) for a in alphas],
              [f"{n}³" for n in sizes], title="M = N = K (bars left to right)", fontsize=8, loc="upper left")
    peak = data["ceilings"]["fma_peak_gflops"]
    ax.axhline(peak, color="black", linestyle=":", linewidth=1)
    ax.annotate(f"FMA peak, one core: {peak:.0f} GFLOP/s", (len(names) - 0.5, peak), xytext=(0, 3),
                textcoords="offset points", ha="right", fontsize=8)
    ax.set_xticks(range(len(names)), [n.replace("_", "\n", 1) for n in names], fontsize=8)
    ax.set_ylabel("GFLOP/s (one core, float32)")
    ax.set_ylim(0, peak * 1.12)
    ax.set_title("SGEMM on one CPU core: each version and OpenBLAS")
    fig.tight_layout()
    return fig


def plot_roofline(data: dict, size: int = 1024, ax=None):
    """The CPU roofline from a committed benchmark: the FMA peak and the copy bandwidth of L1, L2
    and DRAM as roofs; each version at its intensity (FLOP per byte its inner loop loads and
    stores) and its GFLOP/s at size^3; OpenBLAS as a dashed line. Returns the figure."""
    import matplotlib.pyplot as plt
    c = data["ceilings"]
    peak = c["fma_peak_gflops"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5))
    else:
        fig = ax.figure
    x = np.geomspace(0.05, 20, 300)
    ax.plot(x, np.full_like(x, peak), color="black", linewidth=2)
    ax.annotate(f"FMA peak {peak:.0f} GFLOP/s", (x[-1], peak), xytext=(0, 4), textcoords="offset points",
                ha="right", fontsize=8)
    for level, gbs in c["copy_gbs"].items():
        roof = np.minimum(peak, gbs * x)
        ax.plot(x, roof, color=LEVEL_COLORS.get(level, "gray"), linewidth=1.5)
        x0 = 0.06
        ax.annotate(f"{level} copy {gbs:.0f} GB/s", (x0, gbs * x0), xytext=(2, 4), textcoords="offset points",
                    rotation=0, fontsize=8, color=LEVEL_COLORS.get(level, "gray"))
    rows = {r["version"]: r for r in data["rows"] if r["M"] == size}
    sizes = sorted({r["M"] for r in data["rows"]})
    other = next((n for n in sizes if n != size and abs(n - size) <= size // 8), None)   # e.g. 1000 beside 1024
    others = {r["version"]: r for r in data["rows"] if r["M"] == other}
    offsets = {"naive_ijk": (8, -4), "loop_order_ikj": (-8, 8), "unroll_k4": (8, -14), "register_block": (8, -4),
               "cache_block": (8, -16)}
    for v in VERSIONS:
        r = rows.get(v.name)
        if r is None:
            continue
        xi, color = r["intensity_flop_per_byte"], VERSION_COLORS[v.name]
        ax.plot([xi], [r["gflops"]], "o", color=color, markersize=8)
        if v.name in others:
            ax.plot([xi], [others[v.name]["gflops"]], "o", markerfacecolor="white", color=color, markersize=7)
        dx, dy = offsets.get(v.name, (8, 4))
        ax.annotate(f"{v.name} {r['gflops']:.1f}", (xi, r["gflops"]), xytext=(dx, dy), textcoords="offset points",
                    fontsize=8, color=color, ha="right" if dx < 0 else "left")
    if other:
        ax.plot([], [], "o", color="gray", label=f"{size}³")
        ax.plot([], [], "o", color="gray", markerfacecolor="white", label=f"{other}³")
        ax.legend(loc="lower right", fontsize=8)
    if "openblas" in rows:
        ax.axhline(rows["openblas"]["gflops"], color=VERSION_COLORS["openblas"], linestyle="--", linewidth=1)
        ax.annotate(f"OpenBLAS, one thread: {rows['openblas']['gflops']:.0f} GFLOP/s", (0.06, rows["openblas"]["gflops"]),
                    xytext=(2, -11), textcoords="offset points", fontsize=8, color=VERSION_COLORS["openblas"])
    lowest = min(r["gflops"] for r in data["rows"] if r["M"] in (size, other))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(min(0.3, lowest / 2), peak * 2)
    ax.set_xlabel("FLOP per byte the inner loop loads and stores (model, helpers.cpu_gemm.Version.intensity)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, which="both", alpha=0.25)
    ax.set_title(f"CPU roofline, one core, float32: {size}³" + (f" (filled) and {other}³ (open)" if other else ""))
    ax.annotate(results_label(data).replace("`", ""), xy=(0, -0.14), xycoords="axes fraction", va="top",
                fontsize=7, color="#555555", wrap=True)
    fig.tight_layout()
    return fig


def plot_blocking(MR: int = 4, NR: int = 64, MC: int = 128, KC: int = 256, NC: int = 1024, ax=None):
    """The cache-blocking picture: C += A B with the KC x NC panel of B, its KC x NR micro-panel,
    the MC x KC block of A, its MR-row micro-panel, and the MR x NR block of C, each with its size
    in bytes and the memory level it is meant for. A schematic: the boxes are not to scale."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4.6))
    else:
        fig = ax.figure
    # a schematic, not to scale: fixed screen sizes so every block stays visible
    Kw, Mh, Nw = 3.0, 3.0, 4.0
    ax_A, ax_B, ax_C = (0.0, 0.0), (Kw + 0.8, Mh + 0.8), (Kw + 0.8, 0.0)

    def box(x, y, w, h, **kw):
        ax.add_patch(Rectangle((x, y), w, h, **kw))

    box(*ax_A, Kw, Mh, fill=False, linewidth=1.2)
    box(*ax_B, Nw, Kw, fill=False, linewidth=1.2)
    box(*ax_C, Nw, Mh, fill=False, linewidth=1.2)
    ax.text(ax_A[0] + Kw / 2, -0.35, "A  (M x K)", ha="center")
    ax.text(ax_B[0] + Nw + 0.1, ax_B[1] + Kw / 2, "B  (K x N)", va="center")
    ax.text(ax_C[0] + Nw / 2, -0.35, "C  (M x N)", ha="center")
    kc_w, mc_h, nc_w, mr_h, nr_w = 0.9, 1.2, 2.6, 0.22, 0.45
    pc, ic, jc = 1.0, 1.0, 0.6                     # where the current blocks sit (schematic)
    # B panel (KC x NC) and micro-panel (KC x NR)
    box(ax_B[0] + jc, ax_B[1] + Kw - pc - kc_w, nc_w, kc_w, color="#c6dbef")
    box(ax_B[0] + jc + nr_w, ax_B[1] + Kw - pc - kc_w, nr_w, kc_w, color="#3182bd")
    # A block (MC x KC) and micro-panel (MR x KC)
    box(ax_A[0] + pc, ax_A[1] + Mh - ic - mc_h, kc_w, mc_h, color="#c7e9c0")
    box(ax_A[0] + pc, ax_A[1] + Mh - ic - 3 * mr_h, kc_w, mr_h, color="#31a354")
    # C block (MR x NR)
    box(ax_C[0] + jc + nr_w, ax_C[1] + Mh - ic - 3 * mr_h, nr_w, mr_h, color="#e6550d")
    box(ax_C[0] + jc, ax_C[1] + Mh - ic - mc_h, nc_w, mc_h, fill=False, linestyle="--", linewidth=0.8)
    f = FLOAT_BYTES
    notes = [("#e6550d", f"C block {MR} x {NR} ({MR * NR * f / 1024:g} KiB): registers"),
             ("#3182bd", f"B micro-panel {KC} x {NR} ({KC * NR * f / 1024:g} KiB): L1"),
             ("#31a354", f"A micro-panel {MR} x {KC} ({MR * KC * f / 1024:g} KiB)"),
             ("#c7e9c0", f"A block {MC} x {KC} ({MC * KC * f / 1024:g} KiB): L2"),
             ("#c6dbef", f"B panel {KC} x {NC} ({KC * NC * f / 1024:g} KiB): L3")]
    for i, (color, text) in enumerate(notes):
        y = Mh + Kw + 0.3 - i * 0.42
        box(-2.6, y, 0.25, 0.25, color=color)
        ax.text(-2.25, y + 0.12, text, va="center", fontsize=8.5)
    ax.set_xlim(-2.8, Kw + Nw + 2.2)
    ax.set_ylim(-0.6, Mh + Kw + 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Cache blocking, GotoBLAS loop order: jc (step NC) > pc (KC) > ic (MC) > jr (NR) > ir (MR) > k",
                 fontsize=9.5)
    fig.tight_layout()
    return fig


def draw_figures(directory: Path | str = FIGURES_DIR, data: dict | None = None) -> list[Path]:
    """figures/01_cpu_loop_blocking_{blocking,results,roofline}.svg from the committed benchmark."""
    import matplotlib
    import matplotlib.pyplot as plt
    data = data or load_results()
    directory = Path(directory)
    out = []
    with matplotlib.rc_context(SVG_RC):
        figs = {"blocking": plot_blocking(**version("cache_block").params)}
        if data:
            figs["results"] = plot_results(data)
            figs["roofline"] = plot_roofline(data)
        for what, fig in figs.items():
            path = directory / f"01_cpu_loop_blocking_{what}.svg"
            fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
            plt.close(fig)
            out.append(path)
    return out


# ---- explore: block sizes (run, describe, draw, panel) --------------------------------------------
PANEL_SIZE = 768                 # the panel times M = N = K = PANEL_SIZE
PANEL_SHAPE = verify.Shape("odd shape for the panel", 203, 197, 301)   # edges in every loop
PANEL_CHOICES = dict(MR=tuple(range(1, 9)), NR=(16, 32, 48, 64, 96, 128),
                     MC=(32, 48, 64, 96, 128, 192, 256, 384, 512), KC=(32, 64, 128, 192, 256, 384, 512, 1024),
                     NC=(256, 384, 512, 768, 1024, 1536, 2048, 4096))
VECTOR_REGISTERS = 32            # x86-64 with AVX-512: zmm0..zmm31 (16 with AVX2 alone)


@dataclass(frozen=True)
class BlockResult:
    """What one set of block sizes does for cache_block."""
    MR: int
    NR: int
    MC: int
    KC: int
    NC: int
    size: int
    error: str | None = None             # the broken rule, for sizes that cannot compile
    ok: bool | None = None               # verified on PANEL_SHAPE
    verdict: str = ""
    fma: dict = field(default_factory=dict)
    gflops: float | None = None
    openblas_gflops: float | None = None
    working_sets: tuple = ()             # (what, bytes, where it should live, capacity in bytes)

    @property
    def registers(self) -> int:
        """Vector registers the micro-kernel needs: the block of C, one row of B, one broadcast of A."""
        lanes = max(1, vector_bits() // 32) if vector_bits() else 16
        per_row = -(-self.NR // lanes)
        return self.MR * per_row + per_row + 1


def working_sets(MR, NR, MC, KC, NC, caches: dict | None = None) -> tuple:
    caches = caches if caches is not None else cache_sizes()
    f = FLOAT_BYTES
    return (("C block MR x NR", MR * NR * f, "registers", VECTOR_REGISTERS * 64),
            ("B micro-panel KC x NR", KC * NR * f, "L1", caches.get("L1")),
            ("A block MC x KC", MC * KC * f, "L2", caches.get("L2")),
            ("B panel KC x NC", KC * NC * f, "L3", caches.get("L3")))


@functools.lru_cache(maxsize=8)
def _openblas_gflops(size: int) -> float:
    return time_openblas(size, n_repeat=5).gflops(size, size, size)


def run_blocks(MR: int = 4, NR: int = 64, MC: int = 128, KC: int = 256, NC: int = 1024,
               size: int | None = PANEL_SIZE) -> BlockResult:
    """Checks the sizes, compiles cache_block for them, verifies it on PANEL_SHAPE (fresh random
    data), counts its FMA instructions and, unless size is None, times it and OpenBLAS (one
    thread) at size^3. Never raises for bad sizes: the result holds the message."""
    base = dict(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC, size=size or 0)
    try:
        check_block_sizes(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC)
    except ValueError as e:
        return BlockResult(**base, error=str(e))
    params = dict(MR=MR, NR=NR, MC=MC, KC=KC, NC=NC)
    c = check("cache_block", PANEL_SHAPE, **params)
    out = dict(base, ok=c.ok, verdict=c.details(), fma=fma_instructions("cache_block", **params),
               working_sets=working_sets(MR, NR, MC, KC, NC))
    if size and c.ok:
        out.update(gflops=time_version("cache_block", size, n_repeat=3, **params).gflops(size, size, size),
                   openblas_gflops=_openblas_gflops(size))
    return BlockResult(**out)


def _kib(b: int) -> str:
    return f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 1024:g} KiB"


def describe_blocks(r: BlockResult) -> str:
    head = f"cache_block with MR={r.MR}, NR={r.NR}, MC={r.MC}, KC={r.KC}, NC={r.NC}"
    if r.error:
        return f"{head}: not a valid set of block sizes.\n{r.error}"
    lines = [head, f"Correctness on {r.verdict}"]
    f = r.fma
    lines.append(f"FMA instructions in the compiled code: {f['512-bit']} 512-bit, {f['256-bit']} 256-bit, "
                 f"{f['128-bit']} 128-bit, {f['scalar']} scalar; {f['on the stack']} read their accumulator "
                 f"from the stack (a block of C left in memory).")
    lines.append(f"Vector registers the micro-kernel needs: {r.registers} of {VECTOR_REGISTERS}.")
    for what, nbytes, where, cap in r.working_sets:
        if where == "registers":
            continue
        fit = "" if not cap else f" of {_kib(cap)} ({100 * nbytes / cap:.0f}%)"
        lines.append(f"{what}: {_kib(nbytes)}{fit}, meant for {where}.")
    if r.gflops is not None:
        lines.append(f"At {r.size}³: {r.gflops:.1f} GFLOP/s; OpenBLAS (one thread) {r.openblas_gflops:.1f} GFLOP/s "
                     f"= {100 * r.gflops / r.openblas_gflops:.0f}% (timings on a shared machine move by 10-20%).")
    return "\n".join(lines)


def draw_blocks(r: BlockResult):
    """Two panels: how full each level is with its block (registers by count), and GFLOP/s against
    OpenBLAS. None for invalid sizes."""
    if r.error:
        return None
    import matplotlib.pyplot as plt
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1.6, 1]})
    labels = [f"C block: {r.registers} vector registers"]
    fills = [r.registers / VECTOR_REGISTERS]
    for what, nbytes, where, cap in r.working_sets[1:]:
        labels.append(f"{what} ({_kib(nbytes)}) in {where}")
        fills.append(nbytes / cap if cap else float("nan"))
    colors = ["#e6550d" if v > 1 else "#31a354" for v in fills]
    ax0.barh(range(len(fills)), [100 * v for v in fills], color=colors)
    ax0.axvline(100, color="black", linewidth=1)
    ax0.set_yticks(range(len(fills)), labels, fontsize=8)
    ax0.invert_yaxis()
    ax0.set_xlabel("% of the level's capacity (red: does not fit)")
    ax0.set_xlim(0, max(110, 100 * max(v for v in fills if v == v) * 1.1))
    if r.gflops is not None:
        ax1.bar([0, 1], [r.gflops, r.openblas_gflops], color=[VERSION_COLORS["cache_block"], VERSION_COLORS["openblas"]])
        ax1.set_xticks([0, 1], ["cache_block", "OpenBLAS"])
        for x, y in enumerate([r.gflops, r.openblas_gflops]):
            ax1.annotate(f"{y:.1f}", (x, y), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8)
        ax1.set_ylabel(f"GFLOP/s at {r.size}³")
    else:
        ax1.text(0.5, 0.5, "not timed", ha="center", va="center", transform=ax1.transAxes)
        ax1.set_axis_off()
    status = "correct" if r.ok else "WRONG"
    fig.suptitle(f"cache_block MR={r.MR} NR={r.NR} MC={r.MC} KC={r.KC} NC={r.NC}: {status}", fontsize=10)
    fig.tight_layout()
    return fig


def blocks_panel(size: int = PANEL_SIZE):
    """Sliders for MR, NR, MC, KC, NC joined to run_blocks / describe_blocks / draw_blocks."""
    import ipywidgets as w
    d = version("cache_block").params
    sliders = {k: w.SelectionSlider(options=PANEL_CHOICES[k], value=d[k], description=k, continuous_update=False)
               for k in ("MR", "NR", "MC", "KC", "NC")}

    out = interactive_output(lambda MR, NR, MC, KC, NC: run_blocks(MR, NR, MC, KC, NC, size),
                             describe_blocks, draw_blocks, sliders)
    return w.VBox([w.HBox(list(sliders.values())[:3]), w.HBox(list(sliders.values())[3:]), out])

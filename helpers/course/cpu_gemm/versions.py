"""Stage 01's SGEMM versions on one CPU core, from the triple loop to cache blocking.

Every version computes C = alpha * A @ B + beta * C in place, float32, row-major, on one core,
compiled by Numba (LLVM) with the same flags. Each is the previous one plus one idea:

    naive_ijk        the textbook triple loop: a dot product per element of C
    loop_order_ikj   the same arithmetic with the j loop innermost: unit stride, vectorized
    unroll_k4        i-k-j with four rows of B per pass over the row of C
    register_block   an MR x NR block of C held in registers while k runs (MR, NR)
    cache_block      + packing and MC x KC / KC x NC blocks sized for the caches (MR, NR, MC, KC, NC)

VERSIONS lists them in that order; the notebook, the benchmark and the tests iterate it. Block
sizes are parameters: a factory compiles one function per parameter set (cached), so the sizes
are compile-time constants to LLVM, which unrolls the loops over them. Also here: running a
version on copies of its operands and checking it against float64 (helpers.measure.verify).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from dataclasses import dataclass

from helpers.course.cpu_gemm import vector_width  # noqa: F401  (first: sets up LLVM before numba loads)

# isort: split

import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from helpers.core.arch import FLOAT_BYTES
from helpers.core.markdown import Markdown
from helpers.measure import verify


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
        """The Python source of this version, as it is in helpers/course/cpu_gemm/versions.py now."""
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


def as_version(v) -> Version:
    """v itself if it is a Version, else the version of that name."""
    return v if isinstance(v, Version) else version(v)


def show_source(name: str):
    """A version's source as Markdown (a Python code block), read from this file now."""
    return Markdown(f"`helpers/course/cpu_gemm/versions.py`, `{name}`:\n\n"
                    f"```python\n{version(name).source().rstrip()}\n```")


def source_diff(old: str, new: str, context: int = 1):
    """What changes from version `old` to version `new` (a unified diff of their sources), as Markdown."""
    a, b = version(old).source().splitlines(), version(new).source().splitlines()
    diff = difflib.unified_diff(a, b, old, new, n=context, lineterm="")
    return Markdown("```diff\n" + "\n".join(list(diff)[2:]) + "\n```")


# ---- running and checking -----------------------------------------------------------------------
def run(v, A, B, C0, alpha: float = 1.0, beta: float = 0.0, **params) -> np.ndarray:
    """alpha * A @ B + beta * C0 by version v (a Version or its name), on copies: a new C."""
    fn = as_version(v).function(**params)
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
    v = as_version(v)
    rng = np.random.default_rng(seed)
    return verify.Report(v.label(**params), [check(v, s, rng, **params) for s in shapes], "cpu")


def operands(M: int, N: int, K: int, seed: int = 0):
    """Random A (M x K), B (K x N), C (M x N) in [-1, 1), float32, the same for a given seed."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32),
            rng.uniform(-1, 1, (M, N)).astype(np.float32))

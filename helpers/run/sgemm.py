"""The course's one-call SGEMM: alpha A B + beta C on the current backend, a kernel chosen per shape.

    from helpers import sgemm
    C = sgemm(A, B)                          # NumPy in, NumPy out; CuPy in (on a GPU), CuPy out
    C = sgemm(A, B, C0, alpha=2.0, beta=0.5)
    C = sgemm(A, B, precision="tf32")        # the tensor cores, inputs rounded to TF32 (about 3 decimal digits)

The shape decides the kernel: in FP32 helpers.run.dispatch (a measured table of this GPU, else the wave model;
where N or K is not a multiple of 4 the operands may be copied into ones padded with zeros, so that the kernel's
interior runs its 16-byte loads); in TF32 helpers.run.dispatch_tf32 (on Hopper stage 12's kernel, with stream-K
where few tiles or a part-empty last wave would leave SMs idle). Nothing given is modified: C is read
(beta != 0), never written; beta = 0 does not read it (BLAS). A, B and C may be views of the same memory.

A repeated call is a lookup. The first call of a shape builds a plan (helpers/run/sgemm_plans.py: the choice,
the compiled kernels, their prepared launches) and keeps it for the process, keyed by the shape, the array
kind, beta != 0, the precision and the device; a later call checks its operands (types, shapes, scalars: a few
microseconds) and runs it: on a GPU the launches are enqueued on CuPy's current stream, asynchronously, with the
output (and a split's workspace) from CuPy's memory pool. Threads may call it at once. A plan is rebuilt when a
file it came from changes (the kernel, its headers, the dispatch tables): a call stats them when RECHECK_SECONDS
have passed since the plan's last look (a stat costs microseconds, as much as the rest of the call).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from helpers.core.errors import InputError, KernelArgumentError
from helpers.run import backend, dispatch, dispatch_tf32, gemm, sgemm_plans
from helpers.run.sgemm_plans import Plan

PRECISIONS = ("fp32", "tf32")
FLOAT32_MAX = gemm.FLOAT32_MAX
MAX_PLANS = 4096   # plans kept per process; the oldest goes first beyond that
RECHECK_SECONDS = 0.5   # a plan's files are stat'ed again when it is used this long after its last look


def _kind(x, name: str) -> str:
    """'numpy' or 'cupy', for a float32 2-D array; a clear error for anything else."""
    if type(x) is np.ndarray:
        module = "numpy"
    else:
        if isinstance(x, np.ma.MaskedArray):
            raise KernelArgumentError(f"{name} is a NumPy masked array; sgemm multiplies every element and would "
                                      f"ignore its mask. Fix: {name}.filled(0) to count masked elements as 0, or "
                                      f"{name}.data to use the values under the mask.")
        module = type(x).__module__.split(".")[0]
        if module not in ("numpy", "cupy") or not hasattr(x, "ndim"):
            raise KernelArgumentError(f"{name} must be a NumPy or CuPy array, got {type(x).__name__}. "
                                      f"Fix: numpy.asarray({name}, dtype=numpy.float32).")
    if x.dtype != np.float32:
        note = " (float32 keeps about 7 of float64's 16 digits)" if x.dtype == np.float64 else ""
        raise KernelArgumentError(f"{name} is {x.dtype}; sgemm computes in float32. Fix: "
                                  f"{name}.astype(numpy.float32){note}.")
    if x.ndim != 2:
        raise KernelArgumentError(f"{name} must be a 2-D matrix, got shape {tuple(x.shape)}.")
    return module


def _scalar_ok(v) -> bool:
    """The common case of check_scalars, quickly: a float or int that float32 holds (NaN fails the comparison)."""
    return (type(v) is float or type(v) is int) and -FLOAT32_MAX <= v <= FLOAT32_MAX


def _check(A, B, C, alpha, beta, precision) -> tuple[int, int, int, str]:
    """M, N, K and the arrays' kind, once every operand and scalar is right; else the error naming it."""
    kind = _kind(A, "A")
    if _kind(B, "B") != kind or (C is not None and _kind(C, "C") != kind):
        raise KernelArgumentError("A, B and C must all be NumPy arrays or all CuPy arrays. Fix: cupy.asarray(x) "
                                  "or cupy.asnumpy(x) for the odd one out.")
    if kind == "cupy" and backend.current().NAME != "gpu":
        raise KernelArgumentError("CuPy arrays were given, but the CPU emulator runs the kernels. Fix: NumPy "
                                  "arrays, or unset TBT_BACKEND on a machine with a GPU.")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise KernelArgumentError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows.")
    if C is not None and C.shape != (M, N):
        raise KernelArgumentError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    if not (_scalar_ok(alpha) and _scalar_ok(beta)):
        gemm.check_scalars(alpha=alpha, beta=beta)
    if beta != 0 and C is None:
        raise KernelArgumentError(f"beta = {beta} adds beta * C, but no C was given. Fix: sgemm(A, B, C, "
                                  f"beta={beta}), or beta = 0.")
    if precision not in PRECISIONS:
        raise InputError(f"precision = {precision!r}: sgemm computes in 'fp32' (the default) or 'tf32' (tensor "
                         f"cores, inputs rounded to 10 mantissa bits).")
    return M, N, K, kind


def sgemm(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, precision: str = "fp32", choice=None, out=None):
    """alpha A B + beta C as a new array of A's kind (NumPy or CuPy), computed in `precision` ("fp32", or "tf32":
    the tensor cores, as cuBLAS's TF32 mode) by the kernel the dispatcher chooses for this shape (or `choice`,
    a dispatch.Choice or dispatch_tf32.Tf32Choice). C is needed only with beta != 0, and is not modified unless
    it is `out`. out: an M x N C-contiguous float32 array of the same kind to write the result into instead of
    a new one (no allocation); it may be C itself (in place, as BLAS's gemm), and must not overlap A or B."""
    M, N, K, kind = _check(A, B, C, alpha, beta, precision)
    if out is not None:
        _check_out(out, A, B, C, M, N, kind)
    if M == 0 or N == 0 or K == 0:
        result = _empty_product(A, B, C, beta, kind)
        if out is None:
            return result
        out[...] = result
        return out
    p = plan(M, N, K, beta_nonzero=beta != 0, precision=precision, kind=kind, choice=choice)
    return p.run(A, B, C if beta != 0 else None, alpha, beta, out=out)


def _check_out(out, A, B, C, M: int, N: int, kind: str) -> None:
    """out: an M x N C-contiguous float32 array of the operands' kind, apart from A and B, and C itself or apart."""
    if _kind(out, "out") != kind:
        raise KernelArgumentError("out must be an array of the same kind as A and B (NumPy or CuPy).")
    if out.shape != (M, N) or not out.flags.c_contiguous:
        raise KernelArgumentError(f"out must be a C-contiguous {M}x{N} array (rows of A x columns of B), got a "
                                  f"{'x'.join(map(str, out.shape))} {'' if out.flags.c_contiguous else 'strided '}"
                                  f"one. Fix: out=numpy.empty(({M}, {N}), numpy.float32) (cupy.empty on a GPU).")
    may_share = np.may_share_memory if kind == "numpy" else backend.current().xp.may_share_memory
    for x, name in ((A, "A"), (B, "B")) + (((C, "C"),) if C is not None and C is not out else ()):
        if may_share(out, x):
            raise KernelArgumentError(f"out overlaps {name} in memory: the kernels read {name} while they write out. "
                                      f"Fix: a separate array for out (out may be C itself, for an update in place).")


def plan(M: int, N: int, K: int, beta_nonzero: bool = False, precision: str = "fp32", kind: str = "numpy",
         choice=None, variant_name: str | None = None) -> Plan:
    """The plan of an M x N x K product (sgemm_plans.Plan: `plan(...).run(A, B, C, alpha, beta)`), built at the
    first call for its key and kept while its files are unchanged. choice: the kernel to run instead of the
    dispatcher's; variant_name: that kernel with the choice's configuration (the dispatch table's calibration)."""
    key = (_where(), kind, M, N, K, bool(beta_nonzero), precision, choice, variant_name)
    found = _plans.get(key)
    if found is not None:
        now = time.monotonic()
        if now - found.looked[0] < RECHECK_SECONDS:
            return found
        if found.fresh():
            found.looked[0] = now
            return found
    with _building:   # one build at a time: a second thread asking for the same plan waits and finds it
        found = _plans.get(key)
        if found is not None and found.fresh():
            return found
        found = _build(M, N, K, bool(beta_nonzero), precision, kind, choice, variant_name)
        if len(_plans) >= MAX_PLANS:
            _plans.pop(next(iter(_plans)))
        _plans[key] = found
    return found


def _where() -> tuple:
    """The backend and what its plans depend on: the device (GPU) or the architecture it stands for (emulator)."""
    bk = backend.current()
    return (bk.NAME, bk.current_device()) if bk.NAME == "gpu" else (bk.NAME, backend.arch())


def _build(M, N, K, beta_nonzero, precision, kind, choice, variant_name) -> Plan:
    if precision not in PRECISIONS:
        raise InputError(f"precision = {precision!r}: 'fp32' or 'tf32'.")
    M, N, K = gemm.check_sizes(M, N, K)
    deps = ()
    if choice is None:
        table = dispatch.current_table()
        deps = table.deps
        choose = dispatch.choose if precision == "fp32" else dispatch_tf32.choose
        choice = choose(M, N, K, table, beta_nonzero=beta_nonzero)
    return sgemm_plans.build(M, N, K, beta_nonzero, precision, kind, choice, deps, variant_name)


def forget_plans() -> None:
    """Drops every kept plan (the next call of each shape builds it again)."""
    with _building:
        _plans.clear()


def _empty_product(A, B, C, beta, kind):
    """A product with a side of 0, as NumPy gives it: an empty M x N result, or with K = 0 zeros (plus beta C);
    no kernel runs. The operands were checked as for any other product."""
    M, N = A.shape[0], B.shape[1]
    xp = backend.current().xp if kind == "cupy" else np
    out = xp.zeros((M, N), np.float32)
    if beta != 0:
        out += np.float32(beta) * C
    return out


_plans: dict[tuple, Plan] = {}
_building = threading.Lock()

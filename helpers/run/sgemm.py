"""The course's one-call SGEMM: alpha A B + beta C on the current backend, a kernel chosen per shape.

    from helpers import sgemm
    C = sgemm(A, B)                          # NumPy in, NumPy out; CuPy in (on a GPU), CuPy out
    C = sgemm(A, B, C0, alpha=2.0, beta=0.5)

The shape decides the kernel (helpers.run.dispatch: a measured table of this GPU, else the wave model).
Where N or K is not a multiple of 4, the operands are first copied into ones padded with zeros to the
next multiple, so that the kernel's interior runs its 16-byte loads (a copy of A and B costs far less
than reading every element 4 bytes at a time, checked); the result is cut back to M x N.
Nothing given is modified: C0 is read (beta != 0), never written; beta = 0 does not read it (BLAS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.core import stages
from helpers.core.errors import KernelArgumentError
from helpers.run import backend, dispatch, gemm


def _kind(x, name: str) -> str:
    """'numpy' or 'cupy', for a float32 2-D array; a clear error for anything else."""
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


def _round4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass
class Plan:
    """One product laid out on the device: the padded operands, the output and the launches. `run()`
    computes it with every launch checked; `timed()` gives a GPU call that only enqueues the copies and the
    launches, for timing the dispatcher as a library call would run."""
    choice: dispatch.Choice
    M: int
    N: int
    K: int
    _fill: list
    _launches: list
    _out: object
    _kind: str

    def _copy_in(self) -> None:
        for target, source in self._fill:
            target[:source.shape[0], :source.shape[1]] = source

    def run(self):
        """alpha A B + beta C, as an array of the inputs' kind."""
        self._copy_in()
        for launch in self._launches:
            launch()
        out = self._out if self._out.shape[1] == self.N else backend.current().xp.ascontiguousarray(
            self._out[:, :self.N])
        return backend.current().to_host(out) if self._kind == "numpy" else out

    def poison(self) -> None:
        """Fills the output with NaN: an element the launches never write keeps it, and fails a check."""
        self._out.fill(np.nan)

    def timed(self):
        """The whole call as the GPU runs it: the copies into padded operands, the launches, and, where N was
        padded, the copy of the result out of the padded C (into an array made once, here)."""
        calls = [launch.timed() for launch in self._launches]
        xp = backend.current().xp
        result = xp.empty((self.M, self.N), np.float32) if self._out.shape[1] != self.N else None

        def call():
            self._copy_in()
            for c in calls:
                c()
            if result is not None:
                result[...] = self._out[:, :self.N]
        return call


def plan(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, choice: dispatch.Choice | None = None,
         variant_name: str | None = None) -> Plan:
    """Checks the operands and lays the product out on the device (see Plan). variant_name: run that
    kernel with choice.config instead of the choice's own (the table's calibration of 11_split_k)."""
    kinds = {_kind(x, n) for x, n in ((A, "A"), (B, "B"), (C, "C")) if x is not None}
    if len(kinds) > 1:
        raise KernelArgumentError("A, B and C must all be NumPy arrays or all CuPy arrays. Fix: cupy.asarray(x) "
                                  "or cupy.asnumpy(x) for the odd one out.")
    if kinds == {"cupy"} and backend.name() != "gpu":
        raise KernelArgumentError("CuPy arrays were given, but the CPU emulator runs the kernels. Fix: NumPy "
                                  "arrays, or unset TBT_BACKEND on a machine with a GPU.")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise KernelArgumentError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows.")
    if beta != 0 and C is None:
        raise KernelArgumentError(f"beta = {beta} adds beta * C, but no C was given. Fix: sgemm(A, B, C, "
                                  f"beta={beta}), or beta = 0.")
    if C is not None and tuple(C.shape) != (M, N):
        raise KernelArgumentError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    gemm.check_sizes(M, N, K)
    choice = choice or dispatch.choose(M, N, K, beta_nonzero=beta != 0)
    Np, Kp = (_round4(N), _round4(K)) if choice.pad else (N, K)
    gemm.check_problem(M, Np, Kp, 0 if kinds == {"cupy"} else 4 * (M * K + K * N + 2 * M * N), "sgemm",
                       on_device=gemm.device_bytes(M, Np, Kp) + 4 * (choice.kernel_config.workspace_floats(M, Np) or 0),
                       alpha=alpha, beta=beta)
    xp = backend.current().xp
    fill = []

    def operand(x, rows: int, cols: int):
        """x on the device as a C-contiguous float32 array of rows x cols: x itself where it already is one,
        else a padded array that Plan fills from x (zeros past x's own rows and columns)."""
        x = xp.asarray(x)
        if (rows, cols) == tuple(x.shape):
            return xp.ascontiguousarray(x)
        fill.append((xp.zeros((rows, cols), np.float32), x))
        return fill[-1][0]

    dA, dB = operand(A, M, Kp), operand(B, Kp, Np)
    if beta != 0:  # the kernel writes its output: a copy of C, never C itself
        dC = xp.empty((M, Np), np.float32)
        fill.append((dC, xp.asarray(C)))
    else:
        dC = xp.empty((M, Np), np.float32)
    name, config = (variant_name, choice.config) if variant_name else (choice.variant, choice.kernel_config)
    launches = gemm.launches(stages.variant(name), config, M, Np, Kp, alpha, dA, dB, beta, dC)
    return Plan(choice, M, N, K, fill, launches, dC, kinds.pop())


def sgemm(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, choice: dispatch.Choice | None = None):
    """alpha A B + beta C as a new array of A's kind (NumPy or CuPy), computed by the kernel the dispatcher
    chooses for this shape (or `choice`). C is needed only with beta != 0, and is not modified."""
    if 0 in (*getattr(A, "shape", (1,)), *getattr(B, "shape", (1,))) and getattr(A, "ndim", 0) == getattr(B, "ndim", 0) == 2:
        return _empty_product(A, B, C, alpha, beta)
    return plan(A, B, C, alpha, beta, choice).run()


def _empty_product(A, B, C, alpha, beta):
    """A product with a side of 0, as NumPy gives it: an empty M x N result, or with K = 0 zeros (plus beta C);
    no kernel runs. The operands are checked as for any other product."""
    kinds = {_kind(x, n) for x, n in ((A, "A"), (B, "B"), (C, "C")) if x is not None}
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise KernelArgumentError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows.")
    if C is not None and tuple(C.shape) != (M, N):
        raise KernelArgumentError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    gemm.check_scalars(alpha=alpha, beta=beta)
    if kinds == {"cupy"} and backend.name() != "gpu":
        raise KernelArgumentError("CuPy arrays were given, but the CPU emulator runs the kernels. Fix: NumPy "
                                  "arrays, or unset TBT_BACKEND on a machine with a GPU.")
    xp = backend.current().xp if kinds == {"cupy"} else np
    out = xp.zeros((M, N), np.float32)
    if beta != 0 and C is not None:
        out += np.float32(beta) * C
    return out

"""Running a registered SGEMM kernel on host arrays: C = alpha * A @ B + beta * C."""

from __future__ import annotations

import numpy as np

from helpers.run import backend
from helpers.core.errors import KernelArgumentError, UnsupportedFeatureError
from helpers.run.kernel_loader import Kernel, load_kernel
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant

INT32_MAX = 2**31 - 1


def check_operands(A, B, C=None) -> tuple[int, int, int]:
    """M, N, K of A (M x K), B (K x N) and C (M x N); a clear error for anything else."""
    for name, x in (("A", A), ("B", B)) + ((("C", C),) if C is not None else ()):
        if not isinstance(x, np.ndarray):
            raise KernelArgumentError(f"{name} must be a NumPy array, got {type(x).__name__}.")
        if x.dtype != np.float32:
            raise KernelArgumentError(f"{name} is {x.dtype}; SGEMM kernels take float32. "
                                      f"Fix: {name}.astype(np.float32).")
        if x.ndim != 2:
            raise KernelArgumentError(f"{name} must be a 2-D matrix, got shape {x.shape}.")
        if not x.flags.c_contiguous:
            raise KernelArgumentError(f"{name} is not C-contiguous (a transposed or strided view); the "
                                      f"kernels read row-major storage. Fix: np.ascontiguousarray({name}).")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise KernelArgumentError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows.")
    if C is not None and C.shape != (M, N):
        raise KernelArgumentError(f"C must be {M}x{N} (rows of A x columns of B), got {C.shape[0]}x{C.shape[1]}.")
    if min(M, N, K) < 1:
        raise KernelArgumentError(f"M, N and K must be at least 1, got M={M}, N={N}, K={K}.")
    if max(M * K, K * N, M * N) > INT32_MAX:
        raise KernelArgumentError("the kernels index with 32-bit ints; keep each matrix under 2**31 elements.")
    return M, N, K


def kernel_for(variant: Variant, config: KernelConfig) -> Kernel:
    """The compiled kernel; the file is read at every call and compiled again only when its
    text changed, so an edit to kernels/ takes effect without restarting Python. A kernel this
    GPU cannot run (Variant.gpu_arch) is refused with the reason, before NVRTC is asked."""
    if backend.name() == "gpu":
        reason = variant.unsupported_on(backend.current().device_info().compute_capability)
        if reason:
            raise UnsupportedFeatureError(reason)
    return load_kernel(variant.path, variant.name_expression(config))


def launch_args(M, N, K, alpha, A, B, beta, C) -> tuple:
    """The course signature: (int M, int N, int K, float alpha, const float* A, const float* B,
    float beta, float* C), with typed scalars."""
    return (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B, np.float32(beta), C)


def run(variant: Variant, A, B, C=None, alpha: float = 1.0, beta: float = 0.0,
        config: KernelConfig | None = None) -> np.ndarray:
    """Runs `variant` on the current backend and returns the new C as a NumPy array.
    A, B and C stay untouched; C=None starts from zeros."""
    config = config or variant.default
    M, N, K = check_operands(A, B, C)
    config.check_shape(M, N, K)
    bk = backend.current()
    kernel = kernel_for(variant, config)
    dA, dB = bk.to_device(A), bk.to_device(B)
    dC = bk.to_device(C if C is not None else np.zeros((M, N), np.float32))
    kernel(config.grid(M, N), config.block(), launch_args(M, N, K, alpha, dA, dB, beta, dC),
           shared_mem=config.shared_bytes())
    return bk.to_host(dC)

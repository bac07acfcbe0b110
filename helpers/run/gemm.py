"""Running a registered SGEMM kernel on host arrays: C = alpha * A @ B + beta * C."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from helpers.run import backend, tensor_maps
from helpers.core.device import host_memory_available
from helpers.core.errors import InputError, KernelArgumentError, UnsupportedFeatureError
from helpers.run.kernel_loader import Kernel, load_kernel
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant

INT32_MAX = 2**31 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)


# ---- inputs, checked before anything compiles or allocates (the CLI calls these too) ------------------
def _scaled(dims: tuple[int, ...], factor: float) -> str:
    return ", ".join(str(max(1, int(d * factor))) for d in dims)


def check_sizes(M, N, K) -> tuple[int, int, int]:
    """M, N and K as ints: whole numbers from 1 up, each matrix within the kernels' 32-bit int indices."""
    return check_problem(M, N, K, host_bytes=None)


def check_problem(M, N, K, host_bytes: int | None = 0, what: str = "this run", on_device: int | None = None,
                  **scalars) -> tuple[int, int, int]:
    """Everything about a run's inputs, before anything compiles or allocates: M, N and K whole numbers
    from 1 up, each matrix within 32-bit int indexing; the scalars (alpha=..., beta=...) finite in
    float32; and, unless host_bytes is None, `host_bytes` of this machine's memory and `on_device`
    bytes (default device_bytes()) of the device's free (_memory_needs). Returns (M, N, K) as ints."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InputError(f"{name} must be a whole number, got {v!r}.")
    M, N, K = int(M), int(N), int(K)
    if min(M, N, K) < 1:
        raise InputError(f"M, N and K must be at least 1, got M={M}, N={N}, K={K}: a matrix with a side of "
                         f"{min(M, N, K)} holds nothing to multiply. Fix: sizes from 1 up, e.g. M, N, K = 64, 64, 64.")
    check_scalars(**scalars)
    problems, factor = [], 1.0
    name, rows, cols = max((("A", M, K), ("B", K, N), ("C", M, N)), key=lambda m: m[1] * m[2])
    if rows * cols > INT32_MAX:
        problems.append(f"{name} would be {rows} x {cols} = {rows * cols:,} elements, more than the {INT32_MAX:,} "
                        f"a 32-bit int can index (the kernels index with int)")
        factor = math.sqrt(INT32_MAX / (rows * cols))
    on_device = device_bytes(M, N, K) if on_device is None else on_device
    for where, need, free in ([] if host_bytes is None else _memory_needs(host_bytes, on_device)):
        if free is not None and need > free:
            problems.append(f"{what} needs about {_gib(need)} of {where}, which has {_gib(free)} free")
            factor = min(factor, math.sqrt(0.8 * free / need))   # every term grows as a product of two sizes
    if problems:
        raise InputError(f"M, N, K = {M}, {N}, {K}: " + "; and ".join(problems) +
                         f". Fix: a smaller problem, e.g. M, N, K = {_scaled((M, N, K), factor)}.")
    return M, N, K


def check_scalars(**scalars) -> None:
    """alpha, beta, ...: finite real numbers that float32 holds (the kernels take them as float)."""
    for name, v in scalars.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"{name} must be a real number, got {v!r}.")
        if math.isnan(v):
            raise InputError(f"{name} is NaN: every element of C = alpha A B + beta C would be NaN, and NaN equals "
                             f"nothing, so no result could be verified. Fix: a finite number, e.g. {name} = 1.5.")
        if abs(v) > FLOAT32_MAX:
            raise InputError(f"{name} is {v:g}, which float32 (the kernels' float) holds only as infinity: C would be "
                             f"infinite or NaN. Fix: a number between -{FLOAT32_MAX:.3g} and {FLOAT32_MAX:.3g}.")


def device_bytes(M: int, N: int, K: int) -> int:
    """What one launch holds on the device: A, B and C in float32."""
    return 4 * (M * K + K * N + M * N)


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _memory_needs(host_bytes: int, on_device: int) -> list[tuple[str, int, int | None]]:
    """(where, bytes needed, bytes free): `host_bytes` of this machine's memory, and `on_device` of
    the GPU's (on the CPU emulator: of this machine's, twice, the copy and the shared memory it
    launches with)."""
    if backend.name() != "gpu":
        return [("this machine's memory", host_bytes + 2 * on_device, host_memory_available())]
    return [("this machine's memory", host_bytes, host_memory_available()),
            ("the GPU's memory", on_device, backend.current().xp.cuda.runtime.memGetInfo()[0])]


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
    return check_sizes(M, N, K)


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


def kernel_args(config: KernelConfig, M: int, N: int, K: int, alpha, A, B, beta, C, bk=None,
                maps_made: bool = False) -> tuple:
    """The arguments of config's kernel on backend bk (default: the current one): the course signature, and for
    a kernel with a workspace (config.workspace_floats(M, N, SMs) not None) a fresh one after C, and for one that
    stores C through a tensor map (config.output_map) that map after C. For a kernel that takes tensor maps, A and
    B must have rows 16-byte aligned (K, N multiples of 4): launches() pads others; maps_made: A and B are such
    maps already. C must be one a map can describe where config stores through one: launch_config() says which
    configuration to launch."""
    bk = bk or backend.current()
    if config.TENSOR_MAPS and not maps_made:  # stage 12: TMA tensor maps of A and B in place of their pointers
        A, B, _ = tensor_maps.operand_maps(config, M, N, K, A, B, bk)
    args = launch_args(M, N, K, alpha, A, B, beta, C)
    out_map = tensor_maps.output_map(config, M, N, C, bk)
    if out_map is not None:  # 12 with EPILOGUE = 1: the map of C its TMA stores write through, after C
        args = (*args, out_map)
    floats = config.workspace_floats(M, N, _sm_count(bk))
    if floats is None:
        return args
    return (*args, bk.xp.empty(max(1, floats), dtype=np.float32))


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a product: the kernel, its geometry and its arguments."""
    kernel: Kernel
    grid: tuple
    block: tuple
    args: tuple
    shared_mem: int
    keep: tuple = ()  # arrays the arguments refer to without holding them (tensor maps' copies)

    def __call__(self) -> float:
        return self.kernel(self.grid, self.block, self.args, shared_mem=self.shared_mem)

    def timed(self):
        """The launch as a GPU call that only enqueues it (Kernel.timed_launcher)."""
        return self.kernel.timed_launcher(self.grid, self.block, self.args, shared_mem=self.shared_mem)


def launch_config(config: KernelConfig, N: int, C, bk=None) -> KernelConfig:
    """The configuration to launch for this C: config, or where its kernel would store C through a tensor map and
    none can describe this C (rows or start not 16-byte aligned), the same kernel with the register epilogue
    (WarpSpecializedConfig.for_output). The host decides it; the result is the same."""
    for_output = getattr(config, "for_output", None)
    return config if for_output is None else for_output(N, (bk or backend.current()).address(C))


def _sm_count(bk) -> int:
    """The SMs a persistent grid is sized for on backend bk: the GPU's, or on the emulator EMULATED_SMS."""
    return bk.device_info().sm_count if bk.NAME == "gpu" else backend.EMULATED_SMS


def launches(variant: Variant, config: KernelConfig, M: int, N: int, K: int, alpha, A, B, beta, C) -> list[Launch]:
    """The launches that compute C = alpha A B + beta C on device arrays of the current backend: one for a
    kernel of the course's signature; for one with a workspace (config.workspace_floats: split-K, stream-K), the
    kernel with a fresh workspace after C and, where the workspace is used, the kernel that finishes C
    (config.finish)."""
    keep = ()
    sms = backend.sm_count()
    config = launch_config(config, N, C)
    if config.TENSOR_MAPS:  # the maps read A and B, or padded copies of them, kept alive with the launch
        mapA, mapB, keep = tensor_maps.operand_maps(config, M, N, K, A, B)
        args = kernel_args(config, M, N, K, alpha, mapA, mapB, beta, C, maps_made=True)
    else:
        args = kernel_args(config, M, N, K, alpha, A, B, beta, C)
    grid = config.launch_grid(M, N, sms)
    out = [Launch(kernel_for(variant, config), grid, config.block(), args, config.shared_bytes(), keep)]
    if config.workspace_floats(M, N, sms):
        name, fgrid, fblock, ints = config.finish(M, N, K, sms)
        out.append(Launch(load_kernel(variant.path, name), fgrid, fblock,
                          (*(np.int32(i) for i in ints), np.float32(alpha), args[-1], np.float32(beta), C), 0))
    return out


def run(variant: Variant, A, B, C=None, alpha: float = 1.0, beta: float = 0.0,
        config: KernelConfig | None = None) -> np.ndarray:
    """Runs `variant` on the current backend and returns the new C as a NumPy array.
    A, B and C stay untouched; C=None starts from zeros. config=None: the variant's default for
    this GPU's architecture (backend.arch(); on the emulator TBT_ARCH, else sm_90)."""
    config = config or variant.default_for(backend.arch())
    M, N, K = check_operands(A, B, C)
    check_problem(M, N, K, 0, f"running {variant.name}", alpha=alpha, beta=beta,
                  on_device=device_bytes(M, N, K) + 4 * (config.workspace_floats(M, N, backend.sm_count()) or 0))
    config.check_shape(M, N, K)
    bk = backend.current()
    dA, dB = bk.to_device(A), bk.to_device(B)
    dC = bk.to_device(C if C is not None else np.zeros((M, N), np.float32))
    for launch in launches(variant, config, M, N, K, alpha, dA, dB, beta, dC):
        launch()
    return bk.to_host(dC)

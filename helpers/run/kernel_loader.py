"""Compile and launch a kernel from kernels/*.cu through one call, on either backend.

    k = load_kernel("kernels/03_smem_tiling.cu", "sgemm_smem_tiling<32>")
    k(grid, block, (np.int32(M), ..., A, B, np.float32(beta), C))

Templates are instantiated by name expression, as NVRTC does. Scalars must be typed NumPy
scalars (np.int32, np.float32): CuPy would pass a Python int as a 64-bit integer. Arrays must
be C-contiguous arrays of the backend (NumPy on the CPU, CuPy on the GPU).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from helpers.run import backend
from helpers.core.errors import KernelArgumentError, LaunchConfigError
from helpers.core.kernel_source import KernelSource

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)


def launch_dims(value, what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise LaunchConfigError(f"{what} must be 1 to 3 whole numbers, like (16, 16) or (16, 16, 1); got {value!r}.")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise LaunchConfigError(f"{what} {dims} has a dimension below 1; every dimension must be at least 1.")
    return dims


def check_launch(grid, block, shared_mem: int, static_shared: int, max_shared: int, where: str = ""):
    grid, block = launch_dims(grid, "grid"), launch_dims(block, "block")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise LaunchConfigError(f"block {block} has {threads} threads; a CUDA block holds at most "
                                f"{MAX_THREADS_PER_BLOCK}. Fix: a smaller block, more blocks in the grid.")
    for axis, (d, limit) in enumerate(zip(block, MAX_BLOCK)):
        if d > limit:
            raise LaunchConfigError(f"block dimension {'xyz'[axis]} is {d}; CUDA allows at most {limit}.")
    for axis, (d, limit) in enumerate(zip(grid, MAX_GRID)):
        if d > limit:
            raise LaunchConfigError(f"grid dimension {'xyz'[axis]} is {d}; CUDA allows at most {limit}.")
    if not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
        raise LaunchConfigError(f"shared_mem must be a number of bytes >= 0, got {shared_mem!r}.")
    if static_shared + shared_mem > max_shared:
        raise LaunchConfigError(
            f"the block needs {static_shared} bytes of static and {shared_mem} bytes of dynamic shared "
            f"memory, more than the {max_shared} bytes a block may have{' on ' + where if where else ''}. "
            f"Fix: smaller tiles.")
    return grid, block


def check_args(args, bk, names: list[str]) -> tuple:
    args = tuple(args)
    for i, a in enumerate(args):
        what = f"argument {i}" + (f" ({names[i]})" if i < len(names) else "")
        if isinstance(a, (bool, int, float)) and not isinstance(a, np.generic):
            kind = "np.int32" if isinstance(a, int) else "np.float32"
            raise KernelArgumentError(
                f"{what} is a plain Python {type(a).__name__}; pass it typed, as {kind}(value). CuPy "
                f"passes a Python int as a 64-bit integer, so an `int` parameter would read garbage.")
        if isinstance(a, np.generic) or getattr(a, "is_tensor_map", False):  # a GPU's map is a np.void
            continue
        bk.check_array(a, what)
        if not a.flags.c_contiguous:
            raise KernelArgumentError(f"{what} is not C-contiguous (a transposed or strided view); kernels "
                                      f"index it as a dense row-major array. Fix: pass ascontiguousarray(x).")
    return args


@dataclass
class Kernel:
    """One kernel instantiation, compiled for the current backend."""
    source: KernelSource
    name_expression: str
    _compiled: object
    _backend: object

    def __call__(self, grid, block, args, shared_mem: int = 0) -> float:
        """Launches and waits for the kernel. Returns the emulator's run time in seconds (0 on GPU)."""
        bk = self._backend
        static = bk.static_shared_bytes(self._compiled, self.name_expression)
        grid, block = check_launch(grid, block, shared_mem, static, *backend.max_shared_per_block())
        args = check_args(args, bk, self.source.parameter_names(self.name_expression))
        return bk.launch(self._compiled, self.name_expression, grid, block, args, int(shared_mem))

    def launcher(self, grid, block, shared_mem: int = 0):
        """This kernel's launch at one geometry, checked once, now: the returned call takes the arguments (typed
        as for __call__, not checked again) and launches on the current stream, asynchronously on a GPU (the
        emulator runs it at once). For callers that build the arguments themselves, such as helpers.sgemm."""
        bk = self._backend
        static = bk.static_shared_bytes(self._compiled, self.name_expression)
        grid, block = check_launch(grid, block, shared_mem, static, *backend.max_shared_per_block())
        return bk.launcher(self._compiled, self.name_expression, grid, block, int(shared_mem))

    def timed_launcher(self, grid, block, args, shared_mem: int = 0):
        """A GPU launch of this kernel with everything checked once, now: the returned call only
        enqueues the kernel, without the checks or a synchronization, so that a timer around it
        measures the kernel and not the Python around it (the checks cost about 0.3 ms a call)."""
        bk = self._backend
        if not hasattr(bk, "enqueue"):
            raise RuntimeError("timed_launcher times GPU kernels; the emulator's launch returns its own time")
        static = bk.static_shared_bytes(self._compiled, self.name_expression)
        grid, block = check_launch(grid, block, shared_mem, static, *backend.max_shared_per_block())
        args = check_args(args, bk, self.source.parameter_names(self.name_expression))
        return bk.enqueue(self._compiled, self.name_expression, grid, block, args, int(shared_mem))


def load_kernel(path, name_expression: str) -> Kernel:
    """Compiles `name_expression` (a kernel name, or a template instantiation such as
    'sgemm<128, 128, 8>') from the .cu file at `path` for the current backend."""
    source = KernelSource.read(path)
    source.require_kernel(name_expression)
    bk = backend.current()
    headers = tuple(source.local_headers().values())
    kind = bk.build_kind() if hasattr(bk, "build_kind") else ""   # the emulator's optimized or quick build
    return Kernel(source, name_expression, _compile(bk.NAME, kind, source, (name_expression,), headers), bk)


@functools.lru_cache(maxsize=256)
def _compile(backend_name: str, kind: str, source: KernelSource, name_expressions: tuple[str, ...],
             headers: tuple[str, ...]):
    """Cached on the file's text and the text of the headers beside it that it includes (an edit
    to either compiles again), and on the kind of build."""
    return backend.current().compile(source, name_expressions)


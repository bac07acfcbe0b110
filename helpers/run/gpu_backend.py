"""The GPU backend: NVRTC compiles the kernel files through CuPy, arrays are CuPy arrays.

A device's facts (properties and attributes) are read once per device and process; a prepared launch
(`launcher`) sets a kernel's attributes once and then only enqueues it on CuPy's current stream.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from helpers.core.device import DeviceInfo, fp32_lanes_per_sm
from helpers.core.errors import KernelArgumentError, KernelCompileError, KernelCrashError, LaunchConfigError
from helpers.core.kernel_source import KernelSource
from helpers.run.toolchain import NVRTC_OPTIONS, cuda_include_options

NAME = "gpu"
xp = cp

# cudaDeviceAttr values (stable across CUDA versions)
_ATTR = {"clock_khz": 13, "sm_count": 16, "mem_clock_khz": 36, "bus_bits": 37, "l2_bytes": 38,
         "major": 75, "minor": 76, "smem_per_sm": 81, "regs_per_sm": 82, "smem_optin": 97}


def current_device() -> int:
    """The id of CuPy's current device (of this thread)."""
    return cp.cuda.runtime.getDevice()


@functools.lru_cache(maxsize=None)
def _attr(name: str, device: int = 0) -> int:
    return cp.cuda.runtime.deviceGetAttribute(_ATTR[name], device)


def _version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def device_info() -> DeviceInfo:
    """The current device's facts, read once per device."""
    return _device_info(current_device())


@functools.lru_cache(maxsize=None)
def _device_info(device: int) -> DeviceInfo:
    props = cp.cuda.runtime.getDeviceProperties(device)
    major, minor = _attr("major", device), _attr("minor", device)
    return DeviceInfo(
        backend=NAME,
        name=props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        compute_capability=f"{major}.{minor}",
        sm_count=_attr("sm_count", device),
        clock_ghz=_attr("clock_khz", device) / 1e6,
        fp32_lanes_per_sm=fp32_lanes_per_sm(major, minor),
        memory_bandwidth_tbs=2 * _attr("mem_clock_khz", device) * 1e3 * _attr("bus_bits", device) / 8 / 1e12,
        memory_gib=props["totalGlobalMem"] / 2**30,
        l2_mib=_attr("l2_bytes", device) / 2**20,
        shared_per_block_kib=_attr("smem_optin", device) / 1024,
        shared_per_sm_kib=_attr("smem_per_sm", device) / 1024,
        registers_per_sm=_attr("regs_per_sm", device),
        driver=_version(cp.cuda.runtime.driverGetVersion()),
        runtime=_version(cp.cuda.runtime.runtimeGetVersion()),
        cupy=cp.__version__,
    )


def banner() -> str:
    d = device_info()
    return (f"Backend: GPU, {d.name} (sm_{d.compute_capability.replace('.', '')}, {d.sm_count} SMs), "
            f"CUDA driver {d.driver}, CuPy {d.cupy}; kernels from kernels/*.cu compiled by NVRTC.")


_NVRTC_LOCATION = re.compile(r"(?m)^\S*?\.cu\((\d+)\)")


def _options(source: KernelSource) -> tuple[str, ...]:
    return (*NVRTC_OPTIONS, *(f"--include-path={d}" for d in source.include_dirs), *cuda_include_options())


def _compile_error(source: KernelSource, log: str) -> KernelCompileError:
    log = _NVRTC_LOCATION.sub(lambda m: f"{source.display_path}:{m.group(1)}", log)
    return KernelCompileError(f"{source.display_path} did not compile with NVRTC:\n{log}")


def compile(source: KernelSource, name_expressions: tuple[str, ...]):
    arch = source.required_arch()
    if arch is not None:
        return _compile_for(arch, source, name_expressions)
    code = source.text
    headers = source.local_headers()
    if headers:  # CuPy's compile cache keys on the code: make an edited header a new key
        digest = hashlib.sha256("\0".join(headers.values()).encode()).hexdigest()
        code += f"\n// headers included from beside the kernel: sha256 {digest}\n"
    try:
        module = cp.RawModule(code=code, options=_options(source), name_expressions=list(name_expressions))
        module.compile()
        return module
    except cp.cuda.compiler.CompileException as e:
        raise _compile_error(source, str(e)) from None


class _ArchModule:
    """A module compiled for an architecture-specific target, handing out its kernels by name
    expression as cupy.RawModule does."""

    def __init__(self, module, lowered: dict[str, str]):
        self._module, self._lowered = module, lowered

    def get_function(self, name_expression: str):
        return self._module.get_function(self._lowered[name_expression])


def _compile_for(arch: str, source: KernelSource, name_expressions: tuple[str, ...]) -> _ArchModule:
    """NVRTC for an architecture-specific target such as sm_90a (wgmma), which CuPy's RawModule
    cannot name (it compiles for sm_XY): the cubin is loaded through cupy.RawModule(path=...).
    Such code runs only on that very architecture."""
    from cupy_backends.cuda.libs import nvrtc
    here = "sm_" + device_info().compute_capability.replace(".", "")
    if arch.rstrip("a") != here:
        raise KernelCompileError(
            f"{source.display_path} uses instructions that exist only on {arch} GPUs (Hopper's wgmma: H100, "
            f"H200); this GPU is {here}. Fix: run it on the CPU emulator (TBT_BACKEND=cpu), or use a kernel "
            f"without them (10_tensor_cores runs on sm_80 and later).")
    prog = nvrtc.createProgram(source.text, source.path.name, [], [])
    try:
        for expr in name_expressions:
            nvrtc.addNameExpression(prog, expr)
        try:
            nvrtc.compileProgram(prog, [*_options(source), f"-arch={arch}"])
        except nvrtc.NVRTCError:
            raise _compile_error(source, nvrtc.getProgramLog(prog)) from None
        lowered = {expr: nvrtc.getLoweredName(prog, expr) for expr in name_expressions}
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    with tempfile.TemporaryDirectory(prefix="tbt_cubin_") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        module = cp.RawModule(path=str(path))
        for name in lowered.values():  # loads the module now, while the file exists
            module.get_function(name)
    return _ArchModule(module, lowered)


def _function(module, name_expression: str):
    return module.get_function(name_expression)


def static_shared_bytes(module, name_expression: str) -> int:
    return _function(module, name_expression).shared_size_bytes


def max_shared_per_block() -> int:
    return _attr("smem_optin", current_device())


_RECOVERY = ("The GPU context is now unusable: restart the Jupyter kernel (Kernel > Restart Kernel) "
             "and run the notebook again from the top. To find the faulty line, run the same kernel "
             "on the CPU emulator (TBT_BACKEND=cpu, or `python -m helpers check ... --backend cpu`): "
             "it names the thread, the array, the index and the source line.")


def enqueue(module, name_expression, grid, block, args, shared_mem: int):
    """A call that only enqueues the launch (no checks, no synchronization): for timing."""
    fn = _function(module, name_expression)
    if shared_mem > 48 * 1024:  # above 48 KiB a kernel must opt in
        fn.max_dynamic_shared_size_bytes = shared_mem
    grid, block, args = tuple(grid), tuple(block), tuple(args)
    return lambda: fn(grid, block, args, shared_mem=shared_mem)


def _launch_error(e, name_expression, grid, block, shared_mem):
    text = str(e)
    if "OUT_OF_RESOURCES" in text or "INVALID_VALUE" in text or "InvalidValue" in text:
        return LaunchConfigError(
            f"{name_expression}: the GPU refused the launch (grid {grid}, block {block}, "
            f"{shared_mem} bytes of dynamic shared memory): {text}. Fix: fewer threads per block or "
            f"less shared memory (registers x threads must fit the SM).")
    return KernelCrashError(f"{name_expression} failed on the GPU: {text}.\n{_RECOVERY}")


def launch(module, name_expression, grid, block, args, shared_mem: int) -> float:
    try:
        enqueue(module, name_expression, grid, block, args, shared_mem)()
        cp.cuda.get_current_stream().synchronize()
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as e:
        raise _launch_error(e, name_expression, grid, block, shared_mem) from None
    return 0.0


def launcher(module, name_expression, grid, block, shared_mem: int):
    """A call that takes the kernel's arguments and enqueues it on CuPy's current stream, asynchronously: the
    kernel's attributes are set once, here, and the launch is not waited for (a fault in the kernel surfaces at
    the next synchronization, as with any CUDA library)."""
    fn = _function(module, name_expression)
    if shared_mem > 48 * 1024:  # above 48 KiB a kernel must opt in
        fn.max_dynamic_shared_size_bytes = shared_mem
    grid, block = tuple(grid), tuple(block)
    errors = (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError)

    def launch_async(args) -> None:
        try:
            fn(grid, block, args, shared_mem=shared_mem)
        except errors as e:
            raise _launch_error(e, name_expression, grid, block, shared_mem) from None
    return launch_async


def check_array(a, what: str) -> None:
    if isinstance(a, np.ndarray):
        raise KernelArgumentError(f"{what} is a NumPy array in host memory; the GPU needs a CuPy array. "
                                  f"Fix: pass cupy.asarray(x).")
    if not isinstance(a, cp.ndarray):
        raise KernelArgumentError(f"{what} must be a CuPy array on the GPU backend, got {type(a).__name__}.")


def to_device(a: np.ndarray):
    return cp.asarray(a)


def to_host(a) -> np.ndarray:
    return cp.asnumpy(a)


def synchronize() -> None:
    cp.cuda.get_current_stream().synchronize()


# ---- TMA tensor maps (stage 12): encoded by the driver, passed to the kernel by value ----------
TENSOR_MAP = np.dtype([("opaque", "<u8", (16,))])  # CUtensorMap: 128 opaque bytes
_DATA_TYPE = {"float32": 7, "tfloat32": 11}       # CUtensorMapDataType
_SWIZZLE_128B, _L2_PROMOTION_128B, _ZERO_FILL = 3, 2, 0


def address(a) -> int:
    return int(a.data.ptr)


@functools.lru_cache(maxsize=1)
def _encode_tiled():
    import ctypes
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise KernelArgumentError(f"TMA tensor maps need the CUDA driver library (libcuda.so.1): {e}.") from None
    f = lib.cuTensorMapEncodeTiled
    f.restype = ctypes.c_int
    return ctypes, f


_maps: dict[tuple, np.void] = {}


def tensor_map(array, box, pitch_floats: int):
    """The driver's tensor map of a row-major float32 array (box.rows x box.cols, rows pitch_floats apart), copied
    box.box_rows x box.box_cols at a time in the 128-byte swizzle, zeros past the edges, elements rounded to TF32
    where box.tf32: a NumPy structured scalar that CuPy passes by value. A map is a function of the address, the
    sizes, the pitch and the box alone, so the maps of a repeated call are kept and encoded once."""
    key = (current_device(), address(array), box, pitch_floats)
    found = _maps.get(key)
    if found is None:
        if len(_maps) > 1024:
            _maps.clear()
        found = _maps[key] = _encode_map(array, box, pitch_floats)
    return found


def _encode_map(array, box, pitch_floats: int):
    ctypes, encode = _encode_tiled()
    out = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * 2)(box.cols, box.rows)     # innermost first
    strides = (ctypes.c_uint64 * 1)(4 * pitch_floats)    # bytes between rows
    box_dims = (ctypes.c_uint32 * 2)(box.box_cols, box.box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    rc = encode(ctypes.byref(out), _DATA_TYPE["tfloat32" if box.tf32 else "float32"], 2, ctypes.c_void_p(address(array)), dims, strides,
                box_dims, steps, 0, _SWIZZLE_128B, _L2_PROMOTION_128B, _ZERO_FILL)
    if rc != 0:
        raise KernelArgumentError(f"the driver refused the tensor map (cuTensorMapEncodeTiled returned {rc}) of a "
                                  f"{box.rows} x {box.cols} array with {box.box_rows} x {box.box_cols} boxes.")
    return np.frombuffer(bytes(out), dtype=TENSOR_MAP)[0]

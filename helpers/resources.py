"""What a kernel instantiation costs an SM: registers, shared and local memory, and occupancy.

    r = kernel_resources("03_smem_tiling")                 # default configuration
    r = kernel_resources("03_smem_tiling", TileConfig(16), arch="sm_80")
    print(r.describe())

Where the numbers come from:

- On a GPU (and no `arch` given): the compiled kernel's own attributes, as CuPy reports them
  (num_regs, shared_size_bytes, local_size_bytes, max_threads_per_block), after compiling it
  exactly as the course launches it (helpers.kernels.load_kernel). The driver's occupancy
  answer is recorded beside the course's calculator as a cross-check.
- Otherwise (the CPU emulator, or an explicit `arch`): the same .cu file compiled by NVRTC to
  PTX and assembled by `ptxas -v` for that architecture (default sm_90), both from NVIDIA's pip
  wheels (nvidia-cuda-nvrtc-cu12, nvidia-cuda-nvcc-cu12; in requirements.txt). ptxas reports
  registers per thread, static shared memory, the stack frame and spill stores and loads.

Occupancy follows the rules of CUDA's occupancy calculator (cuda_occupancy.h): a block is
limited by warp slots, block slots, registers and shared memory, whichever allows fewest blocks.
Registers go to warps in units of 256, from four sub-partitions of 16384 registers each;
shared memory goes to blocks in units of 128 bytes, plus 1 KiB the driver reserves per block
(sm_80 and later), out of the largest carveout the SM offers.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import stages
from .errors import CourseError, KernelCompileError
from .kernel_source import KernelSource
from .stages import KernelConfig, Variant

DEFAULT_ARCH = "sm_90"
WARP_SIZE = 32
# The options helpers.gpu.compile gives NVRTC (the architecture is added per call).
NVRTC_OPTIONS = ("--std=c++17", "-lineinfo")


# ---- the architectures ------------------------------------------------------------------------
@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability (CUDA C++ Programming Guide, compute capabilities)."""
    name: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int               # the largest shared-memory carveout, bytes
    max_shared_per_block: int        # with the opt-in for more than 48 KiB, bytes
    reserved_shared_per_block: int   # the driver's own shared memory in every block
    shared_unit: int                 # shared memory is allocated to a block in these units
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_unit: int = 256         # registers are allocated to a warp in these units
    sub_partitions: int = 4          # register files (and schedulers) per SM
    gpus: str = ""

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP_SIZE


KIB = 1024
ARCHS: dict[str, ArchLimits] = {a.name: a for a in (
    ArchLimits("sm_70", 2048, 32, 96 * KIB, 96 * KIB, 0, 256, gpus="V100"),
    ArchLimits("sm_75", 1024, 16, 64 * KIB, 64 * KIB, 0, 256, gpus="T4, RTX 20xx"),
    ArchLimits("sm_80", 2048, 32, 164 * KIB, 163 * KIB, 1 * KIB, 128, gpus="A100"),
    ArchLimits("sm_86", 1536, 16, 100 * KIB, 99 * KIB, 1 * KIB, 128, gpus="RTX 30xx, A10, A40"),
    ArchLimits("sm_89", 1536, 24, 100 * KIB, 99 * KIB, 1 * KIB, 128, gpus="RTX 40xx, L4, L40"),
    ArchLimits("sm_90", 2048, 32, 228 * KIB, 227 * KIB, 1 * KIB, 128, gpus="H100, H200"),
)}


def arch_name(arch: str) -> str:
    """'sm_90', 'compute_90', '9.0' or '90' -> 'sm_90'."""
    a = str(arch).strip().lower().replace("compute_", "sm_")
    if re.fullmatch(r"\d+\.\d", a):
        a = "sm_" + a.replace(".", "")
    elif re.fullmatch(r"\d+", a):
        a = "sm_" + a
    if not re.fullmatch(r"sm_\d+[a-z]?", a):
        raise ValueError(f"an architecture looks like sm_90 (or 9.0), not {arch!r}.")
    return a


def arch_limits(arch: str) -> ArchLimits:
    a = re.sub(r"(?<=\d)[a-z]$", "", arch_name(arch))  # sm_90a: sm_90's limits
    if a not in ARCHS:
        raise KeyError(f"no occupancy table for {arch!r}; the course knows {', '.join(ARCHS)}.")
    return ARCHS[a]


def _known(arch: str) -> bool:
    try:
        arch_limits(arch)
        return True
    except KeyError:
        return False


def _and(items) -> str:
    items = list(items)
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + " and " + items[-1]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


# ---- occupancy -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Occupancy:
    """How many blocks of one kernel fit on one SM, and what stops more."""
    arch: str
    threads_per_block: int
    registers_per_thread: int
    shared_bytes_per_block: int         # static + dynamic, as the kernel asks
    registers_allocated_per_block: int  # after rounding to the allocation unit
    shared_allocated_per_block: int     # with the driver's reserve, rounded to the unit
    limits: tuple[tuple[str, int], ...]  # (resource, blocks it allows)
    max_warps: int

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // WARP_SIZE)

    @property
    def active_blocks(self) -> int:
        return min(b for _, b in self.limits)

    @property
    def active_warps(self) -> int:
        return self.active_blocks * self.warps_per_block

    @property
    def occupancy(self) -> float:
        """Active warps / the SM's warp slots (0 to 1)."""
        return self.active_warps / self.max_warps

    @property
    def limited_by(self) -> tuple[str, ...]:
        """Every resource that allows no more blocks than the active ones (ties: all of them)."""
        return tuple(r for r, b in self.limits if b == self.active_blocks)

    def describe(self) -> str:
        if self.active_blocks == 0:
            return (f"{self.arch}: the block does not fit on an SM (limited by {_and(self.limited_by)}); "
                    f"the launch would fail.")
        return (f"{self.arch}: {self.active_blocks} block{'s' if self.active_blocks > 1 else ''} of "
                f"{self.warps_per_block} warps = {self.active_warps} of {self.max_warps} warps "
                f"({100 * self.occupancy:.0f}% occupancy), limited by {_and(self.limited_by)}")


def occupancy(arch: str, threads_per_block: int, registers_per_thread: int,
              static_shared_bytes: int = 0, dynamic_shared_bytes: int = 0) -> Occupancy:
    """Theoretical occupancy of a kernel on one SM of `arch`, as CUDA's occupancy calculator
    computes it with the default shared-memory carveout."""
    a = arch_limits(arch)
    for what, v in (("threads_per_block", threads_per_block), ("registers_per_thread", registers_per_thread),
                    ("static_shared_bytes", static_shared_bytes), ("dynamic_shared_bytes", dynamic_shared_bytes)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{what} must be a whole number >= 0, got {v!r}.")
    if not 1 <= threads_per_block <= 1024:
        raise ValueError(f"a block has 1 to 1024 threads, not {threads_per_block}.")
    if registers_per_thread > a.max_registers_per_thread:
        raise ValueError(f"{registers_per_thread} registers per thread: {a.name} allows at most "
                         f"{a.max_registers_per_thread}.")
    warps = -(-threads_per_block // WARP_SIZE)

    # warp slots and block slots
    by_warps = a.max_warps_per_sm // warps
    by_blocks = a.max_blocks_per_sm

    # registers: per warp, rounded to the unit; each sub-partition holds whole warps
    regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, a.register_unit)
    regs_per_block = regs_per_warp * warps
    # the hardware's launch check assumes the block's warps spread evenly over the sub-partitions
    regs_checked = regs_per_warp * _round_up(warps, a.sub_partitions)
    if regs_per_warp == 0:
        by_regs = by_blocks
    elif max(regs_per_block, regs_checked) > a.max_registers_per_block:
        by_regs = 0
    else:
        warps_per_sub = (a.registers_per_sm // a.sub_partitions) // regs_per_warp
        by_regs = warps_per_sub * a.sub_partitions // warps

    # shared memory: the kernel's own plus the driver's reserve, rounded to the unit
    smem = static_shared_bytes + dynamic_shared_bytes
    smem_alloc = _round_up(smem + a.reserved_shared_per_block, a.shared_unit)
    if smem > a.max_shared_per_block:
        by_smem = 0
    elif smem_alloc == 0:
        by_smem = by_blocks
    else:
        by_smem = a.shared_per_sm // smem_alloc

    return Occupancy(a.name, threads_per_block, registers_per_thread, smem, regs_per_block, smem_alloc,
                     (("warps", by_warps), ("blocks", by_blocks), ("registers", by_regs),
                      ("shared memory", by_smem)), a.max_warps_per_sm)


# ---- NVRTC and ptxas from the pip wheels -----------------------------------------------------------
class ToolchainMissingError(CourseError, RuntimeError):
    """NVRTC or ptxas cannot be found (the wheels in requirements.txt are not installed)."""


_INSTALL = ("Fix: pip install -r requirements.txt (it pins nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12, "
            "which bring NVRTC and ptxas; no GPU or CUDA install is needed), or set CUDA_HOME to a CUDA toolkit.")


@dataclass(frozen=True)
class Toolchain:
    nvrtc: Path
    ptxas: Path
    nvrtc_version: tuple[int, int]
    ptxas_version: tuple[int, int]
    ptxas_release: str

    @staticmethod
    def _origin(path: Path) -> str:
        return "pip wheel" if "site-packages" in path.parts else str(path.parent)

    def describe(self) -> str:
        return (f"NVRTC {self.nvrtc_version[0]}.{self.nvrtc_version[1]} ({self._origin(self.nvrtc)}), "
                f"ptxas {self.ptxas_release} ({self._origin(self.ptxas)})")


def _wheel_dirs() -> list[Path]:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def _toolkit_dirs() -> list[Path]:
    dirs = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    return [Path(d) for d in dirs if d]


def _nvrtc_candidates() -> list[Path]:
    found = []
    for d in _wheel_dirs():
        found += sorted((d / "cuda_nvrtc" / "lib").glob("libnvrtc.so.*"))
    for d in _toolkit_dirs():
        for lib in ("lib64", "lib", "targets/x86_64-linux/lib"):
            found += sorted((d / lib).glob("libnvrtc.so*"))
    return [p for p in found if ".alt." not in p.name and "builtins" not in p.name]


def _ptxas_candidates() -> list[Path]:
    found = [d / "cuda_nvcc" / "bin" / "ptxas" for d in _wheel_dirs()]
    found += [d / "bin" / "ptxas" for d in _toolkit_dirs()]
    on_path = shutil.which("ptxas")
    found += [Path(on_path)] if on_path else []
    return [p for p in found if p.is_file() and os.access(p, os.X_OK)]


def _nvrtc_version(lib) -> tuple[int, int]:
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


@functools.lru_cache(maxsize=None)
def toolchain() -> Toolchain:
    """NVRTC and a ptxas at least as new (ptxas reads PTX of its own or older releases)."""
    nvrtc = None
    for cand in _nvrtc_candidates():
        try:
            nvrtc = (cand, _nvrtc_version(ctypes.CDLL(str(cand))))
            break
        except OSError:
            continue
    if nvrtc is None:
        raise ToolchainMissingError(f"NVRTC (libnvrtc.so) was not found, so kernels cannot be compiled for a "
                                    f"GPU architecture on this machine. {_INSTALL}")
    seen = []
    for ptxas in _ptxas_candidates():
        try:
            out = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        m = re.search(r"release (\d+)\.(\d+), V([\d.]+)", out)
        if not m:
            continue
        version = (int(m.group(1)), int(m.group(2)))
        seen.append(f"{ptxas} ({m.group(3)})")
        if version >= nvrtc[1]:
            return Toolchain(nvrtc[0], ptxas, nvrtc[1], version, m.group(3))
    if seen:
        raise ToolchainMissingError(f"NVRTC {nvrtc[1][0]}.{nvrtc[1][1]} writes PTX that the ptxas found cannot "
                                    f"read ({', '.join(seen)} is older). {_INSTALL}")
    raise ToolchainMissingError(f"ptxas was not found, so the registers and shared memory of a kernel cannot be "
                                f"read on this machine. {_INSTALL}")


@functools.lru_cache(maxsize=None)
def cuda_include_options() -> tuple[str, ...]:
    """--include-path options for the CUDA headers a kernel may include, which NVRTC does not
    ship: <cuda_pipeline.h> (stage 09) and <mma.h> (stage 10), whose "crt/mma.h" lies in
    another wheel. From NVIDIA's pip wheels nvidia-cuda-runtime-cu12 and nvidia-cuda-nvcc-cu12
    (requirements.txt), else from a CUDA toolkit (CUDA_PATH, CUDA_HOME, /usr/local/cuda)."""
    candidates = []
    for wheel in ("nvidia.cuda_runtime", "nvidia.cuda_nvcc"):
        try:
            candidates += [Path(p) / "include" for p in importlib.import_module(wheel).__path__]
        except ImportError:
            pass
    candidates += [Path(os.environ[v]) / "include" for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)]
    candidates.append(Path("/usr/local/cuda/include"))
    found = []
    for header in ("cuda_pipeline.h", "mma.h", "crt/mma.h"):
        include = next((d for d in candidates if (d / header).is_file()), None)
        if include is not None and include not in found:
            found.append(include)
    return tuple(f"--include-path={d}" for d in found)


@functools.lru_cache(maxsize=None)
def _nvrtc_lib():
    return ctypes.CDLL(str(toolchain().nvrtc))


def _check(lib, result: int, what: str) -> None:
    if result != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise KernelCompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(result).decode()}")


def nvrtc_ptx(source: str, name_expression: str, arch: str = DEFAULT_ARCH,
              filename: str = "kernel.cu", include_dirs: tuple[Path, ...] = ()) -> tuple[str, str]:
    """Compiles `source` with NVRTC for `arch` (an sm_XY or sm_XYa); returns (PTX, lowered name of
    the kernel). `include_dirs`: where its quoted #includes lie."""
    lib = _nvrtc_lib()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        _check(lib, lib.nvrtcAddNameExpression(prog, name_expression.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in NVRTC_OPTIONS + tuple(f"--include-path={d}" for d in include_dirs)
                + cuda_include_options() + (f"--gpu-architecture={arch.replace('sm_', 'compute_')}",)]
        result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if result != 0:
            raise KernelCompileError(f"{filename} did not compile with NVRTC for {arch}:\n"
                                     f"{log.value.decode(errors='replace').strip()}")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        lowered = ctypes.c_char_p()
        _check(lib, lib.nvrtcGetLoweredName(prog, name_expression.encode(), ctypes.byref(lowered)),
               "nvrtcGetLoweredName")
        return ptx.value.decode(), lowered.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


@dataclass(frozen=True)
class PtxasInfo:
    """What `ptxas -v` says about one entry function."""
    function: str
    arch: str
    registers: int
    shared_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int | None


def _number(pattern: str, text: str, default=None):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default


def parse_ptxas(log: str) -> dict[str, PtxasInfo]:
    """ptxas -v output -> {mangled entry name: PtxasInfo}. Lines look like
        ptxas info    : Compiling entry function '_Z...' for 'sm_90'
        ptxas info    : Function properties for _Z...
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 32 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]"""
    out = {}
    parts = re.split(r"Compiling entry function '([^']+)' for '(\w+)'", log)
    for name, arch, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        props = re.search(rf"Function properties for {re.escape(name)}\s*\n\s*(.*)", body)
        frame = props.group(1) if props else ""
        used = re.search(r"Used (\d+) registers[^\n]*", body)
        if not used:
            continue
        line = used.group(0)
        out[name] = PtxasInfo(name, arch, int(used.group(1)), _number(r"(\d+) bytes smem", line, 0),
                              _number(r"(\d+) bytes stack frame", frame, 0),
                              _number(r"(\d+) bytes spill stores", frame, 0),
                              _number(r"(\d+) bytes spill loads", frame, 0),
                              _number(r"used (\d+) barriers", line))
    return out


@functools.lru_cache(maxsize=128)
def _ptxas_cached(source: str, filename: str, name_expression: str, arch: str,
                  include_dirs: tuple[Path, ...], headers: tuple[str, ...]) -> PtxasInfo:
    """`headers`: the text of the headers it includes, so that an edited header is a new key."""
    ptx, lowered = nvrtc_ptx(source, name_expression, arch, filename, include_dirs)
    tc = toolchain()
    with tempfile.TemporaryDirectory(prefix="tbt_ptxas_") as tmp:
        (Path(tmp) / "kernel.ptx").write_text(ptx)
        run = subprocess.run([str(tc.ptxas), f"-arch={arch}", "-v", "kernel.ptx", "-o", "kernel.cubin"],
                             cwd=tmp, capture_output=True, text=True, timeout=120)
    log = run.stdout + run.stderr
    if run.returncode != 0:
        raise KernelCompileError(f"ptxas could not assemble {filename} ({name_expression}) for {arch}:\n{log.strip()}")
    info = parse_ptxas(log).get(lowered)
    if info is None:
        raise KernelCompileError(f"ptxas said nothing about {lowered} ({name_expression}):\n{log.strip()}")
    return info


def ptxas_info(path, name_expression: str, arch: str = DEFAULT_ARCH) -> PtxasInfo:
    """Registers, shared memory, stack and spills of one kernel of a .cu file, from ptxas for `arch`
    (for sm_90a where the kernel needs Hopper's architecture-specific instructions and arch is sm_90)."""
    arch = arch_name(arch)
    source = KernelSource.read(path)
    needed = source.required_arch()
    if needed is not None:
        if arch not in (needed, needed.rstrip("a")):
            raise KernelCompileError(f"{source.display_path} uses instructions that exist only on {needed}; "
                                     f"it cannot be compiled for {arch}. Fix: ask for {needed.rstrip('a')}.")
        arch = needed
    return _ptxas_cached(source.text, source.path.name, name_expression, arch, source.include_dirs,
                         tuple(source.local_headers().values()))


# ---- a kernel's resources ---------------------------------------------------------------------
@dataclass(frozen=True)
class KernelResources:
    variant: str
    name_expression: str
    config: str
    arch: str
    threads_per_block: int
    registers: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    local_bytes: int                 # stack frame / local memory per thread (spills live here)
    spill_store_bytes: int | None    # ptxas only
    spill_load_bytes: int | None     # ptxas only
    barriers: int | None             # ptxas only
    max_threads_per_block: int | None  # CuPy attributes only
    source: str
    occupancy: Occupancy | None
    driver_blocks_per_sm: int | None = None  # the CUDA driver's own occupancy answer (GPU only)

    @property
    def spills(self) -> bool | None:
        if self.spill_store_bytes is None:
            return None
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    def describe(self) -> str:
        spill = {None: "", False: ", no spills", True: f", spills {self.spill_store_bytes} B stored / "
                 f"{self.spill_load_bytes} B loaded"}[self.spills]
        text = (f"{self.name_expression} ({self.config}), {self.threads_per_block} threads per block: "
                f"{self.registers} registers per thread, {self.static_shared_bytes} B static + "
                f"{self.dynamic_shared_bytes} B dynamic shared memory, {self.local_bytes} B local memory{spill}")
        if self.occupancy:
            text += f"\n{self.occupancy.describe()}"
        if self.driver_blocks_per_sm is not None:
            text += f"\nthe CUDA driver says {self.driver_blocks_per_sm} blocks per SM"
        return text + f"\n(source: {self.source})"


def _resolve(variant) -> Variant:
    return stages.variant(variant) if isinstance(variant, str) else variant


def _threads(config: KernelConfig) -> int:
    return math.prod(config.block())


def _from_ptxas(v: Variant, config: KernelConfig, arch: str) -> KernelResources:
    ne = v.name_expression(config)
    info = ptxas_info(v.path, ne, arch)
    threads, dyn = _threads(config), config.shared_bytes()
    occ = occupancy(info.arch, threads, info.registers, info.shared_bytes, dyn) if _known(info.arch) else None
    return KernelResources(v.name, ne, config.label(), info.arch, threads, info.registers, info.shared_bytes, dyn,
                           info.stack_frame_bytes, info.spill_store_bytes, info.spill_load_bytes, info.barriers,
                           None, f"ptxas -v for {info.arch}, {toolchain().describe()}", occ)


def _gpu_function(v: Variant, name_expression: str):
    """The CuPy RawKernel the course launches: helpers.kernels.load_kernel compiles the module
    (the same cache as every launch) and the module hands out the function by name expression."""
    from . import kernels
    k = kernels.load_kernel(v.path, name_expression)
    return k._compiled.get_function(name_expression)


def _from_gpu(v: Variant, config: KernelConfig) -> KernelResources:
    import cupy as cp
    from . import backend
    ne = v.name_expression(config)
    fn = _gpu_function(v, ne)
    threads, dyn = _threads(config), config.shared_bytes()
    info = backend.current().device_info()
    arch = "sm_" + info.compute_capability.replace(".", "")
    regs, smem = int(fn.num_regs), int(fn.shared_size_bytes)
    occ = occupancy(arch, threads, regs, smem, dyn) if _known(arch) else None
    if dyn > 48 * KIB:
        fn.max_dynamic_shared_size_bytes = dyn
    driver = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, dyn)
    return KernelResources(v.name, ne, config.label(), arch, threads, regs, smem, dyn, int(fn.local_size_bytes),
                           None, None, None, int(fn.max_threads_per_block),
                           f"CuPy kernel attributes on {info.name}, CUDA driver {info.driver}", occ, int(driver))


def kernel_resources(variant, config: KernelConfig | None = None, arch: str | None = None) -> KernelResources:
    """Resources of one instantiation of a registered variant (a Variant or its name). With no
    `arch` on a GPU: the compiled kernel's attributes on that GPU. Otherwise ptxas for `arch`
    (default sm_90)."""
    from . import backend
    v = _resolve(variant)
    config = config or v.default
    if not isinstance(config, v.config_type):
        raise TypeError(f"{v.name} takes a {v.config_type.__name__}, not a {type(config).__name__}.")
    if arch is None and backend.name() == "gpu":
        return _from_gpu(v, config)
    return _from_ptxas(v, config, arch_name(arch or DEFAULT_ARCH))


def resource_table(arch: str | None = None, variants=None) -> str:
    """Every registered variant (default configuration) as a Markdown table."""
    from .display import Markdown
    from . import progress
    rows = [kernel_resources(v, arch=arch)
            for v in progress.bar(variants or stages.variants(), desc="compiling for registers", unit="kernel")]
    head = ["| kernel | threads | registers | static smem B | local B | spills | blocks/SM | occupancy | limited by |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        o = r.occupancy
        spills = "-" if r.spills is None else ("yes" if r.spills else "none")
        head.append(f"| {r.name_expression} | {r.threads_per_block} | {r.registers} | {r.static_shared_bytes} | "
                    f"{r.local_bytes} | {spills} | {o.active_blocks if o else '-'} | "
                    f"{f'{100 * o.occupancy:.0f}%' if o else '-'} | {', '.join(o.limited_by) if o else '-'} |")
    source = rows[0].source if rows else ""
    return Markdown("\n".join(head) + (f"\n\nSource: {source}." if source else ""))

"""NVRTC and ptxas from NVIDIA's pip wheels (or a CUDA toolkit): finding them, compiling a kernel
to PTX for an architecture and reading what `ptxas -v` says it costs.
"""

from __future__ import annotations
import ctypes
import dataclasses
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from helpers.core.errors import CourseError, KernelCompileError
from helpers.core.kernel_source import KernelSource
from helpers.core.arch import DEFAULT_ARCH, arch_name
from helpers.emulator import build_cache, same_code

NVRTC_OPTIONS = ("--std=c++17", "-lineinfo")



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


def _find_nvrtc() -> tuple[Path, tuple[int, int]]:
    for cand in _nvrtc_candidates():
        try:
            return cand, _nvrtc_version(ctypes.CDLL(str(cand)))
        except OSError:
            continue
    raise ToolchainMissingError(f"NVRTC (libnvrtc.so) was not found, so kernels cannot be compiled for a "
                                f"GPU architecture on this machine. {_INSTALL}")


@functools.lru_cache(maxsize=None)
def toolchain() -> Toolchain:
    """NVRTC and a ptxas at least as new (ptxas reads PTX of its own or older releases)."""
    nvrtc = _find_nvrtc()
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


def _compile_program(lib, source: str, filename: str, name_expressions: tuple[str, ...], arch: str,
                     include_dirs: tuple[Path, ...]):
    """An NVRTC program of `source` compiled for `arch` with the GPU backend's options: (program,
    NVRTC's result, 0 when it compiled, its log). The caller destroys the program."""
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(lib, lib.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in NVRTC_OPTIONS + tuple(f"--include-path={d}" for d in include_dirs)
                + cuda_include_options() + (f"--gpu-architecture={arch.replace('sm_', 'compute_')}",)]
        result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
    except BaseException:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        raise
    return prog, result, log.value.decode(errors="replace").strip()


def nvrtc_ptx(source: str, name_expression: str, arch: str = DEFAULT_ARCH,
              filename: str = "kernel.cu", include_dirs: tuple[Path, ...] = ()) -> tuple[str, str]:
    """Compiles `source` with NVRTC for `arch` (an sm_XY or sm_XYa); returns (PTX, lowered name of
    the kernel). `include_dirs`: where its quoted #includes lie."""
    lib = _nvrtc_lib()
    prog, result, log = _compile_program(lib, source, filename, (name_expression,), arch, include_dirs)
    try:
        if result != 0:
            raise KernelCompileError(f"{filename} did not compile with NVRTC for {arch}:\n{log}")
        size = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        lowered = ctypes.c_char_p()
        _check(lib, lib.nvrtcGetLoweredName(prog, name_expression.encode(), ctypes.byref(lowered)),
               "nvrtcGetLoweredName")
        return ptx.value.decode(), lowered.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


_PTX: dict = {}   # (source, filename, arch, include dirs, headers' text, name expression) -> (PTX, lowered name)
_PTX_LOCK = threading.Lock()
_PTX_KEPT = 16


def _ptx(lib, prog) -> str:
    size = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    _check(lib, lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
    return ptx.value.decode(errors="replace")


def _keep_ptx(lib, prog, ptx: str, key: tuple, name_expressions: tuple[str, ...]) -> None:
    """The PTX of a program the source check compiled, for ptxas_info's kernel (the same source, headers, options
    and architecture give the same PTX): the last few, in memory."""
    with _PTX_LOCK:
        for expr in name_expressions:
            lowered = ctypes.c_char_p()
            _check(lib, lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(lowered)), "nvrtcGetLoweredName")
            _PTX[(*key, expr)] = (ptx, lowered.value.decode())
        while len(_PTX) > _PTX_KEPT:
            _PTX.pop(next(iter(_PTX)))


def _fingerprint(lib) -> list:
    """What an NVRTC result depends on besides the source and the options: the library and its version, and the
    CUDA headers it is given, so that an updated wheel or toolkit is a new key."""
    return [_stamps((lib._name,)), list(_nvrtc_version(lib)), list(NVRTC_OPTIONS), _header_stamps()]


def _stamps(paths) -> list:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            out.append([str(p), None, None])
    return out


@functools.lru_cache(maxsize=None)
def _header_stamps() -> list:
    """Size and modification time of every header in the CUDA include folders NVRTC is given (once a process)."""
    dirs = [Path(o.split("=", 1)[1]) for o in cuda_include_options()]
    return [str(d) for d in dirs] + _stamps(sorted(p for d in dirs for p in d.rglob("*") if p.is_file()))


# ---- what a GPU compiler accepts (the CPU emulator runs nothing else) ------------------------------
_NVRTC_LOCATION = re.compile(r"(?m)^(\S*?\.cu)\((\d+)\):")


@functools.lru_cache(maxsize=None)
def _nvrtc_alone():
    """NVRTC without ptxas: all that checking a kernel's source needs."""
    return ctypes.CDLL(str(_find_nvrtc()[0]))


# Functions a kernel may call without defining them: the CUDA device runtime's (printf, malloc, free, assert),
# which the driver links when it loads the module. Any other is a GPU's load error (an unresolved extern function).
DEVICE_RUNTIME_FUNCTIONS = frozenset({"vprintf", "malloc", "free", "__assertfail"})
_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\b[^;]*?([\w$]+)\s*\(", re.M)
_EXTERN_VARIABLE = re.compile(r"(?m)^(\S*?)\((\d+)\): warning #20044-D: extern declaration of the entity (\S+)")


@dataclass(frozen=True)
class NvrtcVerdict:
    log: str | None                 # NVRTC's log where it rejects the kernel, else None
    branches: frozenset[str]        # the marks of the learner's conditional directives it reached (same_code)
    externs: tuple[str, ...]        # functions the PTX calls and does not define
    warnings: str                   # its log where it compiles the kernel
    clusters: tuple = ()            # (name expression, (x, y, z)) of each kernel declared __cluster_dims__


def ptx_cluster_dims(ptx: str, lowered: str) -> tuple[int, int, int] | None:
    """The cluster a kernel's PTX entry requires (`.reqnctapercluster x, y, z`, which __cluster_dims__ compiles to: a
    launch runs its blocks in clusters of that shape), or None."""
    m = re.search(r"\.entry\s+" + re.escape(lowered) + r"\s*\([^)]*\)([^{]*)\{", ptx)
    d = m and re.search(r"\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", m.group(1))
    return tuple(int(x or 1) for x in d.groups()) if d else None


@functools.lru_cache(maxsize=256)
def _nvrtc_verdict(source: str, filename: str, name_expressions: tuple[str, ...], arch: str,
                   include_dirs: tuple[Path, ...], headers: tuple[tuple[str, str], ...],
                   included: tuple[str, ...], local: tuple[str, ...] | None) -> NvrtcVerdict:
    """NVRTC's verdict on the kernel. `headers`: (name, marked text) of the learner's headers, put first on the
    include path; `included`: the text of every header it includes, so that an edited header is a new key.
    Kept on disk too (build_cache.remembered), keyed by all of that and the toolchain. `local`: the text of the
    headers it includes directly (KernelSource.local_headers), under which the PTX of a kernel that compiled is
    kept for ptxas_info; None where what NVRTC compiled was marked (same_code), which ptxas is never asked about."""
    lib = _nvrtc_alone()

    def verdict() -> dict:
        with tempfile.TemporaryDirectory(prefix="tbt_nvrtc_") as tmp:
            for name, text in headers:
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / name).write_text(text)
            dirs = ((Path(tmp),) if headers else ()) + include_dirs
            prog, result, log = _compile_program(lib, source, filename, name_expressions, arch, dirs)
        try:
            branches = sorted(same_code.reached(log))
            if result != 0:
                return {"log": log, "branches": branches, "externs": [], "warnings": ""}
            ptx = _ptx(lib, prog)
            if local is not None:   # what ptxas will be asked about next (resources): kept, not compiled again
                _keep_ptx(lib, prog, ptx, (source, filename, arch, include_dirs, local), name_expressions)
            externs = sorted(set(_EXTERN_FUNC.findall(ptx)) - DEVICE_RUNTIME_FUNCTIONS)
            clusters = []
            for expr in name_expressions:
                lowered = ctypes.c_char_p()
                _check(lib, lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(lowered)), "nvrtcGetLoweredName")
                dims = ptx_cluster_dims(ptx, lowered.value.decode())
                if dims:
                    clusters.append([expr, list(dims)])
            return {"log": None, "branches": branches, "externs": externs, "warnings": log, "clusters": clusters}
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))

    v = build_cache.remembered("nvrtc", [_fingerprint(lib), source, filename, name_expressions, arch,
                                         [str(d) for d in include_dirs], headers, included, "clusters"], verdict)
    return NvrtcVerdict(v["log"], frozenset(v["branches"]), tuple(v["externs"]), v["warnings"],
                        tuple((e, tuple(d)) for e, d in v.get("clusters", ())))


def check_gpu_compiles(source: KernelSource, name_expressions: tuple[str, ...],
                       arch: str = DEFAULT_ARCH) -> same_code.NvrtcSaw:
    """Raises KernelCompileError with NVRTC's own message unless NVRTC compiles these
    instantiations for `arch` (for sm_90a where the kernel uses wgmma), with the options the GPU
    backend uses, into PTX a GPU can load. The CPU emulator calls it before building: a kernel no GPU
    compiler accepts (a host function such as fopen, a typo) fails there as it would on a GPU, and so
    does one that calls a function it only declares (`extern "C" __device__ int system(const char*);`:
    NVRTC compiles the call, a GPU cannot load it, and the emulator's C++ compiler would link the C
    library's). Returns what NVRTC did (same_code.NvrtcSaw): the marks of the learner's conditional
    directives it reached, which the emulator's build must reach too, and its identifying macros, which the
    emulator defines for the kernel (helpers/emulator/same_code.py). The verdict is cached on the source
    text and the headers it includes: a second launch costs nothing."""
    target = source.required_arch() or arch_name(arch)
    files = same_code.learner_files(source)
    marked = same_code.has_conditionals(files)
    text = same_code.mark(source.text, 0) if marked else source.text
    headers = tuple((f.name, f'#line 1 "{f.name}"\n' + same_code.mark(f.text, f.index)) for f in files[1:]) \
        if marked else ()
    try:
        local = tuple(source.local_headers().values())
        verdict = _nvrtc_verdict(text, source.path.name, tuple(name_expressions), target, source.include_dirs,
                                 headers, (*local, *(f.text for f in files[1:])), None if marked else local)
    except ToolchainMissingError as e:
        raise ToolchainMissingError(f"The CPU emulator runs only kernels that NVRTC, CUDA's compiler, accepts, "
                                    f"and asks it first. {e}") from None
    if verdict.log is None:
        _refuse_unloadable(source, verdict, target)
        return same_code.NvrtcSaw(verdict.branches, nvrtc_macros(target), verdict.clusters)
    log = same_code.without_marks(verdict.log)
    # "03_smem_tiling.cu(6): error: ..." -> "kernels/03_smem_tiling.cu:6: error: ...", as the GPU backend shows it
    shown = _NVRTC_LOCATION.sub(lambda m: f"{source.display_path}:{m.group(2)}:" if m.group(1) == source.path.name
                                else m.group(0), log)
    if "__nv_name_map" in log:
        shown += (f"\nThe name expression(s) {', '.join(name_expressions)} must each name one kernel "
                  f"instantiation, e.g. sgemm<128, 128, 8>.")
    raise KernelCompileError(f"{source.display_path} did not compile with NVRTC, CUDA's compiler (for {target}); "
                             f"the CPU emulator runs only what a GPU compiler accepts:\n{shown}")


def nvrtc_macros(target: str) -> tuple[tuple[str, str], ...]:
    """The macros NVRTC defines that say who compiles, and for what (sm_90a: __CUDA_ARCH__ 900)."""
    digits = re.sub(r"\D", "", target)
    arch = f"{digits[:-1]}{digits[-1]}0"
    major, minor = _nvrtc_version(_nvrtc_alone())
    return (("__CUDACC__", "1"), ("__CUDACC_RTC__", "1"), ("__CUDA_ARCH__", arch), ("__CUDA_ARCH_LIST__", arch),
            ("__CUDACC_VER_MAJOR__", str(major)), ("__CUDACC_VER_MINOR__", str(minor)))


def _refuse_unloadable(source: KernelSource, verdict: NvrtcVerdict, target: str) -> None:
    """What NVRTC compiles and a GPU still refuses, or runs otherwise than the emulator would: a call of a
    function declared and never defined, and an `extern` device variable (NVRTC makes it a variable of the
    kernel's own; the emulator's C++ compiler would link another program's)."""
    if verdict.externs:
        raise KernelCompileError(
            f"{source.display_path}: the kernel calls {', '.join(verdict.externs)}, declared but never defined "
            f"(NVRTC compiled it for {target}, and a GPU refuses to load it: an unresolved extern function). Only "
            f"CUDA's device functions (printf, malloc, free, assert, the math library) need no definition.\n"
            f"Fix: define the function as __device__ in the kernel's file, or call the CUDA function you meant.")
    m = _EXTERN_VARIABLE.search(verdict.warnings)
    if m:
        raise KernelCompileError(
            f"{source.display_path}:{m.group(2)}: `extern` on the device variable {m.group(3)}: NVRTC makes it a "
            f"variable of this kernel's own, and the CPU emulator would take another program's.\nFix: declare it "
            f"without extern (extern is for `extern __shared__` arrays).")


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
    """`headers`: the text of the headers it includes, so that an edited header is a new key. Kept on disk too
    (build_cache.remembered), keyed by all of that and the toolchain."""
    tc = toolchain()
    info = build_cache.remembered("ptxas", [_fingerprint(_nvrtc_lib()), str(tc.ptxas), tc.ptxas_release, source,
                                            filename, name_expression, arch, [str(d) for d in include_dirs], headers],
                                  lambda: dataclasses.asdict(_run_ptxas(source, filename, name_expression, arch,
                                                                        include_dirs, headers)))
    return PtxasInfo(**info)


def _run_ptxas(source: str, filename: str, name_expression: str, arch: str,
               include_dirs: tuple[Path, ...], headers: tuple[str, ...]) -> PtxasInfo:
    with _PTX_LOCK:
        kept = _PTX.get((source, filename, arch, include_dirs, headers, name_expression))
    ptx, lowered = kept or nvrtc_ptx(source, name_expression, arch, filename, include_dirs)
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


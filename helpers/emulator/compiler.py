"""Building a kernel .cu file into an emulator program with the machine's C++ compiler.

The source rewrites (this is the one place that describes them; other comments point here). A
.cu file is compiled with runtime/cuda_emu.h force-included and three rewrites, none of which
moves a line, so a `#line` directive makes compiler messages name the .cu file and its own line
numbers (_translation_unit):
1. `extern __shared__` becomes `__emu_extern_shared__`, cuda_emu.h's `extern`, and an
   `__align__(n)` after it is dropped (C++ allows alignas nowhere there): the link points every
   such array, and __emu_dynamic_shared, at the runtime's dynamic shared memory, as aligned as
   declared (build).
2. Each `__shared__ T name[dims];` becomes `using __emu_shared_tN = T[dims]; auto& name =
   __emu_shared_var<__emu_shared_tN, N, align>("name", line);`, a reference to the block's
   storage in the runtime's static shared arena, with a redzone after each array (GCC would put a
   static of a template kernel outside any section the runtime can find). In trace builds the
   reference is `static`: the sanitizer checks an access through a local reference only once per
   basic block, so `s[t] += x` would be traced as a load alone. A declaration it cannot read (two
   variables, an initializer) is refused with a message (_rewrite_shared).
3. nvcc's `#pragma unroll [count]` becomes an empty line: unrolling is a hint to the GPU's
   compiler that changes no result, and on the CPU fully unrolled copies of every checked access
   made builds 3 to 6 times slower (stage 09's default: 9 s at -O3 fully unrolled, 2.5 s at -O2
   without), while the catalogue ran as fast.
Around the source: entries_stub.h before it, and after it the table of the requested kernel
instantiations. Inline PTX (asm) is refused before compiling (check_supported), and the unit is
preprocessed and checked before it is compiled: the branches of its #if directives NVRTC took, the
files it includes, nothing hidden by a macro (same_code.py); that preprocessed text is what is compiled.

The runtime, runtime/runtime_*.cpp (runtime_internal.h describes its files), is compiled once per
compiler and flags into one object that every kernel's program links (runtime_object).
Builds are cached on disk, keyed by everything that goes into them, so a second launch of the
same kernel compiles nothing; the cache checks its entries when they are used and heals damaged
ones (build_cache.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from helpers.core.errors import CompilerNotFoundError, KernelCompileError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource, strip_comments
from helpers.emulator import build_cache, same_code
from helpers.emulator.build_cache import cache_dir  # noqa: F401  (where the builds go; autotune's cache is beside it)

RUNTIME_DIR = Path(__file__).parent / "runtime"
SHADOW_OFFSET = "0x7fff8000"  # must match kShadowOffset in runtime/runtime_memory.cpp
# The source rewrites: the module's docstring.
_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b(?:\s*__align__\s*\(\s*(\d+)\s*\))?")
_EXTERN_SHARED_NAME = re.compile(r"\bextern\s+__shared__\b[^;]*?(\w+)\s*\[\s*\]")
# nvcc's `#pragma unroll [count]`: the count may be a macro or a template parameter (`TM`, `(BM / 8)`).
_PRAGMA_UNROLL = re.compile(r"^([ \t]*)#[ \t]*pragma[ \t]+unroll\b([^\n]*)", re.M)
_INLINE_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\s*|__volatile__\s*)?\(")


@dataclass(frozen=True)
class Compiler:
    path: str
    family: str  # "gcc" or "clang"
    version: str

    def instrumentation_flags(self, checks: str) -> list[str]:
        """Address-sanitizer instrumentation in "kernel" mode, which needs no sanitizer library:
        the runtime defines the functions it calls. checks="inline" tests shadow bytes in place
        (fast); checks="calls" calls the runtime before every access (for tracing, and where the
        shadow memory cannot be reserved)."""
        if checks not in ("inline", "calls", "trace"):
            raise ValueError(f"checks must be 'inline', 'calls' or 'trace', not {checks!r}")
        threshold = "100000000" if checks == "inline" else "0"
        if self.family == "clang":
            return ["-fsanitize=kernel-address", "-mllvm", f"-asan-mapping-offset={SHADOW_OFFSET}",
                    "-mllvm", f"-asan-instrumentation-with-call-threshold={threshold}",
                    "-mllvm", "-asan-stack=0", "-mllvm", "-asan-globals=0"]
        return ["-fsanitize=kernel-address", f"-fasan-shadow-offset={SHADOW_OFFSET}",
                "--param", f"asan-instrumentation-with-call-threshold={threshold}",
                "--param", "asan-stack=0", "--param", "asan-globals=0"]


_INSTALL_HINT = ("The CPU emulator compiles kernels with a C++ compiler and found none (g++, clang++ "
                 "or c++ on PATH). Install one: `sudo apt-get install g++` (Debian, Ubuntu, Colab), "
                 "`sudo dnf install gcc-c++` (Fedora), `xcode-select --install` (macOS); or set "
                 "TBT_CXX to a compiler's path.")


@functools.lru_cache(maxsize=None)
def find_compiler() -> Compiler:
    wanted = os.environ.get("TBT_CXX") or os.environ.get("CXX")
    candidates = [wanted] if wanted else ["g++", "clang++", "c++"]
    for name in candidates:
        path = shutil.which(name)
        if not path:
            continue
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        family = "clang" if "clang" in out else "gcc"
        return Compiler(path, family, out.splitlines()[0] if out else name)
    raise CompilerNotFoundError(_INSTALL_HINT if not wanted else
                                f"TBT_CXX/CXX names {wanted!r}, which is not an executable on PATH. "
                                f"Fix: point it at g++ or clang++, or unset it.")


def _base_flags() -> list[str]:
    # -gdwarf-4: with GCC 12's DWARF 5 line tables, addr2line names unit.cpp instead of the .cu
    # file for some addresses (those with discriminators), and error reports lose their line.
    return ["-std=c++17", "-O2", "-g", "-gdwarf-4", "-fno-strict-aliasing", "-fno-pie", "-w", *_arch_flags(), *_stack_flags()]


@functools.lru_cache(maxsize=None)
def _stack_flags() -> tuple[str, ...]:
    """-fstack-clash-protection where the compiler takes it: a frame larger than a page (a big
    local array) then touches every page on its way down, so it meets the guard page below the
    thread's stack and is reported as a stack overflow, instead of jumping over the guard into
    the stack of another thread of the block."""
    cxx = find_compiler()
    probe = subprocess.run([cxx.path, "-fstack-clash-protection", "-Werror", "-x", "c++", "-fsyntax-only", "-"],
                           input="int main(){}", capture_output=True, text=True)
    return ("-fstack-clash-protection",) if probe.returncode == 0 else ()


@functools.lru_cache(maxsize=None)
def _arch_flags() -> tuple[str, ...]:
    """-march=native when the compiler takes it: FMA contraction, as nvcc does on the GPU."""
    cxx = find_compiler()
    probe = subprocess.run([cxx.path, "-march=native", "-x", "c++", "-fsyntax-only", "-"],
                           input="int main(){}", capture_output=True, text=True)
    return ("-march=native",) if probe.returncode == 0 else ()


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _runtime_sources() -> str:
    """The runtime's files and every header a kernel may include from it (part of every cache key:
    editing any of them builds the runtime and every program again)."""
    return "".join(f"{p.name}\n{p.read_text()}" for d in (RUNTIME_DIR, RUNTIME_DIR / "include")
                   for p in sorted(d.iterdir()) if p.suffix in (".h", ".cuh", ".cpp"))


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def _runtime_parts() -> list[Path]:
    """The runtime's source files (each compiles alone: tests/emulator/test_runtime_files.py)."""
    return sorted(RUNTIME_DIR.glob("runtime_*.cpp"))


def runtime_object() -> Path:
    """The runtime compiled once per compiler and flags, from the cache (checked when used). Its
    files are compiled as one generated unit (runtime.cpp in the cache entry) that includes them
    all: the headers they share are parsed once and the optimizer sees across files, as when the
    runtime was one file. (Compiled apart they took 10 % more CPU time, which compiling two at a
    time did not win back on a busy 2-core machine.)"""
    cxx = find_compiler()
    key = _digest(str(build_cache.FORMAT), cxx.path, cxx.version, " ".join(_base_flags()), _runtime_sources())

    def make(folder: Path) -> None:
        (folder / "runtime.cpp").write_text("".join(f'#include "{p.name}"\n' for p in _runtime_parts()))
        r = _run([cxx.path, *_base_flags(), "-I", str(RUNTIME_DIR), "-c", "runtime.cpp", "-o", "runtime.o"], folder)
        if r.returncode:
            build_cache.raise_if_disk_error(r.stderr, folder)
            raise KernelCompileError(f"The emulator runtime did not compile with {cxx.version}:\n{r.stderr}")

    return build_cache.entry(f"runtime-{key}", "runtime.o", make, "the emulator's runtime")[0]


def forget_builds() -> None:
    """Forget the programs and cache checks of this process (for tests that swap TBT_CACHE_DIR)."""
    _programs.clear()
    build_cache.forget()


def check_supported(source: KernelSource) -> None:
    code = source.stripped
    m = _INLINE_ASM.search(code)
    if m:
        line = code.count("\n", 0, m.start()) + 1
        raise UnsupportedFeatureError(
            f"{source.display_path}:{line}: inline PTX (asm(...)) cannot run on the CPU emulator, which "
            f"compiles CUDA C++ for the CPU, not PTX for a GPU.\n  {source.line(line)}\n"
            f"Fix: use the CUDA C++ intrinsic for it (for Hopper's wgmma, the functions of kernels/wgmma.cuh, "
            f"which the emulator runs), or run this kernel on a GPU (TBT_BACKEND=gpu).")


_SHARED = re.compile(r"\b__shared__\b")
_SHARED_DECL = re.compile(r"\b__shared__\s+([^;{}]*?);", re.S)
_SHARED_PARTS = re.compile(
    r"^(?:(?:alignas|__align__)\s*\(\s*(?P<align>\d+)\s*\)\s*)?(?P<type>.+?)\s*\b(?P<name>[A-Za-z_]\w*)"
    r"\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$", re.S)


def _rewrite_shared(source: KernelSource, text: str, static_reference: bool = False) -> str:
    """Source rewrite 2 of the module's docstring: each `__shared__ T name[dims];` becomes a
    reference to the block's storage in the runtime's static shared arena (`static` for traces)."""
    code = strip_comments(text)
    pieces, last = [], 0
    for i, m in enumerate(_SHARED_DECL.finditer(code)):
        decl = m.group(1)
        line = code.count("\n", 0, m.start()) + 1
        parts = _SHARED_PARTS.match(decl.strip())
        if "," in re.sub(r"\[[^\]]*\]|\([^)]*\)", "", decl) or "=" in decl or not parts:
            raise UnsupportedFeatureError(
                f"{source.display_path}:{line}: the CPU emulator reads one variable per __shared__ "
                f"declaration, without an initializer, like `__shared__ float As[BM * BK];`.\n  "
                f"{source.line(line)}\nFix: split the declaration (CUDA forbids initializers on __shared__).")
        name, align = parts.group("name"), parts.group("align") or 0
        alias = f"__emu_shared_t{i}"
        pieces += [text[last:m.start()],
                   f"using {alias} = {parts.group('type')}{parts.group('dims')}; "
                   f"{'static ' if static_reference else ''}auto& {name} = "
                   f"__emu_shared_var<{alias}, {i}, {align}>(\"{name}\", {line});" + "\n" * m.group(0).count("\n")]
        last = m.end()
    rewritten = "".join(pieces) + text[last:]
    left = _SHARED.search(strip_comments(rewritten))
    if left:
        line = rewritten.count("\n", 0, left.start()) + 1
        raise UnsupportedFeatureError(f"{source.display_path}:{line}: a __shared__ declaration the CPU emulator "
                                      f"cannot read.\n  {source.line(line)}")
    return rewritten


def _translation_unit(source: KernelSource, name_expressions: tuple[str, ...], checks: str,
                      marked: bool = False, nvrtc: same_code.NvrtcSaw = same_code.NvrtcSaw()) -> str:
    """The kernel's unit: NVRTC's identifying macros, the source with the rewrites of the module's docstring, then
    its entry table. marked: with same_code's marks after each conditional directive (which keep line numbers)."""
    body = _rewrite_shared(source, _EXTERN_SHARED.sub("__emu_extern_shared__", source.text),
                           static_reference=checks == "trace")
    body = _PRAGMA_UNROLL.sub("", body)   # rewrite 3 (the module's docstring): the line stays, empty
    body = same_code.mark(body, 0) if marked else body
    # The kernel's macros stay in force after it: the emulator's own code comes before it (cuda_emu.h,
    # force-included, and entries_stub.h), and the lines after it name only reserved identifiers.
    entries = []
    for i, expr in enumerate(name_expressions):
        entries.append(f"static void __emu_invoke_{i}(void* const* __emu_args) "
                       f"{{ __emu_stub::__invoke(&{expr}, __emu_args); }}")
    table = ", ".join(
        f'{{"{expr}", __emu_invoke_{i}, __emu_stub::__count(&{expr}), __emu_stub::__params(&{expr})}}'
        for i, expr in enumerate(name_expressions))
    return (f'#include "entries_stub.h"\n{nvrtc.defines()}#line 1 "{source.path}"\n{body}\n'
            f'#line 1 "<kernel name expressions>"\n'
            + "\n".join(entries)
            + f'\nextern "C" const __emu_entry __emu_entries[] = {{{table}}};\n'
            f'extern "C" const int __emu_num_entries = {len(name_expressions)};\n'
            f'extern "C" const int __emu_inline_checks = {int(checks == "inline")};\n')


def _compile_error(source: KernelSource, stderr: str, name_expressions) -> KernelCompileError:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    shown = "\n".join(lines[:40]) + ("\n…" if len(lines) > 40 else "")
    shown = shown.replace(str(source.path), source.display_path)
    hint = ""
    if "<kernel name expressions>" in stderr and "error:" in stderr and "ld returned" not in stderr:
        hint = (f"\nThe name expression(s) {', '.join(name_expressions)} must each name one kernel "
                f"instantiation, e.g. sgemm<128, 128, 8>.")
    return KernelCompileError(f"{source.display_path} did not compile for the CPU emulator:\n{shown}{hint}")


@dataclass(frozen=True)
class ParamInfo:
    is_pointer: bool
    size: int
    pointee_size: int
    pointee_const: bool
    category: str  # 'f', 'i', 'u' or '?'
    type_name: str


@dataclass(frozen=True)
class EntryInfo:
    index: int
    name: str
    params: tuple[ParamInfo, ...]


@dataclass(frozen=True)
class Program:
    """One built emulator program: a kernel file with its requested instantiations."""
    source: KernelSource
    executable: Path
    entries: dict[str, EntryInfo]
    checks: str
    nvrtc: same_code.NvrtcSaw = same_code.NvrtcSaw()   # what NVRTC did with it (same_code.py)


def _type_name(pretty: str) -> str:
    m = re.search(r"T = (.*?)[;\]]", pretty)
    return m.group(1).strip() if m else pretty


def _describe(executable: Path) -> dict[str, EntryInfo]:
    out = subprocess.run([str(executable), "--describe"], capture_output=True, text=True, check=True).stdout
    entries: dict[str, EntryInfo] = {}
    current = None
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "entry":
            idx, _, name = rest.split(" ", 2)
            current = (int(idx), name, [])
            entries[name] = current
        elif kind == "param":
            ptr, size, psize, pconst, cat, tname = rest.split(" ", 5)
            current[2].append(ParamInfo(ptr == "1", int(size), int(psize), pconst == "1", cat, _type_name(tname)))
    return {n: EntryInfo(i, n, tuple(p)) for n, (i, _, p) in entries.items()}


_programs: dict[str, Program] = {}


def build(source: KernelSource, name_expressions: tuple[str, ...], checks: str = "inline",
          nvrtc: same_code.NvrtcSaw = same_code.NvrtcSaw()) -> Program:
    """The emulator program for these instantiations, compiled once and cached. nvrtc: what NVRTC did with the
    kernel (helpers/run/toolchain.py check_gpu_compiles): its macros are defined for the kernel, and the build is
    refused unless the C++ preprocessor takes the branches NVRTC took (same_code.py)."""
    check_supported(source)
    files = same_code.learner_files(source)
    marked = same_code.has_conditionals(files)
    cxx = find_compiler()
    flags = [*_base_flags(), *cxx.instrumentation_flags(checks)]
    if checks == "trace":
        # Unoptimized: every load and store the source writes happens, in source order, and no
        # check is merged away (at -O2 the store of `C[i] = ... C[i]` shares the load's check).
        flags = [f for f in flags if not f.startswith("-O")] + ["-O0"]
    unit = _translation_unit(source, name_expressions, checks, marked, nvrtc)
    # The headers beside the kernel it includes are part of it (the runtime's own shadow some), and so is what
    # NVRTC's preprocessor did with them
    key = _digest(str(build_cache.FORMAT), cxx.path, cxx.version, " ".join(flags), _runtime_sources(), unit,
                  *source.local_headers().values(), *(f.text for f in files), " ".join(sorted(nvrtc.branches)))
    known = _programs.get(key)
    if known and build_cache.problem(known.executable.parent, "kernel") is None:
        # the same program; what NVRTC saw of these instantiations (their clusters) may be more than it was built for
        return known if known.nvrtc == nvrtc else dataclasses.replace(known, nvrtc=nvrtc)

    def make(folder: Path) -> None:
        runtime = runtime_object()
        (folder / "unit.cpp").write_text(unit)
        # Preprocessed first, and checked (same_code.py: the branches NVRTC took, the files it read, nothing
        # hidden by a macro); then that preprocessed text is what is compiled. -w is left out of the first step
        # only: it would silence the marks' #warning.
        headers = folder / "headers"
        headers.mkdir()
        same_code.write_marked_headers(files, headers)
        r = _run([cxx.path, *(f for f in flags if f != "-w"), "-iquote", str(headers), "-I", str(RUNTIME_DIR),
                  "-I", str(RUNTIME_DIR / "include"), "-I", str(source.path.parent), "-include", "cuda_emu.h",
                  "-E", "unit.cpp", "-o", "unit.ii"], folder)
        if r.returncode:
            build_cache.raise_if_disk_error(r.stderr, folder)
            raise _compile_error(source, same_code.without_marks(r.stderr), name_expressions)
        same_code.compare(source, files, nvrtc.branches, same_code.reached(r.stderr))
        same_code.check_preprocessed((folder / "unit.ii").read_text(errors="replace"), source, headers)
        r = _run([cxx.path, *flags, "-c", "unit.ii", "-o", "unit.o"], folder)
        if r.returncode:
            build_cache.raise_if_disk_error(r.stderr, folder)
            raise _compile_error(source, r.stderr, name_expressions)
        code = source.stripped
        dynamic = sorted(set(_EXTERN_SHARED_NAME.findall(code)))
        # Dynamic shared memory as aligned as declared, at least 16 bytes, and no more, as a GPU
        # gives it after a static array: the runtime's buffer is 4096-aligned, so start that far in.
        skew = min(max([16, *(int(a) for a in _EXTERN_SHARED.findall(code) if a)]), 4096)
        link = [f"-Wl,--defsym,{name}=__emu_dynamic_smem+{skew}" for name in (*dynamic, "__emu_dynamic_shared")]
        r = _run([cxx.path, "-no-pie", "-static-libstdc++", "-static-libgcc", "unit.o", str(runtime),
                  "-o", "kernel", *link], folder)
        if r.returncode:
            build_cache.raise_if_disk_error(r.stderr, folder)
            raise _compile_error(source, r.stderr, name_expressions)

    exe, entries = build_cache.entry(key, "kernel", make, f"{source.display_path}'s build for the emulator",
                                     load=_describe)
    program = Program(source, exe, entries, checks, nvrtc)
    _programs[key] = program
    return program


def rebuild(program: Program) -> Program:
    """The same program, its cache entry checked again (and built again if damaged): for a launch
    whose program could not be started."""
    return build(program.source, tuple(program.entries), program.checks, program.nvrtc)

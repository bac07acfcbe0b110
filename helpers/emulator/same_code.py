"""What the emulator builds is what NVRTC compiled: of the learner's files (the kernel, and the headers beside it
that the emulator does not provide itself) the C++ compiler gets exactly the lines NVRTC compiled.

NVRTC compiles device code only (a host function or a host variable is refused in its JIT mode), and the
emulator runs nothing NVRTC refused (helpers/run/toolchain.py check_gpu_compiles). The learner's code is
preprocessed with NVRTC's identifying macros (NvrtcSaw.macros: __CUDACC__, __CUDACC_RTC__, __CUDA_ARCH__ for the
architecture NVRTC compiled for, its version), so `#ifndef __CUDACC_RTC__` is skipped by both. The C++ compiler
would build anything, so every way code could still reach it and not NVRTC is closed here:
1. A branch NVRTC skips (`#ifndef __CUDACC_RTC__`, `#ifdef __GNUC__`, `#if __has_include(<stdio.h>)`): every
   conditional directive of the learner's files is followed by a mark (`#warning __tbt_branch_F_L`, then a
   `#line` that keeps the file's own numbering), both compilers report the marks they reached (NVRTC in its log,
   the C++ preprocessor on stderr), and the build is refused where the two differ (compare()).
2. A file NVRTC never read: in the C++ preprocessor's output, a file that the learner's code includes must be a
   learner's file (marked) or the emulator's own (runtime/); a computed #include, a path, a system header is
   refused (check_preprocessed()).
3. What a macro or token pasting hides (`CAT(as, m) volatile("nop")`): inline assembly, and attributes that run
   code outside a launch (constructor, destructor, section, ...), are looked for in the learner's code as the
   C++ preprocessor expanded it (check_preprocessed()).
The emulator then compiles that preprocessed text itself (compiler.build), so what was checked is what runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.errors import KernelCompileError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource, strip_comments

RUNTIME_DIR = Path(__file__).parent / "runtime"
SHADOWS = (RUNTIME_DIR / "include", RUNTIME_DIR)   # where the emulator's own headers are found first

MARK = "__tbt_branch_"
_MARKS = re.compile(MARK + r"(\d+_\d+)")
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef|else)\b", re.M)
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_ASM = re.compile(r"\b(?:asm|__asm|__asm__)\b")
# attributes that make code run outside a kernel's launch, or put it where the loader runs it
_HOST_ATTRIBUTES = re.compile(r"\b_*(?:constructor|destructor|ifunc|alias|weakref|section|init_priority|naked|"
                              r"visibility|symver)_*\b")
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(|\[\[")
_LITERALS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_LINEMARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)$')


@dataclass(frozen=True)
class NvrtcSaw:
    """What NVRTC did with the learner's files (helpers/run/toolchain.py check_gpu_compiles): the marks of
    their conditional directives it reached, and the macros it defines that say who compiles, for what."""
    branches: frozenset[str] = frozenset()
    macros: tuple[tuple[str, str], ...] = ()
    clusters: tuple[tuple[str, tuple[int, int, int]], ...] = ()  # kernels declared __cluster_dims__: their shape

    def cluster(self, name_expression: str) -> tuple[int, int, int] | None:
        """The cluster NVRTC compiled this kernel for (its PTX's .reqnctapercluster), or None."""
        return dict(self.clusters).get(name_expression)

    def defines(self) -> str:
        """The macros as lines for the learner's part of a unit: NVRTC's values where the emulator has its own."""
        return "".join(f"#undef {name}\n#define {name} {value}\n" for name, value in self.macros)


@dataclass(frozen=True)
class LearnerFile:
    index: int              # 0: the kernel's file; then its headers, in the order found
    name: str | None        # as the #include writes it (None for the kernel's file)
    path: Path
    text: str
    stripped: str           # the text without comments (strip_comments; the kernel's: KernelSource.stripped)


def learner_files(source: KernelSource) -> list[LearnerFile]:
    """The kernel's file and the headers it includes with quotes (transitively) that the emulator does not
    provide itself: each found beside its includer, then in the kernel's include dirs, as NVRTC finds it."""
    files = [LearnerFile(0, None, source.path, source.text, source.stripped)]
    seen: dict[str, Path] = {}
    for f in files:
        for name in _QUOTED_INCLUDE.findall(f.stripped):
            if name in seen or any((d / name).is_file() for d in SHADOWS):
                continue
            if Path(name).is_absolute() or ".." in Path(name).parts:
                raise UnsupportedFeatureError(
                    f"{source.display_path}: #include \"{name}\": the CPU emulator reads a header by its name, "
                    f"beside the kernel (or in the course's kernels/), not by a path.\nFix: put the header "
                    f"beside the kernel and include it by name.")
            path = next((d / name for d in (f.path.parent, *source.include_dirs) if (d / name).is_file()), None)
            if path is not None:
                seen[name] = path
                text = path.read_text(errors="replace")
                files.append(LearnerFile(len(files), name, path, text, strip_comments(text)))
    return files


def has_conditionals(files: list[LearnerFile]) -> bool:
    return any(_CONDITIONAL.search(f.stripped) for f in files)


def mark(text: str, index: int) -> str:
    """The text with a mark after each conditional directive (after its last continued line): `#warning` with
    the mark's name, then `#line` back to the next line's own number, so every other line keeps its number."""
    code = strip_comments(text).split("\n")
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        start = i
        out.append(lines[i])
        if _CONDITIONAL.match(code[i] if i < len(code) else ""):
            while i + 1 < len(lines) and lines[i].rstrip().endswith("\\"):
                i += 1
                out.append(lines[i])
            out += [f"#warning {MARK}{index}_{start + 1}", f"#line {i + 2}"]
        i += 1
    return "\n".join(out)


def write_marked_headers(files: list[LearnerFile], folder: Path) -> None:
    """The learner's headers, marked, into `folder` under their names: an include path put first finds them."""
    for f in files[1:]:
        target = folder / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'#line 1 "{f.path}"\n' + mark(f.text, f.index))


def reached(log: str) -> frozenset[str]:
    """The marks a compiler reached, from its log: "F_L" (file index, line of the directive)."""
    return frozenset(_MARKS.findall(log))


def without_marks(log: str) -> str:
    """A compiler's log without its messages about the marks (NVRTC: a warning, the line, a caret, a remark)."""
    blocks = re.split(r"\n\s*\n", log)
    kept = [b for b in blocks if MARK not in b and not b.strip().startswith("Remark: The warnings can be suppressed")]
    return "\n\n".join(kept).strip()


def compare(source: KernelSource, files: list[LearnerFile], nvrtc: frozenset[str], emulator: frozenset[str]) -> None:
    """Refuses the build where the C++ preprocessor took other branches than NVRTC, naming the first."""
    differ = sorted(nvrtc ^ emulator, key=lambda m: tuple(int(x) for x in m.split("_")))
    if not differ:
        return
    index, line = (int(x) for x in differ[0].split("_"))
    f = files[index] if index < len(files) else files[0]
    shown = f.text.split("\n")[line - 1].strip() if 0 < line <= f.text.count("\n") + 1 else ""
    where = source.display_path if index == 0 else str(f.path)
    taken = "NVRTC takes this branch and the CPU emulator's C++ compiler does not" if differ[0] in nvrtc else \
        "the CPU emulator's C++ compiler would take this branch, which NVRTC skips"
    raise KernelCompileError(
        f"{where}:{line}: {taken}.\n  {shown}\nThe emulator runs exactly the code NVRTC, CUDA's compiler, compiled "
        f"for a GPU. Fix: test only your own macros in #if (not the compiler's: __CUDACC_RTC__, __GNUC__, "
        f"__has_include, __CUDA_ARCH__ ...), so that both compilers read the same kernel.")


def check_preprocessed(preprocessed: str, source: KernelSource, marked_dir: Path | None) -> None:
    """In the C++ preprocessor's output: the learner's code includes only learner's files and the emulator's own,
    and holds, after every macro is expanded, no inline assembly and no attribute that runs code outside a
    launch. Raises UnsupportedFeatureError naming the line."""
    kernel = str(source.path)
    shadows = tuple(str(d) + "/" for d in SHADOWS)
    marked = str(marked_dir) + "/" if marked_dir else None
    stack: list[list[str]] = []      # [file as opened, name as the markers call it now]
    learner = lambda f: f[1] == kernel or (marked is not None and f[0].startswith(marked))   # noqa: E731
    line_no, file = 0, None
    for text in preprocessed.split("\n"):
        m = _LINEMARKER.match(text)
        if m:
            number, name, flags = int(m.group(1)), m.group(2).replace('\\"', '"').replace("\\\\", "\\"), m.group(3)
            if " 1" in flags:        # a file entered by #include
                if stack and learner(stack[-1]) and not (name.startswith(shadows) or
                                                          (marked is not None and name.startswith(marked))):
                    raise UnsupportedFeatureError(
                        f"{_where(stack[-1], line_no)}: the kernel includes {name}, a file NVRTC compiles "
                        f"apart from the emulator (a system header, a path, or a computed #include).\nThe "
                        f"emulator builds only the kernel, the headers beside it (by name) and its own CUDA "
                        f"headers. Fix: include the CUDA header by its name (<mma.h>, \"wgmma.cuh\") or put "
                        f"yours beside the kernel.")
                stack.append([name, name])
            elif " 2" in flags:      # back in the includer
                if stack:
                    stack.pop()
                if stack:
                    stack[-1][1] = name
            elif stack:
                stack[-1][1] = name
            else:
                stack.append([name, name])
            line_no = number
            file = stack[-1] if stack else None
            continue
        if file is not None and learner(file) and text.strip():
            _refuse_hidden(_LITERALS.sub('""', text), file, line_no)
        line_no += 1


def _where(file, line_no: int) -> str:
    return f"{file[1]}:{line_no}"


def _refuse_hidden(code: str, file, line_no: int) -> None:
    m = _ASM.search(code)
    if m:
        raise UnsupportedFeatureError(
            f"{_where(file, line_no)}: inline assembly (asm), here from a macro or a pasted token, cannot run on "
            f"the CPU emulator, which compiles CUDA C++ for the CPU, not PTX for a GPU.\n  {code.strip()[:160]}\n"
            f"Fix: use the CUDA C++ intrinsic for it, or run this kernel on a GPU (TBT_BACKEND=gpu).")
    for a in _ATTRIBUTE.finditer(code):
        inside = code[a.end():_close(code, a.end(), "))" if a.group(0) != "[[" else "]]")]
        bad = _HOST_ATTRIBUTES.search(inside)
        if bad:
            raise UnsupportedFeatureError(
                f"{_where(file, line_no)}: the attribute `{bad.group(0)}` makes code run outside a kernel's launch "
                f"(or places it where the loader runs it); the CPU emulator builds only device code.\n  "
                f"{code.strip()[:160]}\nFix: remove the attribute.")


def _close(code: str, start: int, closer: str) -> int:
    depth, i = 0, start
    while i < len(code):
        if code[i] in "([":
            depth += 1
        elif code[i] in ")]":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(code)

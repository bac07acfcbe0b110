"""Reading what went wrong: the learner's line and a hint, from NVRTC's log, from the emulator's
runtime errors and from a wrong result; and the kernel's signature against the contract."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from helpers.core.kernel_source import strip_comments
from helpers.course.write_it.exercise import Exercise, signature_text
from helpers.measure import verify

# "my_kernels/03.cu:12: error: ..." (NVRTC, as the backends show it) or "...cu:12:5: error: ..." (g++)
_ERROR = re.compile(r"(?m)^(?P<file>\S+?\.cu):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.+)$")
# "  at my_kernels/03.cu:14:  As[ty][tx] = ..." (the emulator's runtime errors)
_AT = re.compile(r"\bat (?P<file>\S+?\.cu):(?P<line>\d+):")
_KERNEL = re.compile(r"(?P<extern>extern\s+\"C\"\s+)?__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
                     r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>\w+)\s*\((?P<params>[^)]*)\)")

# Functions of the host's C library a learner may reach for: NVRTC knows none of them in a kernel.
HOST_FUNCTIONS = ("system", "fopen", "fclose", "fprintf", "fwrite", "fread", "exit", "abort", "getenv", "rand",
                  "srand", "time", "sleep", "usleep", "scanf", "puts", "std::cout", "cout")
HOST_HINT = ("a kernel runs on the GPU and can call only __device__ functions: no system(), fopen() or other "
             "functions of the host's C library (printf is the exception).")
COMPILE_HINTS = (   # NVRTC's words -> what to do
    (r'identifier "(?:' + "|".join(HOST_FUNCTIONS) + r')" is undefined', HOST_HINT),
    (r"is undefined", "declare it before this line, or check its spelling (CUDA is case-sensitive)."),
    (r"execution space|__host__ function|host function", HOST_HINT),
    (r'expected a "[;)\]}]"', "a ; or a closing bracket is missing on this line or the one before."),
    (r"too (?:few|many) arguments", "compare the call with the function's declaration."),
    (r"cannot be assigned|must be a modifiable lvalue|const", "a const value or a const float* array cannot be "
                                                              "written: A and B are read-only, C is the output."),
    (r"no instance of|no suitable conversion|cannot be used to initialize",
     "the types do not match: the course's matrices are float, the sizes int."),
)


def first_compile_error(message: str, path: Path) -> tuple[int | None, str]:
    """(line, NVRTC's or g++'s words) of the first error in `path`; (None, the message) if none is found."""
    for m in _ERROR.finditer(message):
        if Path(m.group("file")).name == path.name:
            return int(m.group("line")), m.group("msg").strip()
    return None, message.strip().splitlines()[-1] if message.strip() else "the compiler refused the kernel"


def compile_hint(words: str) -> str:
    for pattern, hint in COMPILE_HINTS:
        if re.search(pattern, words):
            return hint
    return "read the compiler's words above: they name what it expected on that line."


def runtime_error(message: str, path: Path, text: str = "") -> tuple[int | None, str, str]:
    """(line, cause, fix) from the emulator's message for an out-of-bounds access, a barrier, a crash;
    for an index past a __shared__ array, a fix that names the array the line indexes and its declaration
    in `text` (the emulator names the array the ADDRESS falls after, which for an index far past one array is
    another: the line says which array the index is into)."""
    lines = [ln for ln in message.splitlines() if ln.strip()]
    m = next((m for m in _AT.finditer(message) if Path(m.group("file")).name == path.name), None)
    fix = next((ln.strip()[len("Fix:"):].strip() for ln in lines if ln.strip().startswith("Fix:")), "")
    cause = lines[0] if lines else message
    line = int(m.group("line")) if m else None
    code = text.splitlines()[line - 1] if line and text and line <= len(text.splitlines()) else ""
    indexed = _indexed_elsewhere(cause, text, code)
    if indexed:
        cause += (f" That is the address: line {line} indexes {' and '.join(indexed)}, not "
                  f"{_PAST_SHARED.search(cause).group('var')}, so the index into {' or '.join(indexed)} runs past "
                  f"its end and on, beyond the arrays after it in shared memory.")
    if "waits at mbarrier_wait" in cause:
        waits = re.search(r"waits at mbarrier_wait \(line (\d+)\)", cause)
        return line or (int(waits.group(1)) if waits else None), cause, MBARRIER_HANG
    return line, cause, shared_index_hint(cause, text, indexed) or fix


# the emulator's words for an index past shared memory (helpers/emulator/launcher.py, _oob_message)
_PAST_SHARED = re.compile(r"of the __shared__ array (?P<var>\w+)(?: \(\d+ bytes\))?, past its end: \w+ has "
                          r"(?P<size>\d+) bytes")
_BEFORE_SHARED = re.compile(r"of static shared memory(?: \(\d+ bytes\))?, before any __shared__ array")
_DYNAMIC_SHARED = re.compile(r"of dynamic shared memory(?: \(\d+ bytes\))?, but the launch gave it (?P<size>\d+) bytes")


def shared_declarations(text: str) -> dict[str, tuple[str, int]]:
    """Each __shared__ array of a source: name -> (its dimensions as written, without spaces; its line)."""
    code = strip_comments(text)
    out = {}
    for decl in re.finditer(r"__shared__[^;]*;", code):
        for m in re.finditer(r"\b(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\])+)", decl.group()):
            out[m.group("name")] = (re.sub(r"\s+", "", m.group("dims")),
                                    code.count("\n", 0, decl.start() + m.start()) + 1)
    return out


def _indexed_elsewhere(cause: str, text: str, code: str) -> list[str]:
    """Where the emulator names array X for an access past X's end but the line indexes no X, only other
    __shared__ arrays: those arrays."""
    m = _PAST_SHARED.search(cause)
    if not m or not code:
        return []
    on_line = [name for name in shared_declarations(text) if re.search(rf"\b{name}\s*\[", strip_comments(code))]
    return [] if m.group("var") in on_line else on_line


def shared_index_hint(cause: str, text: str = "", arrays: list[str] | None = None) -> str:
    """The fix for an out-of-bounds access to shared memory: the index into the array runs past its
    declared size (a guard at the matrix edges does not help: a tile has its size whatever M, N, K are).
    `arrays`: the arrays the failing line indexes, where the emulator named another (runtime_error)."""
    not_edges = ("; guarding the matrix edges does not help here: a shared tile has its size whatever M, N and K "
                 "are. Compare the index with the declaration: a row or column one too far, rows and columns "
                 "swapped, or a buffer index past the number of buffers.")
    if m := _PAST_SHARED.search(cause):
        declared = shared_declarations(text)
        names = arrays or [m.group("var")]
        where = [f"`{name}{declared[name][0]}` at line {declared[name][1]}" for name in names if name in declared]
        size = f" ({m.group('size')} bytes" if not arrays else ""
        decl = (f", declared {' and '.join(where)}" if where else "") + (")" if size else "")
        return (f"the index into the __shared__ array {' or '.join(names)} runs past its declared size{size}{decl}"
                + not_edges)
    if _BEFORE_SHARED.search(cause):
        return "an index into a __shared__ array is negative, before the array's start" + not_edges
    if m := _DYNAMIC_SHARED.search(cause):
        return (f"the index into the extern __shared__ array runs past the {m.group('size')} bytes the launch gives "
                f"it (shared_mem=)" + not_edges)
    return ""


def _normal_type(param: str) -> str:
    words = re.findall(r"\w+|\*", re.sub(r"__restrict__|__restrict\b|__grid_constant__", " ", param))
    if len(words) > 1 and words[-1] != "*" and words[-1] not in ("int", "float"):
        words = words[:-1]                         # the parameter's name
    const = "const " if "const" in words else ""
    words = [w for w in words if w != "const"]
    return const + " ".join(w for w in words if w != "*") + "*" * words.count("*")


def signature_problem(ex: Exercise, text: str) -> tuple[int | None, str, str] | None:
    """(line, cause, hint) where the file's kernels break the contract's names or signatures, else None."""
    code = strip_comments(text)
    kernels = list(_KERNEL.finditer(code))
    for name, params in ex.signatures():
        ours = [m for m in kernels if m.group("name") == name]
        want = signature_text(name, params)
        if not ours:
            found = ", ".join(m.group("name") for m in kernels) or "none"
            return (None, f"no __global__ kernel named {name} (found: {found})", f"the contract's kernel is `{want}`.")
        m = ours[0]
        line = code.count("\n", 0, m.start()) + 1
        got = [_normal_type(p.strip()) for p in m.group("params").split(",") if p.strip()]
        expected = [_normal_type(f"{t} {n}") for t, n in params]
        if got != expected:
            return (line, f"{name} takes ({', '.join(got)}); the contract says ({', '.join(expected)})",
                    f"declare it exactly as `{want}`.")
        if not m.group("extern"):
            return (line, f"{name} is not extern \"C\"", 'write `extern "C"` before `__global__`: the kernel keeps '
                                                        'its plain name, which is how the course finds it.')
    return None


_TODO = re.compile(r"//\s*TODO\b(?:\s*(?P<n>\d+))?")


def _todo_blocks(text: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """Each TODO block of a source: (the line of its `// TODO n:` comment, its label, the code right under its
    comment, past blank lines: the lines up to the next blank or comment line, stripped). A starter that leaves
    a blank line under the comment for the learner's code has the code after it there (its barrier), so code
    written on that blank line, or below it, is written."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _TODO.search(line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith("//") and not _TODO.search(lines[j]):
            j += 1                                   # the rest of the TODO's comment
        while j < len(lines) and not lines[j].strip():
            j += 1
        code = []
        while j < len(lines) and lines[j].strip() and not lines[j].strip().startswith("//"):
            code.append(strip_comments(lines[j]).strip())
            j += 1
        out.append((i + 1, m.group("n") or line.strip(), tuple(code)))
    return out


def todo_lines(text: str, starter: str | None = None) -> tuple[int, ...]:
    """The lines of the TODO comments whose block is still the starter's: under the comment, the same code as
    the starter has there (nothing written yet). A block whose code the learner changed is written, whether or
    not its TODO comment is still there. Without `starter`, every TODO comment."""
    theirs = dict((label, code) for _, label, code in _todo_blocks(starter)) if starter is not None else None
    return tuple(line for line, label, code in _todo_blocks(text) if theirs is None or theirs.get(label) == code)


def shape_words(s: verify.Shape) -> str:
    return s.name if s.name == s.dims else f"{s.name} ({s.dims})"


INTERIOR_CAUSES = ("Check which element each thread copies into the tiles and which it reads back (a tile read "
                   "transposed, rows and columns swapped), and the products (A[row][k] * B[k][col]).")


def wrong_hint(check: verify.Check, passed: list[verify.Check], ex: Exercise | None = None,
               run_aligned: Callable[[], verify.Check] | None = None) -> str:
    """One hint for a wrong result, from which shape failed and how. Where shapes before it passed, the
    edges are blamed only if `run_aligned()` (the kernel on a shape that is a multiple of every tile, run
    only when needed) passes: a kernel wrong there too is wrong inside the matrices, not at their edges."""
    s = check.shape
    size = s.M * s.N
    causes = ex.interior_causes if ex and ex.interior_causes else ""
    if s.beta == 0 and check.nan and passed:
        return ("with beta = 0 the kernel must not read C: C holds NaN here, as the BLAS contract allows, and "
                "0 * NaN is NaN. Write alpha * acc alone when beta == 0.")
    if check.unwritten == size:
        return "no element of C was written: the kernel must store alpha * acc + beta * C[row][col] to C."
    if check.unwritten:
        return (f"{check.unwritten} of the {size} elements of C were never written: each element needs its thread; "
                "check how row and col are computed and the test that keeps threads inside C.")
    if check.nan:
        return ("NaN in C: a value was read before anything was written to it (shared memory starts as NaN on "
                "the emulator, as garbage on a GPU): look at the tile loads and at the barriers." + (
                    f" {causes}" if causes else ""))
    if not passed:
        return "even this small shape is wrong: check the products (A[row][k] * B[k][col]), alpha and beta." + (
            f" {causes}" if causes else "")
    if ex is not None and ex.is_aligned(s):
        return (f"the shapes before it pass, but {s.dims} is a multiple of the tile, so its edges are not the cause: "
                f"look at what grows with the size (the number of blocks, of k-tiles, the largest index). "
                + (causes or INTERIOR_CAUSES))
    aligned = run_aligned() if run_aligned is not None else None
    edges = (f"{s.dims} is not a multiple of the tile: where a tile reaches past M, N or K, its elements must be 0 "
             f"(and only threads inside C store)" + (", and every element is wrong: look at K, where the last "
                                                     "k-tile reaches past it." if check.wrong == size else "."))
    if aligned is not None and aligned.ok:
        return f"the shapes before it pass, and so does {aligned.shape.dims}, a multiple of the tile: {edges}"
    if check.wrong == size and all(max(c.shape.M, c.shape.N, c.shape.K) == 1 for c in passed):
        # only 1x1x1 passed and every element is wrong, on a multiple of the tile too: an index, not an edge
        return ("only 1x1x1 passes and every element is wrong: an index is off, not an edge. "
                + (causes or "Check which element each thread copies into the tiles and which it reads back (a tile "
                             "read transposed, rows and columns swapped)."))
    if aligned is None:
        return f"the shapes before it pass; {edges}"
    return (f"not only the edges: {aligned.shape.dims}, a multiple of the tile (no tile reaches past M, N or K), is "
            f"wrong too ({aligned.wrong} of {aligned.shape.M * aligned.shape.N} elements), so the interior tiles "
            f"are wrong as well. " + (causes or INTERIOR_CAUSES))


_DOES = {"load": "reads", "store": "writes", "atomic": "atomic updates"}


def race_hint(races: list, one_warp: bool, line_text: Callable[[int], str] = lambda n: "") -> str:
    """The fix for the races a trace found (helpers.measure.memory.races): a __syncwarp() where every race is
    between lanes of one warp (`one_warp`: a warp's own staging area), else a __syncthreads()."""
    r = races[0]
    (t1, l1, op1), (t2, l2, op2) = r.first, r.second
    if one_warp:
        code = line_text(l1).strip()
        return (f"a __syncwarp() is missing between the lanes' {_DOES[op1]} of {r.array} at line {l1}"
                + (f" (`{code}`)" if code else "") + f" and their {_DOES[op2]} of it at line {l2}: every race the "
                f"trace found is between lanes of one warp (threads {t1} and {t2} are lanes of warp {t1 // 32}), on "
                f"a part of {r.array} that only that warp touches. The lanes of a warp need not run in step, so put "
                f"__syncwarp() after line {l1} and before line {l2}; no other warp is involved, so a __syncthreads() "
                f"is not what is missing.")
    return ("a __syncthreads() is missing between them: after the tiles are written and before they are read, "
            "or after this pass has read them and before the next pass overwrites them (at the end of the loop "
            "body); every thread of the block must reach it.")


def atomic_lines(text: str) -> list[int]:
    """The lines of a source that call an atomic (atomicAdd, atomicExch, ...)."""
    return [i for i, line in enumerate(strip_comments(text).splitlines(), 1) if re.search(r"\batomic[A-Z]\w*\s*\(", line)]


def clock_race_hint(race, line_text: Callable[[int], str] = lambda n: "") -> str:
    """The fix for a race the emulator's clocks found in a kernel that orders its accesses with mbarriers and
    TMA copies (helpers.measure.memory.clock_races): which wait or arrival is missing, in words. The runtime
    names the two accesses in the order it ran them; nothing orders them, so either side's wait may be missing."""
    kinds = {race.first[2], race.second[2]}
    if "mbarrier_init" in line_text(race.first[1]):
        return (f"a thread uses the barrier {race.array} before its setup (line {race.first[1]}) is visible to it: after "
                f"one thread's mbarrier_init of every barrier come fence_mbarrier_init() and a __syncthreads() that "
                f"every thread passes before any of them uses a barrier.")
    if "copy engine write" in kinds:
        seen = ("the copy's write came first" if race.first[2] == "copy engine write" else
                "the read came first")
        return (f"nothing orders this TMA copy and this read of the stage ({seen} here; on a GPU either may). Two waits "
                "order them: the consumer waits on the stage's full barrier for the phase that this round's copies "
                "complete before it reads (round n of a stage is phase n, parity n & 1), and the producer waits on "
                "the stage's empty barrier for the consumers' phase of the round before before it copies into it "
                "(the first round passes at once). Check that both waits are there, and their parities.")
    return ("two threads touch this word with nothing ordering them: a __syncthreads(), or an mbarrier phase that one "
            "side arrives on and the other waits for, must come between them.")


MBARRIER_HANG = ("a wait on an mbarrier never completes: the phase it waits for never gets all its arrivals, or has "
                 "completed already and the next never will. Check the counts the barriers are set up with against "
                 "the arrivals that come in one phase (a full barrier: the producer's one announcement of the bytes; "
                 "an empty one: one per consumer thread, or per warp if one lane arrives for it), that every arrival "
                 "is made in every round, and the parity each wait names (round n of a stage is phase n, parity n & "
                 "1; the producer waits for the round before, its first round passing at once).")

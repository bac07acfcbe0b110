"""The learner's kernel beside the course's, with the course's instruments, on any machine: the stage's lesson
measured from both traces (block 0 at the exercise's lesson size, on the emulator), what each costs an SM (ptxas:
registers, spills, shared memory, occupancy, for this GPU's architecture or the emulator's), and both traces'
traffic per multiply-add (shared-memory wavefronts and their excess from bank conflicts, global sectors and their
excess from uncoalesced requests). Where the learner's kernel is slower on a GPU, `reasons` says which of these
numbers are worse than the course's, and by how much: the instruments' reasons, not a guess.

The course's kernel is the exercise's (Exercise.course_kernel) at the exercise's tiles where its registry allows
them (Exercise.course_config), else at its default."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from helpers.core import stages
from helpers.core.arch import known_arch, occupancy
from helpers.core.errors import CourseError
from helpers.course.write_it.exercise import Exercise
from helpers.measure import memory, trace, verify
from helpers.measure.trace import OPS, Trace
from helpers.run import backend, cpu_backend
from helpers.run.toolchain import ptxas_info


@dataclass(frozen=True)
class Measured:
    """One kernel (the learner's or the course's) as the instruments see it."""
    who: str                                      # "yours" or the course kernel's name and configuration
    lesson: dict = field(default_factory=dict)    # the lesson's numbers (Lesson.numbers)
    lesson_ok: bool | None = None
    resources: dict = field(default_factory=dict)  # registers, spills, shared bytes, occupancy
    traffic: dict = field(default_factory=dict)   # per multiply-add of block 0
    problem: str = ""                              # what could not be measured, and why


def course_variant(ex: Exercise):
    v = stages.variant(ex.course_kernel)
    return v, (v.config(**ex.course_config) if ex.course_config else v.default_for(backend.arch()))


def _fmas(tr: Trace, N: int, K: int) -> int:
    """Multiply-adds of block 0 of the trace: the elements of C it stores times K (at least 1)."""
    c = [b for b, n in tr.buffers.items() if n in ("C", "partial")]
    r = tr.records
    stores = r[(r["block"] == tr.blocks[0]) & (r["space"] == 0) & (r["op"] == OPS.index("store")) & np.isin(r["buffer"], c)]
    words = {int(o) // 4 + i for o, s in zip(stores["offset"], stores["size"]) for i in range(max(1, int(s) // 4))}
    return max(1, len(words) * K)


def traffic(tr: Trace, N: int, K: int) -> dict:
    """Block 0's shared-memory wavefronts and global sectors, per multiply-add, and what conflicts and uncoalesced
    requests add beyond the ideal."""
    df = memory.per_line(tr)
    fmas = _fmas(tr, N, K)
    out = {"multiply-adds of block 0": fmas}
    if df.empty:
        return out
    shared = df[df["space"] != "global"]
    glob = df[df["space"] == "global"]
    if not shared.empty and "wavefronts" in shared:
        out["shared wavefronts per multiply-add"] = float(shared["wavefronts"].sum()) / fmas
        out["shared wavefronts beyond the ideal (bank conflicts)"] = float(
            (shared["wavefronts"] - shared["ideal wavefronts"]).sum()) / max(1.0, float(shared["wavefronts"].sum()))
        out["shared requests per multiply-add"] = float(shared["requests"].sum()) / fmas
    if not glob.empty and "sectors" in glob:
        out["global sectors per multiply-add"] = float(glob["sectors"].sum()) / fmas
        out["global sectors beyond the ideal (uncoalesced)"] = float(
            (glob["sectors"] - glob["ideal sectors"]).sum()) / max(1.0, float(glob["sectors"].sum()))
        out["global requests per multiply-add"] = float(glob["requests"].sum()) / fmas
    return out


def _lesson(ex: Exercise, tr: Trace) -> tuple[dict, bool | None, str]:
    M, N, K = ex.lesson_size
    try:
        lesson = ex.lesson(tr, M, N, K)
    except (CourseError, ValueError, KeyError) as e:
        return {}, None, f"the lesson's check could not read this trace: {e}"
    return dict(lesson.numbers), lesson.ok, ""


def _resources(path, kernel: str, threads: int, dynamic: int, arch: str) -> dict:
    info = ptxas_info(path, kernel, arch)
    out = {"registers per thread": info.registers, "spill bytes (stored + loaded)":
           (info.spill_store_bytes or 0) + (info.spill_load_bytes or 0),
           "shared bytes per block": info.shared_bytes + dynamic, "threads per block": threads}
    if known_arch(info.arch):
        occ = occupancy(info.arch, threads, info.registers, info.shared_bytes, dynamic)
        out.update({"blocks per SM": occ.active_blocks, "occupancy (warps)": occ.occupancy})
    out["architecture"] = info.arch
    return out


def _arch() -> str:
    if backend.name() == "gpu":
        return "sm_" + backend.current().device_info().compute_capability.replace(".", "")
    return backend.arch()


def measure_yours(ex: Exercise, path, seed: int = 0) -> Measured:
    """The learner's kernel in `path`: its trace's lesson and traffic, its ptxas resources (main kernel)."""
    M, N, K = ex.lesson_size
    s = verify.Shape("trace", M, N, K)
    A, B, C = verify.random_operands(s, np.random.default_rng(seed))
    call = ex.launches(M, N, K, s.alpha, A, B, s.beta, C, cpu_backend)[0]
    try:
        tr = trace.capture(path, call.kernel, call.grid, call.block, call.args, ex.lesson_blocks(call.grid),
                           call.shared_mem)
    except CourseError as e:
        return Measured("yours", problem=f"your kernel could not be traced: {str(e).splitlines()[0]}")
    lesson, ok, problem = _lesson(ex, tr)
    try:
        res = _resources(path, call.kernel, int(np.prod(call.block)), call.shared_mem, _arch())
    except CourseError as e:
        res, problem = {}, problem or f"ptxas could not read it: {str(e).splitlines()[0]}"
    return Measured("yours", lesson, ok, res, traffic(tr, N, K), problem)


def measure_course(ex: Exercise) -> Measured:
    """The course's kernel at the exercise's tiles (or its default), measured the same way."""
    v, config = course_variant(ex)
    who = f"{v.name} ({config.label()})"
    M, N, K = ex.lesson_size
    try:
        config.check_shape(M, N, K)
        blocks = ex.lesson_blocks(config.launch_grid(M, N, backend.EMULATED_SMS))
        tr = trace.capture_variant(v, config, M, N, K, blocks=blocks)
    except (CourseError, ValueError) as e:
        return Measured(who, problem=f"not traced at {M} × {N} × {K}: {str(e).splitlines()[0]}")
    lesson, ok, problem = _lesson(ex, tr)
    arch = _arch()
    res = {}
    if not v.unsupported_on(arch):
        try:
            res = _resources(v.path, v.name_expression(config), int(np.prod(config.block())), config.shared_bytes(), arch)
        except CourseError as e:
            problem = problem or f"ptxas could not read it: {str(e).splitlines()[0]}"
    return Measured(who, lesson, ok, res, traffic(tr, N, K), problem)


# ---- which numbers explain a slower kernel ------------------------------------------------------------------
# (name, group, True where more is worse, the instrument's words)
WORSE_WHEN = (
    ("spill bytes (stored + loaded)", "resources", True, "ptxas spills registers to local memory"),
    ("occupancy (warps)", "resources", False, "fewer warps per SM to hide latency (registers or shared memory)"),
    ("shared wavefronts beyond the ideal (bank conflicts)", "traffic", True, "bank conflicts in shared memory"),
    ("shared wavefronts per multiply-add", "traffic", True, "more shared-memory traffic per multiply-add"),
    ("global sectors beyond the ideal (uncoalesced)", "traffic", True, "uncoalesced global requests"),
    ("global sectors per multiply-add", "traffic", True, "more global-memory traffic per multiply-add"),
    ("global requests per multiply-add", "traffic", True, "more global load and store instructions per multiply-add"),
    ("shared requests per multiply-add", "traffic", True, "more shared load and store instructions per multiply-add"),
)
MARGIN = 1.05      # a difference under 5 % is no reason


def reasons(yours: Measured, course: Measured) -> list[str]:
    """Each number of the instruments where the learner's kernel is worse than the course's, in words."""
    out = []
    for name, group, more_is_worse, words in WORSE_WHEN:
        a, b = getattr(yours, group).get(name), getattr(course, group).get(name)
        if a is None or b is None:
            continue
        worse = a > b * MARGIN + 1e-12 if more_is_worse else a * MARGIN < b - 1e-12
        if worse:
            out.append(f"{words}: {name} {_fmt(a)} (yours) against {_fmt(b)} (the course's)")
    return out


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def table(yours: Measured, course: Measured, group: str) -> list[tuple[str, str, str]]:
    """(name, yours, the course's) for every number of `group` either side has."""
    a, b = getattr(yours, group), getattr(course, group)
    names = list(dict.fromkeys([*a, *b]))
    return [(n, _fmt(a.get(n, "-")), _fmt(b.get(n, "-"))) for n in names
            if not isinstance(a.get(n, b.get(n)), (tuple, list, dict))]

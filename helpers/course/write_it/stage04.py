"""Exercise 04: 1D thread tiling, a 64 x 64 tile of C per block of 512 threads, TM = 8 results down a
column per thread. Its lesson, from the trace of block 0: each thread reads one value of B from shared
memory per step k and uses it TM times from a register, so a shared load feeds TM / (TM + 1)
multiply-adds (stage 03: 1/2); and the mapping of threads to results, the learner's choice, costs less
than twice what the course's kernel pays in wavefronts and sectors (helpers/course/write_it/mapping.py: with
neighbouring threads on neighbouring columns, nothing beyond the ideal)."""

from __future__ import annotations

from helpers.course.write_it import mapping, thread_tiles
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure.accesses import short_number
from helpers.measure.trace import Trace

BM = BN = 64
BK = 8
TM = 8
THREADS = BM * BN // TM
# what the course's kernel (04_1d_thread_tiling at these tiles) pays per access: nothing beyond the ideal; its
# warp reads one word of As (a broadcast) and 32 neighbouring words of Bs, and stores 128 neighbouring bytes of C
COURSE = mapping.CourseCosts("04_1d_thread_tiling")


def one_b_per_step(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Block 0: every thread stores TM results of one column, reads Bs once per step k, and the block's
    multiply-adds (the elements of C it stores, times K) come to TM / (TM + 1) per shared load."""
    tiles = thread_tiles.thread_tiles(tr, M, N)
    loads = thread_tiles.shared_loads(tr, K)
    fmas = tiles.results * K
    a_k, b_k = loads.per_thread_per_k("As"), loads.per_thread_per_k("Bs")
    per_load = fmas / loads.total if loads.total else 0.0
    costs = mapping.judge(tr, M, N, K, COURSE)
    numbers = {**costs.numbers, "results per thread": tiles.shape[0] * tiles.shape[1], "multiply-adds": fmas,
               "shared loads": loads.total, "As loads per thread per k": a_k, "Bs loads per thread per k": b_k,
               "multiply-adds per shared load": per_load}
    measured = (
        f"thread tile: {tiles.storing} threads store {tiles.results} elements of C, each thread {tiles.words()}"
        + ("" if tiles.uniform else f" (not all: thread {tiles.example[0]} spans "
                                                             f"{tiles.example[1]} × {tiles.example[2]})"),
        f"shared loads per thread per step k: As {short_number(a_k)}, Bs {short_number(b_k)} "
        f"(stage 03's one result per thread: 1 and 1)",
        f"multiply-adds per shared load: {fmas} / {loads.total} = {per_load:.3f} "
        f"(TM / (TM + 1) = {TM}/{TM + 1} = {TM / (TM + 1):.3f}; stage 03: 0.5)",
        *costs.measured)

    def fail(cause, line, hint):
        return Lesson(False, measured, cause, line, hint, numbers)

    if not tiles.uniform or tiles.shape != (TM, 1) or tiles.storing != THREADS:
        return fail(f"each thread should store TM = {TM} results of one column of C; in block 0, "
                    f"{tiles.storing} of {THREADS} threads store, thread {tiles.example[0]} spans "
                    f"{tiles.example[1]} rows × {tiles.example[2]} columns", tiles.line,
                    f"give each of the {THREADS} threads one column of the block's tile and a run of {TM} neighbouring "
                    f"rows in it, so that the threads cover the {BM} × {BN} tile once, and store each of its {TM} "
                    f"results to its own row of that column.")
    for name, matrix in (("Bs", "B"), ("As", "A")):
        if not loads.count.get(name):
            return fail(thread_tiles.missing_tile(loads, name, matrix), None,
                        f"copy the tiles into As[{BM}][{BK}] and Bs[{BK}][{BN}], __syncthreads(), and take the "
                        f"multiply-adds from As and Bs.")
    if b_k > 1 + 1e-9:
        return fail(f"each thread loads Bs {short_number(b_k)} times per step k: the value of B is read again "
                    f"for each of its multiply-adds, not reused from a register ({per_load:.2f} multiply-adds per "
                    f"shared load where 1D tiling reaches {TM / (TM + 1):.2f})", loads.line["Bs"],
                    f"at each step k, read the thread's one value of B from Bs once, into a register, before the "
                    f"{TM} multiply-adds that use it; they take it from the register.")
    if per_load < TM / (TM + 1) - 1e-9:
        return fail(f"block 0 makes {loads.total} shared loads for {fmas} multiply-adds, {per_load:.2f} per "
                    f"load where TM + 1 = {TM + 1} loads per TM = {TM} multiply-adds give {TM / (TM + 1):.2f} "
                    f"(As: {short_number(a_k)} loads per thread per step k)", loads.line.get("As"),
                    f"per step k a thread needs TM = {TM} values of As (one per result) and one of Bs: read each once.")
    if costs.failing:
        return fail(costs.cause(), costs.failing.line, costs.hint())
    return Lesson(True, measured, numbers=numbers)


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "In stage 03 every multiply-add costs two shared loads. A thread that computes several results of one "
    "column needs the same value of B for all of them at a given step k: load it once into a register and "
    "reuse it, and a shared load feeds TM multiply-adds instead of one.",
    "Each thread owns one column of the block's tile and TM neighbouring rows of it (512 threads times 8 "
    "results cover the 64 x 64 tile once; let neighbouring threads take neighbouring columns). Per step k "
    "it reads its value of B once and its TM values of A, and does TM multiply-adds into TM accumulators.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="03", headline="multiply-adds per shared load",
    id="04", stage="04", kernel="sgemm_1d", title="1D thread tiling",
    launch=Launch(block=(THREADS,), per_block=(BN, BM)),
    rules=(f"a block computes a {BM} × {BN} tile of C; each of its {THREADS} threads computes TM = {TM} results "
           f"in one column of that tile",
           f"tiles of A ({BM} × {BK}) and B ({BK} × {BN}) in `__shared__` arrays named As and Bs",),
    lesson=one_b_per_step,
    lesson_text=f"each thread reads one value of B from shared memory per step k and uses it TM = {TM} times from "
                f"a register: {TM}/{TM + 1} multiply-adds per shared load (block 0 of 64 × 64 × 64, traced)",
    course_kernel="04_1d_thread_tiling", course_config={"BM": BM, "BN": BN, "BK": BK, "TM": TM},
)

"""Exercise 05: 2D thread tiling, a 64 x 64 tile of C per block of 256 threads, a TM x TN = 4 x 4 tile
per thread. Its lesson, from the trace of block 0: per step k a thread loads TM values of A and TN of B
from shared memory into registers and forms their TM * TN products, so the block makes
(TM + TN) / (TM * TN) = 0.5 shared loads per result per step k (one result per thread: 2). Which results
each thread computes is the learner's choice: the check says what it costs in bank conflicts and sectors beside
the course's kernel, and fails a mapping that wastes at least twice what that kernel does
(helpers/course/write_it/mapping.py)."""

from __future__ import annotations

from helpers.course.write_it import mapping, thread_tiles
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure.accesses import short_number
from helpers.measure.trace import Trace

BM = BN = 64
BK = 8
TM = TN = 4
THREADS = BM * BN // (TM * TN)
TARGET = (TM + TN) / (TM * TN)      # shared loads per result per step k
# What the course's kernel (05_2d_thread_tiling at these tiles, each thread a 4 x 4 block of neighbours) wastes:
# a warp's two thread rows read words of As 32 apart (2-way), its 16 thread columns words of Bs 4 apart (2-way),
# and each store of C touches 16 sectors where 4 would do. Stage 06 removes the first, stage 07 the last.
COURSE = mapping.CourseCosts("05_2d_thread_tiling", {("shared", "load", "As"): 2, ("shared", "load", "Bs"): 2,
                                                     ("global", "store", "C"): 4, ("global", "load", "C"): 4},
                            {("shared", "load", "As"): "stage 06 removes this conflict",
                             ("shared", "load", "Bs"): "stage 07's 16-byte loads remove this conflict",
                             ("global", "store", "C"): "stage 07's 16-byte stores need no more sectors than bytes",
                             ("global", "load", "C"): "stage 07's 16-byte loads need no more sectors than bytes"})


def outer_product(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Block 0: every thread stores a TM x TN tile of C, and the block makes (TM + TN) / (TM * TN) shared
    loads per result per step k (its shared loads over the elements of C it stores times K); its mapping costs
    less than twice what the course's kernel pays per access."""
    return thread_tile_lesson(tr, M, N, K, COURSE)


def thread_tile_lesson(tr: Trace, M: int, N: int, K: int, course: mapping.CourseCosts,
                       skip: tuple[str, ...] = ()) -> Lesson:
    """outer_product's check, its mapping's costs beside `course` (`skip`: arrays a later stage judges itself)."""
    tiles = thread_tiles.thread_tiles(tr, M, N)
    costs = mapping.judge(tr, M, N, K, course, skip)
    loads = thread_tiles.shared_loads(tr, K)
    fmas = tiles.results * K
    a_k, b_k = loads.per_thread_per_k("As"), loads.per_thread_per_k("Bs")
    per_result = loads.total / fmas if fmas else float("inf")
    numbers = {**costs.numbers, "results per thread": tiles.shape[0] * tiles.shape[1], "multiply-adds": fmas,
               "shared loads": loads.total, "As loads per thread per k": a_k, "Bs loads per thread per k": b_k,
               "shared loads per result per k": per_result, "thread tile row step": tiles.steps[0],
               "thread tile column step": tiles.steps[1]}
    measured = (
        f"thread tile: {tiles.storing} threads store {tiles.results} elements of C, each thread {tiles.words()}"
        + ("" if tiles.uniform else f" (not all: thread {tiles.example[0]} spans "
                                                        f"{tiles.example[1]} × {tiles.example[2]})"),
        f"shared loads per thread per step k: As {short_number(a_k)}, Bs {short_number(b_k)}, for "
        f"{tiles.shape[0] * tiles.shape[1]} multiply-adds",
        f"shared loads per result per step k: {loads.total} / ({tiles.results} × {K}) = {per_result:.3f} "
        f"((TM + TN) / (TM · TN) = {TM + TN}/{TM * TN} = {TARGET:.3f}; one result per thread: 2, "
        f"stage 04's column of 8: {9 / 8:.3f})", *costs.measured)

    def fail(cause, line, hint):
        return Lesson(False, measured, cause, line, hint, numbers)

    for name, matrix in (("As", "A"), ("Bs", "B")):
        if not loads.count.get(name):
            return fail(thread_tiles.missing_tile(loads, name, matrix), None,
                        f"copy the tiles into As[{BM}][{BK}] and Bs[{BK}][{BN}], __syncthreads(), and take the "
                        f"multiply-adds from As and Bs.")
    if per_result > TARGET + 1e-9:
        name = "As" if a_k / TM >= b_k / TN else "Bs"
        return fail(f"block 0 makes {per_result:.2f} shared loads per result per step k, where a {TM} × {TN} thread "
                    f"tile needs {TARGET:.2f}: each thread loads As {short_number(a_k)} times and Bs "
                    f"{short_number(b_k)} times per step k, where it needs {TM} values of As and {TN} of Bs",
                    loads.line[name],
                    f"per step k, first copy the {TM} values of As and the {TN} of Bs a thread needs into registers, "
                    f"each once, then form all {TM * TN} products from the registers only: no load of As or Bs "
                    f"inside the loop over the products.")
    if not tiles.uniform or tiles.shape != (TM, TN) or tiles.storing != THREADS:
        return fail(f"each thread should store a {TM} × {TN} tile of C; in block 0, {tiles.storing} of {THREADS} "
                    f"threads store, thread {tiles.example[0]} spans {tiles.example[1]} rows × {tiles.example[2]} "
                    f"columns", tiles.line,
                    f"give each of the {THREADS} threads {TM} rows and {TN} columns of the block's tile, so that the "
                    f"threads cover the {BM} × {BN} tile once, and store each of its {TM * TN} results to its own "
                    f"row and column.")
    if costs.failing:
        return fail(costs.cause(), costs.failing.line, costs.hint())
    return Lesson(True, measured, numbers=numbers)


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "Stage 04 reuses the value of B from a register, but still loads a value of A for every multiply-add. "
    "Give each thread a small square of results instead of a column: per step k it then needs TM values of "
    "A and TN values of B, and their TM x TN products reuse each of them many times (an outer product).",
    "Each thread owns TM rows and TN columns of the block's tile (256 threads times 16 results cover it "
    "once). Per step k it copies its TM values of A and its TN values of B from the shared tiles into two "
    "small register arrays, then adds every product of the two into its TM x TN accumulators.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="04", headline="shared loads per result per k",
    id="05", stage="05", kernel="sgemm_2d", title="2D thread tiling",
    launch=Launch(block=(THREADS,), per_block=(BN, BM)),
    rules=(f"a block computes a {BM} × {BN} tile of C; each of its {THREADS} threads computes a TM × TN = {TM} × {TN} "
           f"tile of it",
           f"tiles of A ({BM} × {BK}) and B ({BK} × {BN}) in `__shared__` arrays named As and Bs",),
    lesson=outer_product,
    lesson_text=f"per step k each thread loads TM = {TM} values of As and TN = {TN} of Bs into registers and "
                f"multiplies every pair: (TM + TN) / (TM · TN) = {TARGET:g} shared loads per result per step k "
                f"(block 0 of 64 × 64 × 64, traced)",
    course_kernel="05_2d_thread_tiling", course_config={"BM": BM, "BN": BN, "BK": BK, "TM": TM, "TN": TN},
)

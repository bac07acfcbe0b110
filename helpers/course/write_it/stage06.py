"""Exercise 06: bank conflicts. Exercise 05's kernel (a 64 x 64 tile of C per block of 256 threads,
4 x 4 results per thread), whose loads of As conflict 2-way: the two thread rows of a warp read rows of
As TM * BK = 32 words apart, in the same bank. The learner removes the conflict by padding, transposing
or swizzling the tile. Its lesson, from the trace of block 0: every warp request that loads As takes
one wavefront per phase (ways = 1, no excess wavefronts), and the kernel is still exercise 05's."""

from __future__ import annotations

from helpers.course.write_it import stage05, thread_tiles
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure.trace import Trace

BM, BN, BK, TM, TN, THREADS = stage05.BM, stage05.BN, stage05.BK, stage05.TM, stage05.TN, stage05.THREADS


def no_conflicts_on_as(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Block 0: still exercise 05's outer product (4 x 4 per thread, 0.5 shared loads per result per k),
    and no warp request loading As has a bank conflict."""
    tiling = stage05.outer_product(tr, M, N, K)
    if not tiling.ok:
        return tiling
    a, b = thread_tiles.conflicts(tr, "As"), thread_tiles.conflicts(tr, "Bs")
    numbers = {**tiling.numbers, "As load requests": a.requests, "As max ways": a.ways,
               "As excess wavefronts": a.excess, "As conflicted requests": a.conflicted, "Bs max ways": b.ways}
    measured = (f"loads of {a.words()}",
                f"(not judged here: loads of {b.words()})",
                *tiling.measured)
    if a.ways > 1:
        q = a.worst
        return Lesson(False, measured,
                      f"the loads of As conflict {a.ways}-way: {a.conflicted} of block 0's {a.requests} warp requests "
                      f"that load As need more than one wavefront, {a.excess} wavefronts in excess (warp {q.warp}, "
                      f"line {q.line}: {a.worst_lanes})", q.line,
                      f"lanes 0-15 and 16-31 of a warp are two thread rows, reading rows r and r + TM of As at the "
                      f"same k (in the starter's As[BM][BK], TM * BK = {TM * BK} words apart, the same bank): give the "
                      f"tile a layout that puts those words in "
                      f"different banks (pad each row, store the tile transposed, or swizzle its columns: stage 06's "
                      f"three kernels), and change the declaration, the store and the load of As together.", numbers)
    return Lesson(True, measured, numbers=numbers)


EXERCISE = Exercise(
    id="06", stage="06", kernel="sgemm_conflict_free", title="bank conflicts",
    launch=Launch(block=(THREADS,), per_block=(BN, BM)),
    rules=(f"exercise 05's kernel: a block computes a {BM} × {BN} tile of C; each of its {THREADS} threads computes "
           f"a TM × TN = {TM} × {TN} tile of it from registers filled from `__shared__` arrays named As and Bs "
           f"(BK = {BK})",
           "no bank conflict on the loads of As: pad, transpose or swizzle the tile of A, your choice",),
    lesson=no_conflicts_on_as,
    lesson_text="every warp request that loads As is conflict-free: 1-way, no wavefront beyond the minimum "
                "(block 0 of 64 × 64 × 64, traced); still 0.5 shared loads per result per step k",
    course_kernel="06_padded", course_config={"BM": BM, "BN": BN, "BK": BK, "TM": TM, "TN": TN, "PAD": 1},
)

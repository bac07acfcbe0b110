"""Exercise 06: bank conflicts. The course's kernel of exercise 05 (a 64 x 64 tile of C per block of 256
threads, each a 4 x 4 block of neighbouring results) has loads of As that conflict 2-way: the two thread rows
of a warp read rows of As TM * BK = 32 words apart, in the same bank. The learner removes the conflict by
padding, transposing or swizzling the tile. Its lesson, from the trace of block 0: every warp request that
loads As takes one wavefront per phase (ways = 1, no excess wavefronts), and the kernel is still exercise 05's.

A learner's own 05 may have had no such conflict (its mapping has a warp read rows of As in different banks):
it passes unchanged, a different correct design, and the verdict says that the layout this stage teaches
removes a conflict that mapping never had."""

from __future__ import annotations

from helpers.course.write_it import mapping, stage05, thread_tiles
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.course.write_it.footprints import WORD, shared_sources
from helpers.measure import accesses, memory
from helpers.measure.trace import Trace

BM, BN, BK, TM, TN, THREADS = stage05.BM, stage05.BN, stage05.BK, stage05.TM, stage05.TN, stage05.THREADS
# What the course's kernel (06_padded at these tiles) wastes beyond the ideal: exercise 05's, less the conflict on
# As (which the lesson below judges on its own: none is accepted)
COURSE = mapping.CourseCosts("06_padded", {k: w for k, w in stage05.COURSE.waste.items() if k[2] != "As"},
                             {k: w for k, w in stage05.COURSE.later.items() if k[2] != "As"})


def layout(tr: Trace, K: int, name: str = "As") -> str:
    """How the learner's kernel lays A's tile out in the shared array `name`, read from the trace of block 0
    (the word each element of the tile was stored to): row by row (padded or not), transposed, or row by row
    with each row's words permuted (a swizzle)."""
    return laid_out(tr, K, name)[1]


def laid_out(tr: Trace, K: int, name: str = "As") -> tuple[str, str]:
    """layout's (kind, words): kind "as 05" (row by row, not padded: exercise 05's layout), "padded",
    "transposed", "swizzled", "own" or "none" (no such array, or the tile not all in it)."""
    var = next((v for v in tr.shared_variables if v.name == name), None)
    if var is None:
        return "none", f"no __shared__ array named {name}"
    where: dict[tuple[int, int], int] = {}
    for (space, word), (matrix, element) in shared_sources(tr, tr.blocks[0]).items():
        offset = word * WORD - var.offset
        if space == 1 and matrix == "A" and 0 <= offset < var.size:
            where[(element // K, element % K % BK)] = offset // WORD
    if len(where) < BM * BK or any((r, k) not in where for r in range(BM) for k in range(BK)):
        return "none", f"{name} holds {len(where)} of the tile's {BM * BK} elements of A (at 64 × 64 × 64, block 0)"
    base = where[(0, 0)]
    row, col = where[(1, 0)] - base, where[(0, 1)] - base
    size = f"{var.size // WORD} words for the tile's {BM * BK}" + (f", from word {base}" if base else "")
    if col == 1 and all(where[(r, k)] == base + r * row + k for r in range(BM) for k in range(BK)):
        pad = row - BK
        return ("padded" if pad else "as 05"), \
            f"row by row, rows {row} words apart ({f'padded by {pad}' if pad else 'not padded'}; {size})"
    if row == 1 and all(where[(r, k)] == base + k * col + r for r in range(BM) for k in range(BK)):
        pad = col - BM
        return "transposed", (f"transposed: each step k of the tile is a row of {name}, {col} words apart "
                              f"({f'padded by {pad}' if pad else 'not padded'}; {size})")
    if all(sorted(where[(r, k)] - where[(r, 0)] // BK * BK for k in range(BK)) == list(range(BK)) for r in range(BM)):
        return "swizzled", f"row by row, each row's {BK} words in another order (a swizzle; {size})"
    return "own", f"a layout of your own ({size})"


def no_conflicts_on_as(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Block 0: still exercise 05's outer product (4 x 4 per thread, 0.5 shared loads per result per k, a mapping
    that wastes less than twice what 06_padded does), and no warp request loading As has a bank conflict."""
    tiling = stage05.thread_tile_lesson(tr, M, N, K, COURSE, skip=("As",))
    if not tiling.ok:
        return tiling
    a, b = thread_tiles.conflicts(tr, "As"), thread_tiles.conflicts(tr, "Bs")
    numbers = {**tiling.numbers, "As load requests": a.requests, "As max ways": a.ways,
               "As excess wavefronts": a.excess, "As conflicted requests": a.conflicted, "Bs max ways": b.ways}
    kind, words = laid_out(tr, K)
    numbers["As layout"] = kind
    measured = (f"your layout of A's tile in As: {words}",
                f"loads of {a.words()}",
                f"(not judged here: loads of {b.words()})",
                *tiling.measured)
    if a.ways > 1:
        q = a.worst
        return Lesson(False, measured,
                      f"the loads of As conflict {a.ways}-way: {a.conflicted} of block 0's {a.requests} warp requests "
                      f"that load As need more than one wavefront, {a.excess} wavefronts in excess (warp {q.warp}, "
                      f"line {q.line}: {a.worst_lanes})", q.line,
                      f"the lanes above read, at the same step k, words of As that lie in the same bank (32 words "
                      f"apart, or a multiple of 32): give the tile a layout that puts the words one warp reads together "
                      f"in different banks (pad each row, store the tile transposed, or swizzle its columns: stage "
                      f"06's three kernels), and change the declaration, the store and the load of As together.",
                      numbers)
    if kind == "as 05" and a.requests:    # what the learner did: no layout of this stage, and no conflict
        measured = (measured[0], _conflict_free_by_mapping(tr), *measured[1:])
    return Lesson(True, measured, numbers=numbers)


def _conflict_free_by_mapping(tr: Trace) -> str:
    """What a pass with As laid out as exercise 05 lays it out means: the learner's mapping of threads to results
    never had the conflict this stage removes (the words one warp reads, from the first request that loads As)."""
    q = next(q for q in memory.requests(tr, "shared") if q.op == "load" and q.array == "As" and q.block == tr.blocks[0])
    view = accesses.bank_view(tr, q)
    return (f"your As is laid out as exercise 05 lays it out (row by row, not padded), and its loads are conflict-free "
            f"all the same: your mapping of threads to results has a warp read {view.distinct_words} word"
            f"{'s' * (view.distinct_words > 1)} of As at a time, in {view.banks_used} different bank"
            f"{'s' * (view.banks_used > 1)} (warp {q.warp}, line {q.line}: {view.lane_groups()}). The padding, "
            f"transposing or swizzling this stage teaches removes a conflict your mapping never had; the course's "
            f"05_2d_thread_tiling, each thread a 4 × 4 block of neighbours, has it: its two thread rows per warp read "
            f"words of As 32 apart, 2-way. A different correct design: it passes as it is")


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "Shared memory has 32 banks, one word wide: the 32 lanes of a warp are served at once only if the words "
    "they read lie in different banks (or are the same word). Find which lanes of a warp read As together "
    "and how far apart their words are; then change where the tile's elements live so that those words "
    "fall in different banks.",
    "With the starter's mapping (each thread a 4 x 4 block of neighbours), at one step k a warp's two rows of 16 "
    "threads read words of As TM rows apart. With rows BK = 8 words "
    "long those words are 32 apart: the same bank. Three fixes: make each row one word longer (padding), "
    "store the tile transposed (k-major: a warp's words become neighbours), or keep the size and permute "
    "each row's words by a function of the row (a swizzle). Declaration, store and load must agree.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="05", headline="As max ways",
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

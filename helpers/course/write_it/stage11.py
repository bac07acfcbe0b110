"""Exercise 11: split-K. Two kernels: splitk_partial, stage 03's tiled product over one slice of K per layer z of
its grid (S = 4 layers), writing raw sums to an S x M x N workspace, and splitk_reduce, which adds the slices in
a fixed order and finishes C. The check runs every shape twice and wants the same bits (Exercise.same_bits);
the workspace starts as NaN, so that a slice never written shows. Its lesson, from the trace of the blocks
(0, 0, z) of every layer: each step of K is read by exactly one slice, each slice writes its own part of the
workspace and no other, the slices are even (none longer than its share, rounded up to whole tiles), and no
atomic adds the slices (its order would change from run to run on a GPU)."""

from __future__ import annotations

import numpy as np

from helpers.course.write_it import diagnose
from helpers.course.write_it.exercise import Call, Exercise, Launch, Lesson
from helpers.measure.accesses import ranges_text
from helpers.measure.trace import OPS, Trace

TILE = 16
SLICES = 4
REDUCE_THREADS = 256
PARTIAL = ("int", "M"), ("int", "N"), ("int", "K"), ("const float*", "A"), ("const float*", "B"), ("float*", "partial")
REDUCE = (("int", "M"), ("int", "N"), ("int", "S"), ("float", "alpha"), ("const float*", "partial"), ("float", "beta"),
          ("float*", "C"))


def calls(ex: Exercise, M: int, N: int, K: int, alpha, A, B, beta, C, bk) -> list[Call]:
    """splitk_partial on a fresh workspace full of NaN, then splitk_reduce."""
    work = bk.xp.full(SLICES * M * N, np.nan, dtype=np.float32)
    i32 = np.int32
    return [Call("splitk_partial", (-(-N // TILE), -(-M // TILE), SLICES), (TILE, TILE),
                 (i32(M), i32(N), i32(K), A, B, work)),
            Call("splitk_reduce", (-(-M * N // REDUCE_THREADS), 1, 1), (REDUCE_THREADS,),
                 (i32(M), i32(N), i32(SLICES), np.float32(alpha), work, np.float32(beta), C))]


def layers(grid: tuple) -> tuple[int, ...]:
    """The blocks (0, 0, z) of every layer z of the grid, as linear indices."""
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    return tuple(z * gx * gy for z in range(gz))


def slices(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """The blocks (0, 0, z) of the trace: the steps of K each reads of A and B, the part of the workspace it writes."""
    gx, gy = tr.grid[0], tr.grid[1]
    names = {n: b for b, n in tr.buffers.items()}
    r = tr.records[(tr.records["space"] == 0) & (tr.records["repeat"] == 0)]
    measured, numbers, reads, problem = [], {}, {}, None
    size = M * N
    for block in tr.blocks:
        z = block // (gx * gy)
        mine = r[r["block"] == block]
        ks = set()
        for name, of_k in (("A", lambda e: e % K), ("B", lambda e: e // N)):
            if name in names:
                loads = mine[(mine["buffer"] == names[name]) & (mine["op"] == OPS.index("load"))]
                ks |= {int(of_k(int(o) // 4)) for o in loads["offset"]}
        reads[z] = ks
        out = mine[(mine["buffer"] == names.get("partial", -1)) & (mine["op"] != OPS.index("load"))]
        parts = sorted({int(o) // 4 // size for o in out["offset"]})
        atomics = int(np.count_nonzero(mine["op"] == OPS.index("atomic")))
        measured.append(f"slice {z} (block (0, 0, {z})): reads k {ranges_text(sorted(ks)) or 'none'} "
                        f"({len(ks)} of K = {K}); writes part{'s' * (len(parts) != 1)} "
                        f"{', '.join(map(str, parts)) or 'none'} of the workspace")
        if problem is None and parts != [z]:
            problem = (f"block (0, 0, {z}) writes part{'s' * (len(parts) != 1)} {', '.join(map(str, parts)) or 'none'} "
                       f"of the workspace: slice {z} must write its own part, and only it",
                       int(out["line"][0]) if out.size else None,
                       "each layer z of the grid writes its raw sums to part z of partial (the workspace's z-th "
                       "M x N matrix), a slice with no tile of K too (its sums are zero).")
        if problem is None and atomics:
            problem = (f"block (0, 0, {z}) adds with atomics: the order of the additions, and so the bits of C, "
                       f"would depend on which block came first", int(mine[mine["op"] == OPS.index("atomic")]["line"][0]),
                       "write each slice's sums to its own part of the workspace, and let the reduction add the parts "
                       "in one fixed order.")
    counts = {k: sum(k in ks for ks in reads.values()) for k in range(K)}
    twice, never = sorted(k for k, c in counts.items() if c > 1), sorted(k for k, c in counts.items() if c == 0)
    share = -(-(-(-K // TILE)) // len(reads)) * TILE
    longest = max((len(ks) for ks in reads.values()), default=0)
    numbers.update({"slices": len(reads), "k read by two slices or more": len(twice), "k read by no slice": len(never),
                    "largest slice of K": longest, "a slice's share of K": share})
    measured.append(f"{len(reads)} slices over K = {K}: the largest {longest} steps of k (an even split in whole tiles "
                    f"of {TILE}: {share}); k read by two slices or more: {ranges_text(twice) or 'none'}; by none: "
                    f"{ranges_text(never) or 'none'}")
    if problem is None and twice:
        problem = (f"steps {ranges_text(twice)} of K are read by more than one slice: their products are added twice",
                   None, "the slices must not overlap: slice z starts where slice z - 1 ends.")
    if problem is None and never:
        problem = (f"steps {ranges_text(never)} of K are read by no slice", None,
                   "together the slices must cover K, up to its last step.")
    if problem is None and longest > share:
        problem = (f"the largest slice takes {longest} steps of k, more than an even split's {share}: the layers of the "
                   f"grid do unequal work, and the longest sets the time", None,
                   f"give each of the {len(reads)} slices the same number of whole tiles (the last ones may get fewer).")
    if problem:
        return Lesson(False, tuple(measured), problem[0], problem[1], problem[2], numbers)
    return Lesson(True, tuple(measured), numbers=numbers)


def _lesson(tr: Trace, M: int, N: int, K: int) -> Lesson:
    lesson = slices(tr, M, N, K)
    atomics = diagnose.atomic_lines(tr.source.text)
    if lesson.ok and atomics:
        return Lesson(False, lesson.measured, f"line {atomics[0]} calls an atomic: the sum's order would depend on "
                                              f"which thread came first, and on a GPU so would the bits of C",
                      atomics[0], "add the slices in one fixed order, one thread per element of C.", lesson.numbers)
    return lesson


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "A shape with few tiles of C and a long K gives a GPU too few blocks to fill its SMs. Split K: S layers of "
    "blocks each multiply one slice of it, writing raw sums to a workspace, and a second kernel adds the S "
    "partial sums. Add them in one fixed order: float addition is not associative, so the order is the bits.",
    "In splitk_partial a block of layer z computes its 16 x 16 tile over slice z of K only (tiles z·s to "
    "z·s + s - 1, s the tiles per slice, clipped to K) and each thread writes its raw sum to element (row, "
    "col) of part z of the workspace. In splitk_reduce one thread per element of C reads its S partial sums, "
    "from part 0 to part S - 1, and writes alpha times their sum plus beta times C (only where beta is not 0).",
)

EXERCISE = Exercise(
    id="11", stage="11", kernel="splitk_partial", title="split-K",
    launch=Launch(block=(TILE, TILE), per_block=(TILE, TILE), layers="S"),
    rules=(f"splitk_partial is launched with block ({TILE}, {TILE}) and grid (ceil(N/{TILE}), ceil(M/{TILE}), S), "
           f"S = {SLICES}: layer z of the grid multiplies slice z of K (whole tiles of {TILE} steps, the slices "
           f"together covering K once) and writes the raw sums (no alpha, no beta) to part z of `partial`, an S × M × N "
           f"workspace (it starts full of garbage: every part must be written)",
           f"splitk_reduce is launched after it with block {REDUCE_THREADS} and grid ceil(M·N/{REDUCE_THREADS}): C = "
           f"alpha · (the sum of the S parts) + beta · C, the parts added in one fixed order",
           "the same bits at every run: the check runs every shape twice and compares them"),
    lesson=_lesson,
    lesson_text=f"slices: each step of K read by exactly one of the {SLICES} layers, each layer writing its own part "
                f"of the workspace, the slices even, no atomics (blocks (0, 0, z) of 64 × 64 × 256, traced)",
    course_kernel="11_split_k", course_config={"SPLITS": SLICES},
    kernels=(("splitk_partial", PARTIAL), ("splitk_reduce", REDUCE)),
    calls=calls, same_bits=True,
    lesson_size=(64, 64, 256), lesson_blocks=layers,
    hints=HINTS, previous="03", headline="largest slice of K",
    interior_causes=("With split-K, look at the workspace too: it starts full of NaN, so a part that no block "
                     "writes (an empty slice's) comes out as NaN, and slices that overlap or leave a gap add some "
                     "products twice or never (the lesson's check lists each slice's steps of K once the results are "
                     "right; trace it with python -m helpers trace to see them now)."),
)

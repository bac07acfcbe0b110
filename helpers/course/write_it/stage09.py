"""Exercise 09: double buffering on exercise 08's warp tiles: two buffers of each tile in shared
memory, the next tile's loads in flight while the current one is computed, one barrier per tile.
Its lesson: helpers.measure.pipeline's schedule of block 0, read from the learner's own trace."""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.course.write_it import barriers as barrier_check
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure import pipeline
from helpers.measure.trace import OPS, Trace

BM = BN = 64
BK = 8


def reads_after_loads(tr: Trace, block: int = 0) -> tuple[int, int]:
    """In the barrier intervals where a thread of `block` both loads A or B from global memory and
    reads shared memory: (its shared reads issued after its first global load of the interval, all
    its shared reads there). A load overlaps only the work its thread issues after it: loads issued
    after the multiply-adds of the interval have nothing left to hide behind."""
    r = tr.records[(tr.records["block"] == block) & (tr.records["repeat"] == 0)]
    operands = [b for b, n in tr.buffers.items() if n in ("A", "B")]
    df = pd.DataFrame({k: r[k].astype(np.int64) for k in ("thread", "epoch", "seq", "space", "op", "buffer")})
    loads = df[(df.space == 0) & (df.op == OPS.index("load")) & df.buffer.isin(operands)]
    first = loads.groupby(["thread", "epoch"]).seq.min().rename("first").reset_index()
    reads = df[(df.space > 0) & (df.op == OPS.index("load"))].merge(first, on=["thread", "epoch"])
    return int((reads.seq > reads["first"]).sum()), int(len(reads))


def one_barrier_per_tile(bk: int):
    """A lesson: while block 0 computes on k-tile t it loads tile t+1 (every tile but the last), and it
    passes one barrier per tile (one more, before the first tile, is allowed)."""

    def lesson(tr: Trace, M: int, N: int, K: int) -> Lesson:
        s = pipeline.schedule(tr, M, N, K, bk)
        tiles = s.tiles
        barriers = max(len(s.intervals) - 1, 0)            # B barriers make B + 1 intervals
        overlapped = sorted({t for i in s.intervals if i.busy_loading for t in i.computed})
        after, reads = reads_after_loads(tr)
        share = after / reads if reads else 0.0
        extra = barrier_check.extra_barriers(tr) if barriers > tiles + 1 else []
        late = s.overlapped > 0 and share < 0.5
        # the table's rows, without pipeline's summary line: the line below counts the same intervals and says,
        # where it matters, that an interval counts whatever the order of its loads and reads
        measured = tuple(s.table().splitlines()[1:-1]) + (
            f"{s.overlapped} of {len(s.intervals)} intervals compute while tiles load (depth {s.depth}): "
            f"{len(overlapped)} of the {tiles} k-tiles of {bk} computed while the next loads"
            + (f"; an interval counts whatever the order inside it, and in these the loads come after "
               f"{100 - 100 * share:.0f} % of the reads (next line): they overlap (almost) nothing" if late else ""),
            (f"in those intervals {after} of {reads} reads of shared memory ({100 * share:.0f} %) come after the "
             f"thread has issued its loads of the next tile: that much work for the loads to hide behind" if reads
             else "no interval holds both a thread's loads of the next tile and its reads of shared memory"),
            f"{barriers} barriers, {barriers / tiles:.2f} per tile"
            + (f"; {len(extra)} of them order no access to shared memory" if extra else ""))
        numbers = {"depth": s.depth, "barriers": barriers, "k-tiles": tiles, "barriers per tile": barriers / tiles,
                   "tiles computed while others load": len(overlapped), "reads after the loads": share,
                   "barriers that order nothing": len(extra)}
        count = f"block 0 passes {barriers} barriers for its {tiles} k-tiles ({barriers / tiles:.2f} per tile)"
        too_many = count + "; one per tile is the lesson"
        also = f" And one barrier per tile is the lesson: {count}." if barriers > tiles + 1 else ""
        if extra:
            split = (": it stands between the loads of tile t+1 and the math on tile t, so no interval computes "
                     "while a tile loads" if s.depth < 1 else "")
            return Lesson(False, measured, too_many + split, None,
                          f"one barrier per tile is the lesson: the barrier that block 0 passes {extra[0].where()} "
                          f"ends an interval that writes nothing to shared memory, so it orders nothing: remove it. "
                          f"Keep the one after the stores of tile t+1 into the other buffer: it makes tile t+1 "
                          f"everyone's and ends everyone's reads of tile t.", numbers)
        if s.depth < 1:
            return Lesson(False, measured, "no barrier interval of block 0 computes on a tile while another one is "
                                           "loading: each tile's loads wait until the previous tile is done "
                                           "(08's schedule)", None,
                          "issue the global loads of tile t+1 (into registers) BEFORE the BK steps of tile t, and "
                          "store them into the other buffer after those steps." + also, numbers)
        if len(overlapped) < tiles - 1:
            return Lesson(False, measured, f"only {len(overlapped)} of the {tiles} k-tiles are computed while the next "
                                           f"one loads; every tile but the last should be", None,
                          "in every pass of the loop but the last, start the loads of tile t+1 before computing on "
                          "tile t." + also, numbers)
        if share < 0.5:
            return Lesson(False, measured, f"the loads of tile t+1 are issued after {100 - 100 * share:.0f} % of tile "
                                           f"t's reads of shared memory: they have (almost) nothing left to overlap, "
                                           f"the thread waits for them right after", None,
                          "issue the loads of tile t+1 (into registers) before the BK steps of tile t, and store "
                          "them into the other buffer only after those steps." + also, numbers)
        if barriers > tiles + 1:
            return Lesson(False, measured, count + "; with two buffers one per tile is enough", None,
                          "one barrier per tile is the lesson: drop the barrier between computing tile t and storing "
                          "tile t+1: the buffer that tile t+1 goes to was last read during tile t-1, before the "
                          "barrier that ended it. One barrier, after the store, makes tile t+1 everyone's and ends "
                          "everyone's reads of tile t.", numbers)
        return Lesson(True, measured, numbers=numbers)

    return lesson


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "With one buffer, a block waits for each tile's loads before it can compute. With two, the loads of the "
    "next tile can be on their way while the current one is computed: issue them early, into registers, and "
    "store them into the other buffer when the computing is done.",
    "Before the loop, tile 0 goes into buffer 0 and the block waits once. In pass t: issue the loads of tile "
    "t+1 (if any), compute on buffer t % 2, store the loaded values into the other buffer, then one barrier. "
    "No barrier is needed before that store: the other buffer was last read in the pass before, which "
    "ended with a barrier.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="08", headline="tiles computed while others load",
    id="09", stage="09", kernel="sgemm_double_buffering", title="double buffering",
    launch=Launch(block=(128,), per_block=(BN, BM)),
    rules=(f"exercise 08's {BM} × {BN} block tiles and 32 × 32 warp tiles (4 × 8 results per lane), tiles {BK} deep",
           "two buffers of each tile in shared memory: while the block computes on tile t from one, the loads of "
           "tile t+1 are in flight (into registers), then stored into the other",
           "one __syncthreads() per tile"),
    lesson=one_barrier_per_tile(BK),
    lesson_text="double buffering: tile t+1 loads while tile t is computed, one barrier per tile (the schedule of "
                "block 0 of 64 × 64 × 64, 8 k-tiles, from its trace: helpers.measure.pipeline)",
    course_kernel="09_two_buffers",   # the step whose idea this exercise is (two buffers, one barrier a tile)
    course_config={"BM": BM, "BN": BN, "BK": BK, "WM": 32, "WN": 32, "TM": 4, "TN": 8, "MIN_BLOCKS": 1},
)

"""Exercise 08: warp tiling, 64 x 64 block tiles cut into four 32 x 32 warp tiles, 4 x 8 results per
lane. Its lesson: in block 0, each warp stores exactly one 32 x 32 tile of C and reads from shared
memory exactly that tile's 32 rows of A and 32 columns of B (helpers.course.write_it.footprints)."""

from __future__ import annotations

from helpers.course.write_it import footprints
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure.accesses import ranges_text
from helpers.measure.trace import Trace

BM = BN = 64
WM = WN = 32
TM, TN = 4, 8
WARPS = (BM // WM) * (BN // WN)


def warp_tiles(rows: int, cols: int, warps: int):
    """A lesson: each of the block's `warps` warps stores one rows x cols tile of C of its own and reads
    from shared memory only that tile's rows of A and columns of B."""

    def lesson(tr: Trace, M: int, N: int, K: int) -> Lesson:
        found = footprints.warp_footprints(tr, N, K)
        measured = [f.text() for f in found]
        reads = {f.warp: len(f.a_rows) + len(f.b_cols) for f in found}
        tiles = [f for f in found if f.is_tile(rows, cols)]
        origins = {f.warp: f.origin for f in tiles}
        numbers = {"warp tiles": len(tiles), **{f"warp {w} origin": o for w, o in origins.items()},
                   **{f"warp {w} rows of A + columns of B read": n for w, n in reads.items()}}
        if found:
            measured.append(f"per step k a warp reads {' / '.join(str(reads[f.warp]) for f in found)} values of A and "
                            f"B from shared memory for its {rows * cols} products ({rows} + {cols} = {rows + cols} "
                            f"for a {rows} × {cols} tile)")
        # what to aim for, not the code of the answer: write_it.hint gives that, in levels, when asked
        hint = (f"compare the warps' lines above with the aim: each warp should pick one of the {warps} "
                f"tiles of {rows} × {cols} (a 2 × 2 grid), and its 32 lanes should cover that tile with their "
                f"{TM} × {TN} results, so that it reads {rows} + {cols} = {rows + cols} values per step. Stuck? "
                f"write_it.hint('08') gives the next hint.")
        if len(found) != warps:
            return Lesson(False, tuple(measured), f"block 0 has {len(found)} warps with accesses; the contract has "
                                                  f"{warps}", None, hint, numbers)
        bad = next((f for f in found if f not in tiles), None)
        if bad is not None:
            shape = f"{len(bad.c_rows)} × {len(bad.c_cols)}" if bad.c_rows else "nothing"
            cause = (f"warp {bad.warp}'s lanes store C's rows {ranges_text(bad.c_rows)} × columns "
                     f"{ranges_text(bad.c_cols)} ({shape}) and read rows {ranges_text(bad.a_rows) or 'none'} of A and "
                     f"columns {ranges_text(bad.b_cols) or 'none'} of B: not one {rows} × {cols} tile, its threads "
                     f"are spread over the block tile") if bad.c_rows else f"warp {bad.warp} stores nothing of C"
            return Lesson(False, tuple(measured), cause, None, hint, numbers)
        if len(set(origins.values())) != warps:
            return Lesson(False, tuple(measured), "two warps compute the same tile of C", None, hint, numbers)
        return Lesson(True, tuple(measured), numbers=numbers)

    return lesson


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "A warp whose lanes are spread over the block tile reads many rows of A and columns of B. Give each warp "
    "a compact square of the block tile instead: its lanes then share the rows and columns they read, and "
    "the warp reads 32 + 32 values per step for its 32 x 32 results.",
    "The 4 warps take the 4 quarters of the block tile (a 2 x 2 grid); inside its warp's 32 x 32 quarter, "
    "each lane takes a 4 x 8 tile of results (8 rows of lanes times 4 columns). Per step k a lane reads its "
    "4 values of A (side by side in the transposed As) and its 8 values of B with 16-byte loads, then does "
    "32 multiply-adds.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="07", headline="warp tiles",
    id="08", stage="08", kernel="sgemm_warp_tiling", title="warp tiling",
    launch=Launch(block=(32 * WARPS,), per_block=(BN, BM)),
    rules=(f"{BM} × {BN} block tiles, tiles of A and B 8 deep in shared memory (the starter copies them)",
           f"each of the {WARPS} warps computes one {WM} × {WN} tile of the block tile (the warps in a 2 × 2 grid), "
           f"and each of its lanes {TM} × {TN} elements of C inside its warp's tile"),
    lesson=warp_tiles(WM, WN, WARPS),
    lesson_text=f"warp tiles: each warp stores one {WM} × {WN} tile of C and reads from shared memory only that "
                f"tile's {WM} rows of A and {WN} columns of B (block 0 of 64 × 64 × 64, traced)",
    course_kernel="08_warp_tiling",
    course_config={"BM": BM, "BN": BN, "BK": 8, "WM": WM, "WN": WN, "TM": TM, "TN": TN},   # the exercise's tiles
)

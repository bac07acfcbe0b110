"""Exercise 02: the coalesced naive kernel, one thread per element of C, threadIdx.x along the columns.
Its lesson: every warp request of block 0 touches no more 32-byte sectors than its bytes need."""

from __future__ import annotations

from helpers.course.write_it import lessons
from helpers.course.write_it.exercise import Exercise, Launch

HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "A warp's 32 lanes issue each load together, and it is cheapest when their addresses are neighbours. "
    "Lanes of a warp have consecutive threadIdx.x: let that coordinate run along the direction in which B and "
    "C are contiguous in memory (along a row).",
    "Each thread computes one element of C: its column from the x coordinates (block and thread), its row "
    "from the y ones. A thread whose element lies outside C does nothing; the others add up the K products "
    "of their row of A and column of B, then write alpha times that sum, plus beta times the old element "
    "only where beta is not zero.",
)

EXERCISE = Exercise(
    hints=HINTS, previous=None, headline="load B sectors per request",
    id="02", stage="02", kernel="sgemm_coalesced", title="the coalesced naive kernel",
    launch=Launch(block=(32, 32), per_block=(32, 32)),
    rules=("one thread per element of C: threadIdx.x (and blockIdx.x) along the columns, threadIdx.y (and "
           "blockIdx.y) along the rows",),
    lesson=lessons.coalesced,
    lesson_text="coalesced: every global load and store of a warp touches the fewest 32-byte sectors its bytes "
                "fit in (block 0 of 64 × 64 × 64, traced)",
    course_kernel="02_naive_coalesced", course_config={"block_x": 32, "block_y": 32},
)

"""Exercise 02: the coalesced naive kernel, one thread per element of C, threadIdx.x along the columns.
Its lesson: every warp request of block 0 touches no more 32-byte sectors than its bytes need."""

from __future__ import annotations

from helpers.course.write_it import lessons
from helpers.course.write_it.exercise import Exercise, Launch

EXERCISE = Exercise(
    id="02", stage="02", kernel="sgemm_coalesced", title="the coalesced naive kernel",
    launch=Launch(block=(32, 32), per_block=(32, 32)),
    rules=("one thread per element of C: threadIdx.x (and blockIdx.x) along the columns, threadIdx.y (and "
           "blockIdx.y) along the rows",),
    lesson=lessons.coalesced,
    lesson_text="coalesced: every global load and store of a warp touches the fewest 32-byte sectors its bytes "
                "fit in (block 0 of 64 × 64 × 64, traced)",
    course_kernel="02_naive_coalesced", course_config={"block_x": 32, "block_y": 32},
)

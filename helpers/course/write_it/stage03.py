"""Exercise 03: shared-memory tiling with 16 x 16 tiles. Its lesson: block 0 loads each element of A
and B it uses once from global memory, and takes its multiply-adds from shared memory."""

from __future__ import annotations

from helpers.course.write_it import lessons
from helpers.course.write_it.exercise import Exercise, Launch

TILE = 16

EXERCISE = Exercise(
    id="03", stage="03", kernel="sgemm_tiled", title="shared-memory tiling",
    launch=Launch(block=(TILE, TILE), per_block=(TILE, TILE)),
    rules=(f"{TILE} × {TILE} tiles of A and B in shared memory",),
    lesson=lessons.loads_once(TILE),
    lesson_text="each element of A and B loaded from global memory once per block, the multiply-adds read "
                "from shared memory (block 0 of 64 × 64 × 64, traced)",
    course_kernel="03_smem_tiling", course_config={"tile": TILE},
)

"""Exercise 03: shared-memory tiling with 16 x 16 tiles. Its lesson: block 0 loads each element of A
and B it uses once from global memory, and takes its multiply-adds from shared memory."""

from __future__ import annotations

from helpers.course.write_it import lessons
from helpers.course.write_it.exercise import Exercise, Launch

TILE = 16

HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "Neighbouring threads of a block read the same rows of A and columns of B again and again from global "
    "memory. Let the block copy a tile of each into shared memory once, wait, and then take every "
    "multiply-add from the shared copies; step along K one tile at a time.",
    "Each thread copies one element of A's tile and one of B's per step (zero where it lies outside A or B), "
    "all wait at a barrier, each adds the TILE products of its row of As and its column of Bs, and all wait "
    "again before the next step overwrites the tiles.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="02", headline="A loads per element",
    id="03", stage="03", kernel="sgemm_tiled", title="shared-memory tiling",
    launch=Launch(block=(TILE, TILE), per_block=(TILE, TILE)),
    rules=(f"{TILE} × {TILE} tiles of A and B in shared memory",),
    lesson=lessons.loads_once(TILE),
    lesson_text="each element of A and B loaded from global memory once per block, the multiply-adds read "
                "from shared memory (block 0 of 64 × 64 × 64, traced)",
    course_kernel="03_smem_tiling", course_config={"tile": TILE},
)

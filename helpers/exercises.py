"""Exercise checkers. Each takes the learner's answer and returns Feedback: right, or what is
wrong with this particular answer. They never raise, so an exercise cell always runs, and the
solutions live here (computed, where they can be), not in the notebooks.

Naming: check_<stage>_exercise_<n>.
"""

from __future__ import annotations

from dataclasses import dataclass

from .figures import WARP_SIZE, warp_accesses
from .stages import CoalescedConfig, NaiveConfig, ceil_div


@dataclass(frozen=True)
class Feedback:
    ok: bool
    message: str

    def __str__(self) -> str:
        return f"{'Correct' if self.ok else 'Not yet'}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.ok


def _right(message: str) -> Feedback:
    return Feedback(True, message)


def _wrong(message: str) -> Feedback:
    return Feedback(False, message)


def _placeholder(answer) -> bool:
    if isinstance(answer, (tuple, list)):
        return any(_placeholder(a) for a in answer)
    return answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("", "?", "..."))


# ---- stage 02 --------------------------------------------------------------------------------
_KERNEL_NAMES = {"02_naive": "02_naive", "naive": "02_naive", "sgemm_naive": "02_naive",
                 "02_naive_coalesced": "02_naive_coalesced", "coalesced": "02_naive_coalesced",
                 "naive_coalesced": "02_naive_coalesced", "sgemm_naive_coalesced": "02_naive_coalesced"}


def check_02_exercise_1(answer) -> Feedback:
    """Which kernel makes consecutive lanes of a warp store to consecutive addresses of C?"""
    if _placeholder(answer):
        return _wrong("replace the placeholder with a kernel name: '02_naive' or '02_naive_coalesced'.")
    name = _KERNEL_NAMES.get(str(answer).strip().lower().removesuffix(".cu").removeprefix("kernels/"))
    if name is None:
        return _wrong(f"{answer!r} is not one of this stage's kernels; answer '02_naive' or '02_naive_coalesced'.")
    if name == "02_naive":
        return _wrong("in 02_naive, threadIdx.x picks the ROW, so lane i stores C[(row0 + i) * N + col]: "
                      "neighbouring lanes are N floats apart, one 32-byte sector each. Look again at which "
                      "index threadIdx.x feeds in each kernel.")
    return _right("in 02_naive_coalesced threadIdx.x picks the column, so lane i stores C[row * N + col0 + i]: "
                  "32 neighbouring floats, 128 bytes in four sectors.")


EX2_BLOCK, EX2_M, EX2_N = (16, 8), 100, 70


def check_02_exercise_2(grid) -> Feedback:
    """The grid (x, y) of 02_naive_coalesced with block (16, 8) for C of 100 rows x 70 columns."""
    if _placeholder(grid):
        return _wrong("replace the placeholder with a tuple (grid_x, grid_y).")
    try:
        g = tuple(int(v) for v in grid)
    except (TypeError, ValueError):
        return _wrong(f"give the grid as a tuple of whole numbers, like (3, 4); got {grid!r}.")
    if len(g) == 3 and g[2] == 1:
        g = g[:2]
    if len(g) != 2:
        return _wrong(f"give two numbers, (grid_x, grid_y) (or three with grid_z = 1); got {len(g)}.")
    bx, by = EX2_BLOCK
    want = CoalescedConfig(bx, by).grid(EX2_M, EX2_N)[:2]
    if g == want:
        return _right(f"x runs along the {EX2_N} columns in steps of {bx}, y along the {EX2_M} rows in steps "
                      f"of {by}, both rounded up; the bounds check idles the threads past the edge.")
    if g == NaiveConfig(bx, by).grid(EX2_M, EX2_N)[:2]:
        return _wrong("that is the grid of 02_naive, where x runs along the rows. In the coalesced kernel "
                      "threadIdx.x and blockIdx.x pick the column.")
    if g == (EX2_N // bx, EX2_M // by):
        return _wrong(f"right directions, but rounded down: {EX2_N} / {bx} is not whole, and the last "
                      f"{EX2_N % bx} columns (and {EX2_M % by} rows) need a block of their own. Round up: "
                      f"(n + b - 1) // b.")
    if g[::-1] == want:
        return _wrong("the two numbers are swapped: grid.x counts blocks along the columns (N), "
                      "grid.y along the rows (M).")
    if g[0] * bx < EX2_N or g[1] * by < EX2_M:
        return _wrong(f"{g} blocks of {bx} x {by} threads cover {g[0] * bx} columns x {g[1] * by} rows; "
                      f"C has {EX2_N} columns and {EX2_M} rows, so some elements are never computed.")
    return _wrong(f"{g} covers C but launches blocks that lie entirely outside it; the smallest grid is "
                  f"what you want (round up, no further).")


def check_02_exercise_3(block_x, block_y) -> Feedback:
    """A block shape that makes warp 0 of 02_naive_coalesced store C as badly as 02_naive does:
    32 sectors per store."""
    if _placeholder(block_x) or _placeholder(block_y):
        return _wrong("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        CoalescedConfig(block_x, block_y)
    except ValueError as e:
        return _wrong(f"that block cannot launch: {e}")
    w = warp_accesses("02_naive_coalesced", block_x, block_y)
    c = w.access("C")
    if c.sectors == WARP_SIZE:
        return _right(f"with blockDim.x = {block_x} a warp spans 32 rows of one column, so its store to C "
                      f"touches 32 sectors, exactly like 02_naive. Coalescing is a property of the mapping AND "
                      f"the block shape: the same source is fast or slow depending on blockDim.x.")
    if c.lanes < WARP_SIZE:
        return _wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                      f"{c.lanes} lanes, so it can touch at most {c.lanes} sectors. Use at least 32 threads.")
    rows = len({r for r, _ in w.elements})
    return _wrong(f"warp 0 covers {rows} row{'s' if rows > 1 else ''} x {ceil_div(c.lanes, rows)} columns of C and "
                  f"stores to {c.sectors} sectors. Each row costs a sector or more; to reach 32, the 32 lanes "
                  f"must lie in 32 different rows. Which blockDim.x makes consecutive lanes change row?")


def check_02_exercise_4(block_x, block_y) -> Feedback:
    """A block shape that makes warp 0 of 02_naive store C in 4 sectors, as coalesced as it gets."""
    if _placeholder(block_x) or _placeholder(block_y):
        return _wrong("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        NaiveConfig(block_x, block_y)
    except ValueError as e:
        return _wrong(f"that block cannot launch: {e}")
    w = warp_accesses("02_naive", block_x, block_y)
    a, b, c = w.accesses
    if c.lanes < WARP_SIZE:
        return _wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                      f"{c.lanes} lanes; use at least 32 threads so the warp is full.")
    if c.sectors <= 4:
        return _right(f"with blockDim.x = {block_x}, threadIdx.x takes only {block_x} value(s) inside a warp and "
                      f"threadIdx.y, which picks the COLUMN in 02_naive, takes the rest, so warp 0 covers {a.distinct} row(s) x {32 // a.distinct} columns and "
                      f"stores to {c.sectors} sectors (loads: A {a.sectors}, B {b.sectors} sectors). The "
                      f"'uncoalesced' kernel is coalesced with this block: a mapping is the index expressions "
                      f"and the block shape together. Try the shapes that work with the sliders on a GPU: "
                      f"their A and B counts differ, and so does their speed.")
    return _wrong(f"warp 0 spans {a.distinct} rows of C and stores to {c.sectors} sectors (4 is the least for "
                  f"32 floats). In 02_naive threadIdx.x picks the row: every step of threadIdx.x inside a warp "
                  f"adds a row. How small must blockDim.x be for the warp to stay within a few rows?")

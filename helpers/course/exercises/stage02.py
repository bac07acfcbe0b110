"""Stage 02's exercises (the naive kernels): which mapping coalesces, the grid, and the block shapes
that make each kernel's stores to C as bad, or as good, as they get. Warp 0's sectors come from a
trace of the kernel files, so an edited kernel gets answers that fit the edit."""

from __future__ import annotations

import math

from helpers.core.arch import WARP_SIZE
from helpers.core.configs import CoalescedConfig, NaiveConfig, ceil_div
from helpers.course.exercises.feedback import (Feedback, band_of, is_placeholder, parse_choice, printed, right,
                                               unanswered, whole, wrong)
from helpers.measure import accesses, facts

_KERNEL_NAMES = {"02_naive": "02_naive", "naive": "02_naive", "sgemm_naive": "02_naive",
                 "02_naive_coalesced": "02_naive_coalesced", "coalesced": "02_naive_coalesced",
                 "naive_coalesced": "02_naive_coalesced", "sgemm_naive_coalesced": "02_naive_coalesced"}


def check_02_exercise_1(answer) -> Feedback:
    """Which kernel makes consecutive lanes of a warp store to consecutive addresses of C?"""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with a kernel name: '02_naive' or '02_naive_coalesced'.")
    name = _KERNEL_NAMES.get(str(answer).strip().lower().removesuffix(".cu").removeprefix("kernels/"))
    if name is None:
        return wrong(f"{answer!r} is not one of this stage's kernels; answer '02_naive' or '02_naive_coalesced'.")
    if name == "02_naive":
        return wrong("in 02_naive, threadIdx.x picks the ROW, so lane i stores C[(row0 + i) * N + col]: "
                     "neighbouring lanes are N floats apart, one 32-byte sector each. Look again at which "
                     "index threadIdx.x feeds in each kernel.")
    return right("in 02_naive_coalesced threadIdx.x picks the column, so lane i stores C[row * N + col0 + i]: "
                 "32 neighbouring floats, 128 bytes in four sectors.")


EX2_BLOCK, EX2_M, EX2_N = (16, 8), 100, 70


def _ex2_grid() -> tuple[int, int]:
    return CoalescedConfig(*EX2_BLOCK).grid(EX2_M, EX2_N)[:2]


def check_02_exercise_2(grid) -> Feedback:
    """The grid (x, y) of 02_naive_coalesced with block (16, 8) for C of 100 rows x 70 columns."""
    if is_placeholder(grid):
        return unanswered("replace the placeholder with a tuple (grid_x, grid_y).")
    try:     # whole numbers: (5.9, 13.2) is no grid, however close int() would bring it
        g = tuple(whole(v) for v in grid)
    except (TypeError, ValueError) as e:
        return wrong(f"give the grid as a tuple of whole numbers, like (3, 4); got {grid!r}"
                     + (f" ({e})." if isinstance(e, ValueError) else "."))
    if len(g) == 3 and g[2] == 1:
        g = g[:2]
    if len(g) != 2:
        return wrong(f"give two numbers, (grid_x, grid_y) (or three with grid_z = 1); got {len(g)}.")
    bx, by = EX2_BLOCK
    want = _ex2_grid()
    if g == want:
        return right(f"x runs along the {EX2_N} columns in steps of {bx}, y along the {EX2_M} rows in steps "
                     f"of {by}, both rounded up; the bounds check idles the threads past the edge.")
    if g == NaiveConfig(bx, by).grid(EX2_M, EX2_N)[:2]:
        return wrong("that is the grid of 02_naive, where x runs along the rows. In the coalesced kernel "
                     "threadIdx.x and blockIdx.x pick the column.")
    if g == (EX2_N // bx, EX2_M // by):
        return wrong(f"right directions, but rounded down: {EX2_N} / {bx} is not whole, and the last "
                     f"{EX2_N % bx} columns (and {EX2_M % by} rows) need a block of their own. Round up: "
                     f"(n + b - 1) // b.")
    if g[::-1] == want:
        return wrong("the two numbers are swapped: grid.x counts blocks along the columns (N), "
                     "grid.y along the rows (M).")
    if g[0] * bx < EX2_N or g[1] * by < EX2_M:
        return wrong(f"{g} blocks of {bx} x {by} threads cover {g[0] * bx} columns x {g[1] * by} rows; "
                     f"C has {EX2_N} columns and {EX2_M} rows, so some elements are never computed.")
    return wrong(f"{g} covers C but launches blocks that lie entirely outside it; the smallest grid is "
                 f"what you want (round up, no further).")


def check_02_exercise_3(block_x, block_y) -> Feedback:
    """A block shape that makes warp 0 of 02_naive_coalesced store C as badly as 02_naive does:
    32 sectors per store."""
    if is_placeholder(block_x) or is_placeholder(block_y):
        return unanswered("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        CoalescedConfig(block_x, block_y)
    except ValueError as e:
        return wrong(f"that block cannot launch: {e}")
    w = accesses.stage02_warp0("02_naive_coalesced", block_x, block_y)
    sectors = round(w.store_c.mean_sectors)
    if sectors == WARP_SIZE:
        return right(f"with blockDim.x = {block_x} a warp spans 32 rows of one column, so its store to C "
                     f"touches 32 sectors, exactly like 02_naive. Coalescing is a property of the mapping AND "
                     f"the block shape: the same source is fast or slow depending on blockDim.x.")
    if w.lanes < WARP_SIZE:
        return wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                     f"{w.lanes} lanes, so it can touch at most {w.lanes} sectors. Use at least 32 threads.")
    return wrong(f"warp 0 covers {w.rows} row{'s' if w.rows > 1 else ''} x {ceil_div(w.lanes, w.rows)} columns of C and "
                 f"stores to {sectors} sectors. Each row costs a sector or more; to reach 32, the 32 lanes "
                 f"must lie in 32 different rows. Which blockDim.x makes consecutive lanes change row?")


def check_02_exercise_4(block_x, block_y) -> Feedback:
    """A block shape that makes warp 0 of 02_naive store C in 4 sectors, as coalesced as it gets."""
    if is_placeholder(block_x) or is_placeholder(block_y):
        return unanswered("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        NaiveConfig(block_x, block_y)
    except ValueError as e:
        return wrong(f"that block cannot launch: {e}")
    w = accesses.stage02_warp0("02_naive", block_x, block_y)
    a, b, c = (round(x.mean_sectors) for x in (w.load_a, w.load_b, w.store_c))
    if w.lanes < WARP_SIZE:
        return wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                     f"{w.lanes} lanes; use at least 32 threads so the warp is full.")
    if c <= 4:
        return right(f"with blockDim.x = {block_x}, threadIdx.x takes only {block_x} value(s) inside a warp and "
                     f"threadIdx.y, which picks the COLUMN in 02_naive, takes the rest, so warp 0 covers {w.rows} "
                     f"row(s) x {WARP_SIZE // w.rows} columns and stores to {c} sectors (loads: A {a}, B {b} "
                     f"sectors). The 'uncoalesced' kernel is coalesced with this block: a mapping is the index "
                     f"expressions and the block shape together. Try the shapes that work with the sliders on a "
                     f"GPU: their A and B counts differ, and so does their speed.")
    return wrong(f"warp 0 spans {w.rows} rows of C and stores to {c} sectors (4 is the least for "
                 f"32 floats). In 02_naive threadIdx.x picks the row: every step of threadIdx.x inside a warp "
                 f"adds a row. How small must blockDim.x be for the warp to stay within a few rows?")


# ---- the prediction, before section 4 measures (issue 21): asked of the committed H200 run, not of this machine ----
PREDICTION_FILE = "results/02_naive_h200_2026-11-22.json"
PREDICTION_BANDS = {"a": (0.0, 2.0), "b": (2.0, 5.0), "c": (5.0, 20.0), "d": (20.0, math.inf)}
PREDICTION_CHOICES = {"a": "under 2 times", "b": "2 to 5 times", "c": "5 to 20 times", "d": "more than 20 times"}


def _prediction_measured() -> dict:
    """TFLOP/s of both kernels and cuBLAS at 4096³, and the speed-up, from PREDICTION_FILE (facts.coalescing_run_*)."""
    rates = {v: facts.value(f"coalescing_run_tflops/{v}/4096")
             for v in ("02_naive", "02_naive_coalesced", "cublas_sgemm")}
    return dict(rates, speedup=facts.value("coalescing_run_speedup/02_naive_coalesced/02_naive/4096"),
                pct=facts.value("coalescing_run_pct_cublas/02_naive_coalesced/4096"))


def _prediction_answer() -> str:
    return band_of(_prediction_measured()["speedup"], PREDICTION_BANDS)


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where the answer would show before its cell: the measured rates, or a speed-up in the right band."""
    m = _prediction_measured()
    low, high = PREDICTION_BANDS[_prediction_answer()]
    words = "ten|eleven|twelve|thirteen|fifteen" if (low, high) == (5.0, 20.0) else "(?!)"
    return [("the coalesced kernel's measured rate", printed(m["02_naive_coalesced"], "TFLOP/s")),
            ("a speed-up in the answer's band",
             (rf"(?i)\b(?:{words}|{'|'.join(str(n) for n in range(int(low), min(int(high), 100)))})(?:\.\d+)?\s*"
              rf"(?:times|×) (?:faster|the speed)")),
            ("a marked fact of the run", r"<!--\s*fact:\s*(?:ratio/)?coalescing_run_\w+/")]


def check_02_prediction(answer) -> Feedback:
    """A prediction before section 4 measures it: at 4096³ on an H200, how many times faster than 02_naive does
    02_naive_coalesced run? One letter of PREDICTION_CHOICES."""
    letter = parse_choice(answer, PREDICTION_CHOICES, "how many times faster 02_naive_coalesced runs than 02_naive")
    if isinstance(letter, Feedback):
        return letter
    m, want = _prediction_measured(), _prediction_answer()
    if letter == want:
        return right(f"{m['speedup']:.1f} times: 02_naive ran at {m['02_naive']:.2f} TFLOP/s and 02_naive_coalesced at "
                     f"{m['02_naive_coalesced']:.2f}, cuBLAS at {m['cublas_sgemm']:.1f} ({PREDICTION_FILE}: an NVIDIA "
                     f"H200, 2026-11-22, 4096³). Section 1's sectors predicted the band: 32 + 1 sectors per step of the "
                     f"loop against 1 + 4, 6.6 times, and 32 against 4 for each store to C. The same arithmetic, and "
                     f"the memory requests set the speed. Even coalesced, the kernel reaches {m['pct']:.1f} % of "
                     f"cuBLAS: every multiply-add still loads two floats.")
    side = "more" if letter > want else "less"
    return wrong(f"you expect {side} than the kernels' memory requests suggest. Both do the same arithmetic; what "
                 "differs is what each warp asks of memory. Count, in section 1's figure, the 32-byte sectors warp 0 "
                 "touches at one step of the k loop in each kernel, and take their ratio as a first estimate of the "
                 "ratio of the times: the work of a request in the load path grows with its sectors, even when the "
                 "caches hold them.")

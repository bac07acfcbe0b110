"""Exercise checkers. Each takes the learner's answer and returns Feedback: right, or what is
wrong with this particular answer. They never raise, so an exercise cell always runs, and the
solutions live here, not in the notebooks: computed from traces of the kernel files
(helpers.figures), so an edited kernel gets answers that fit the edit.

Naming: check_<stage>_exercise_<n>.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.measure import accesses
from helpers.core import configs
from helpers.core import arch
from helpers.core import stages
from pathlib import Path

from helpers.core.arch import WARP_SIZE
from helpers.core.paths import RESULTS_DIR
from helpers.core.configs import CoalescedConfig, NaiveConfig, ceil_div
from helpers.measure import intensity
from helpers.measure import memory
from helpers.measure import pipeline
from helpers.measure import trace
from helpers.run.gemm import launch_args
from helpers.measure import autotune
from helpers.views import ladder_report


@dataclass(frozen=True)
class Feedback:
    ok: bool
    message: str
    attempted: bool = True      # False: the answer is still the notebook's placeholder

    @property
    def status(self) -> str:
        """'right', 'wrong' or 'not attempted' (what helpers.teacher's grader reports)."""
        return "right" if self.ok else "wrong" if self.attempted else "not attempted"

    def __str__(self) -> str:
        return f"{'Correct' if self.ok else 'Not yet'}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.ok


def _right(message: str) -> Feedback:
    return Feedback(True, message)


def _wrong(message: str) -> Feedback:
    return Feedback(False, message)


AGAIN = " Then run the cell again: the checker says whether it is right, or what is wrong with it."


def unanswered(message: str) -> Feedback:
    """The answer is still the placeholder: say what to put there, and what happens next."""
    return Feedback(False, message + AGAIN, attempted=False)


def is_placeholder(answer) -> bool:
    if isinstance(answer, (tuple, list)):
        return any(is_placeholder(a) for a in answer)
    return answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("", "?", "..."))


# ---- stage 02 --------------------------------------------------------------------------------
_KERNEL_NAMES = {"02_naive": "02_naive", "naive": "02_naive", "sgemm_naive": "02_naive",
                 "02_naive_coalesced": "02_naive_coalesced", "coalesced": "02_naive_coalesced",
                 "naive_coalesced": "02_naive_coalesced", "sgemm_naive_coalesced": "02_naive_coalesced"}


def check_02_exercise_1(answer) -> Feedback:
    """Which kernel makes consecutive lanes of a warp store to consecutive addresses of C?"""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with a kernel name: '02_naive' or '02_naive_coalesced'.")
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
    if is_placeholder(grid):
        return unanswered("replace the placeholder with a tuple (grid_x, grid_y).")
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
    if is_placeholder(block_x) or is_placeholder(block_y):
        return unanswered("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        CoalescedConfig(block_x, block_y)
    except ValueError as e:
        return _wrong(f"that block cannot launch: {e}")
    w = accesses.stage02_warp0("02_naive_coalesced", block_x, block_y)
    sectors = round(w.store_c.mean_sectors)
    if sectors == WARP_SIZE:
        return _right(f"with blockDim.x = {block_x} a warp spans 32 rows of one column, so its store to C "
                      f"touches 32 sectors, exactly like 02_naive. Coalescing is a property of the mapping AND "
                      f"the block shape: the same source is fast or slow depending on blockDim.x.")
    if w.lanes < WARP_SIZE:
        return _wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                      f"{w.lanes} lanes, so it can touch at most {w.lanes} sectors. Use at least 32 threads.")
    return _wrong(f"warp 0 covers {w.rows} row{'s' if w.rows > 1 else ''} x {ceil_div(w.lanes, w.rows)} columns of C and "
                  f"stores to {sectors} sectors. Each row costs a sector or more; to reach 32, the 32 lanes "
                  f"must lie in 32 different rows. Which blockDim.x makes consecutive lanes change row?")


def check_02_exercise_4(block_x, block_y) -> Feedback:
    """A block shape that makes warp 0 of 02_naive store C in 4 sectors, as coalesced as it gets."""
    if is_placeholder(block_x) or is_placeholder(block_y):
        return unanswered("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        NaiveConfig(block_x, block_y)
    except ValueError as e:
        return _wrong(f"that block cannot launch: {e}")
    w = accesses.stage02_warp0("02_naive", block_x, block_y)
    a, b, c = (round(x.mean_sectors) for x in (w.load_a, w.load_b, w.store_c))
    if w.lanes < WARP_SIZE:
        return _wrong(f"a block of {block_x} x {block_y} = {block_x * block_y} threads gives warp 0 only "
                      f"{w.lanes} lanes; use at least 32 threads so the warp is full.")
    if c <= 4:
        return _right(f"with blockDim.x = {block_x}, threadIdx.x takes only {block_x} value(s) inside a warp and "
                      f"threadIdx.y, which picks the COLUMN in 02_naive, takes the rest, so warp 0 covers {w.rows} "
                      f"row(s) x {WARP_SIZE // w.rows} columns and stores to {c} sectors (loads: A {a}, B {b} "
                      f"sectors). The 'uncoalesced' kernel is coalesced with this block: a mapping is the index "
                      f"expressions and the block shape together. Try the shapes that work with the sliders on a "
                      f"GPU: their A and B counts differ, and so does their speed.")
    return _wrong(f"warp 0 spans {w.rows} rows of C and stores to {c} sectors (4 is the least for "
                  f"32 floats). In 02_naive threadIdx.x picks the row: every step of threadIdx.x inside a warp "
                  f"adds a row. How small must blockDim.x be for the warp to stay within a few rows?")


# ---- stage 03 --------------------------------------------------------------------------------
EX03_1_TILE = 16          # 03_smem_tiling with tile 16 against 02_naive_coalesced with a 16 x 16 block


def _pair(answer, what: str):
    """(int, int) from the learner's answer, or Feedback saying what is wrong with it."""
    if is_placeholder(answer):
        return unanswered(f"replace the placeholders with two whole numbers: {what}.")
    try:
        pair = tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        return _wrong(f"give two whole numbers as a tuple, like (3, 4): {what}; got {answer!r}.")
    if len(pair) != 2:
        return _wrong(f"give exactly two numbers, {what}; got {len(pair)}.")
    return pair


def _loads_per_element(name: str, fields: dict) -> int:
    v = stages.variant(name)
    n = accesses.TRACE_SIZE
    counts = accesses.global_load_counts(accesses.kernel_trace(v, v.config(**fields)), "A", n, n)
    used = counts[counts > 0]
    return round(used.mean()) if used.size else 0


def check_03_exercise_1(answer) -> Feedback:
    """(tiled, naive): how many times block 0 loads each element of A it uses from global memory,
    in 03_smem_tiling (tile 16) and in 02_naive_coalesced (block 16 x 16), M = N = K = 64."""
    pair = _pair(answer, "(loads per element in 03_smem_tiling, loads per element in 02_naive_coalesced)")
    if isinstance(pair, Feedback):
        return pair
    t = EX03_1_TILE
    tiled = _loads_per_element("03_smem_tiling", {"tile": t})
    naive = _loads_per_element("02_naive_coalesced", {"block_x": t, "block_y": t})
    n, got = accesses.TRACE_SIZE, pair
    if got == (tiled, naive):
        return _right(f"in 02_naive_coalesced every one of the {t} threads of a row of the block reads A[row][k] "
                      f"itself, {naive} loads of each element; in 03_smem_tiling one thread copies it into As and all "
                      f"{t} read it from shared memory: {tiled} load. Global loads drop by the tile size, {t}x.")
    if got == (naive, tiled):
        return _wrong("the two numbers are swapped: the first is the tiled kernel (03_smem_tiling).")
    if got[0] == n // t:
        return _wrong(f"{n // t} is the number of tiles along K (K / tile = {n} / {t}). Each element A[row][k] lies in "
                      f"exactly one of them: how many times is it copied into As?")
    if got[0] != tiled:
        return _wrong("in 03_smem_tiling, count the loads of A on the line `As[ty][tx] = ... *a`: "
                      f"for one tile k0, which (ty, tx) reads a given A[row][k0 + tx]? How many such threads are there?")
    if got[1] in (n, t * t):
        return _wrong(f"{got[1]} counts too many threads: A[row][k] is used by the threads computing row `row` of C "
                      f"in this block. How many columns of C does a {t} x {t} block cover?")
    return _wrong("the tiled count is right. For 02_naive_coalesced: every thread runs the whole k loop and reads "
                  f"A[row * K + k] itself. How many threads of the block share one row?")


EX03_2_TILE = 8           # warp 0's first load of As[ty][k] with tile 8


def _as_load(tile: int):
    v = stages.variant("03_smem_tiling")
    tr = accesses.kernel_trace(v, v.config(tile=tile))
    req = next(q for q in accesses.shared_requests(tr) if q.array == "As")
    return accesses.bank_view(tr, req)


def check_03_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of As[ty][k] in the inner loop, tile 8."""
    pair = _pair(answer, "(distinct words of As, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    t = EX03_2_TILE
    view = _as_load(t)
    words, wavefronts = view.distinct_words, view.report.wavefronts
    rows = WARP_SIZE // t
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        return _right(f"warp 0 is threadIdx.y = 0..{rows - 1} with threadIdx.x = 0..{t - 1} each. Lanes of one row "
                      f"read the same As[ty][k] (a broadcast), so the request holds {words} words; they are "
                      f"As[ty][k] = word ty * {t} + k, in banks {', '.join(str(int(b)) for b in sorted(set(view.banks)))}: "
                      f"all different, so {wavefronts} wavefront. ({view.lane_groups()}.)")
    if got_words != words:
        if got_words == 1:
            return _wrong(f"one word is the tile = 32 case, where warp 0 is a single row (ty = 0). With tile = {t} "
                          f"the 32 lanes of warp 0 are threads 0..31 of the {t} x {t} block: how many values of "
                          f"threadIdx.y do they have?")
        if got_words == WARP_SIZE:
            return _wrong("lanes that read the SAME address are one word, however many lanes read it. As[ty][k] "
                          "depends on ty only (k is the same for the whole warp at one step).")
        if got_words == t:
            return _wrong(f"{t} is how many lanes share each word (one row of the tile). The question is how many "
                          f"different words: how many rows (values of ty) does warp 0 span?")
        return _wrong(f"{got_words} words is not what warp 0 reads. Lane = threadIdx.x + {t} * threadIdx.y; "
                      f"As[ty][k] depends on ty only. How many values of ty does warp 0 hold?")
    if got_waves == got_words:
        return _wrong(f"{words} different words cost extra wavefronts only when two of them fall in the same bank. "
                      f"As[ty][k] is word ty * {t} + k of As: in which banks are the words of ty = 0..{rows - 1}?")
    if got_waves < 1:
        return _wrong("every request takes at least one wavefront.")
    return _wrong(f"the words are right ({words}). Now the banks: bank = word mod 32, word = ty * {t} + k. "
                  f"Wavefronts = the most different words any one bank must serve.")


# ---- stage 04 --------------------------------------------------------------------------------
# Exercise 1: the occupancy calculator by hand, for the default configuration with the register
# count the H200 run recorded for it (results/stages_04_05_h200_2026-11-22.json), so the answer
# does not depend on the compiler installed here.
EX04_1_REGISTERS = 80
EX04_1_ARCH = "sm_90"


def _whole_pair(answer, what: str):
    """(int, int) from the learner's answer, refusing fractions; or Feedback saying what is wrong."""
    pair = _pair(answer, what)
    if isinstance(pair, Feedback):
        return pair
    if any(isinstance(v, float) and not float(v).is_integer() for v in answer):
        return _wrong(f"give whole numbers: {what}; a fraction of a block or a warp cannot run.")
    return pair


def check_04_exercise_1(answer) -> Feedback:
    """(blocks, warps): how many blocks of the default 04 configuration, and so how many warps,
    an SM of compute capability 9.0 holds at once with 80 registers per thread."""
    pair = _whole_pair(answer, "(blocks per SM, warps per SM)")
    if isinstance(pair, Feedback):
        return pair
    v = stages.variant("04_1d_thread_tiling")
    c = v.default
    occ = arch.occupancy(EX04_1_ARCH, c.threads(), EX04_1_REGISTERS, c.static_shared_bytes())
    a = arch.arch_limits(EX04_1_ARCH)
    limits = dict(occ.limits)
    want = (occ.active_blocks, occ.active_warps)
    per_block = occ.warps_per_block
    blocks, warps = pair
    per_warp = -(-EX04_1_REGISTERS * WARP_SIZE // a.register_unit) * a.register_unit
    per_file = (a.registers_per_sm // a.sub_partitions) // per_warp
    if pair == want:
        return _right(f"{EX04_1_REGISTERS} registers x 32 lanes = {per_warp} per warp; each of the "
                      f"{a.sub_partitions} register files of {a.registers_per_sm // a.sub_partitions} holds "
                      f"{per_file} such warps, so the SM has registers for {per_file * a.sub_partitions} warps: "
                      f"{occ.active_blocks} whole blocks of "
                      f"{per_block} warps = {occ.active_warps} of {occ.max_warps} warp slots, "
                      f"{100 * occ.occupancy:.1f}% occupancy. Registers are the limit: warp slots would allow "
                      f"{limits['warps']} blocks and shared memory {limits['shared memory']}.")
    if blocks * per_block != warps:
        return _wrong(f"warps come in whole blocks: a block of {c.threads()} threads is {per_block} warps, so "
                      f"{blocks} block{'s' if blocks != 1 else ''} make{'s' if blocks == 1 else ''} "
                      f"{blocks * per_block} warps, not {warps}.")
    if blocks == limits["warps"]:
        return _wrong(f"{blocks} blocks fill the SM's {occ.max_warps} warp slots, but that is only one of the limits. "
                      f"Each thread needs {EX04_1_REGISTERS} registers: how many warps' worth does the SM's "
                      f"{a.registers_per_sm}-register file hold?")
    if blocks == limits["blocks"]:
        return _wrong(f"{blocks} is the most blocks an SM can hold of any kernel; registers and warp slots "
                      f"allow fewer here.")
    if blocks == limits["shared memory"]:
        return _wrong(f"shared memory allows {blocks} blocks ({c.static_shared_bytes()} B each plus the driver's "
                      f"1 KiB), but registers allow fewer. The SM runs as many blocks as the scarcest resource allows.")
    if blocks == want[0] + 1:
        return _wrong(f"{a.registers_per_sm} / ({EX04_1_REGISTERS} x {c.threads()}) = "
                      f"{a.registers_per_sm / (EX04_1_REGISTERS * c.threads()):.2f}: round down. A block whose "
                      f"registers do not all fit does not start.")
    return _wrong(f"{blocks} block{'s' if blocks != 1 else ''} is not what fits. Work out each limit: warp slots "
                  f"({occ.max_warps} per SM, {per_block} per block), registers ({a.registers_per_sm} per SM, "
                  f"{EX04_1_REGISTERS} per thread, {c.threads()} threads per block) and shared memory; the SM holds "
                  f"the fewest blocks any of them allows.")


EX04_2_CONFIG = dict(BM=64, BN=16, BK=16, TM=4)   # a narrow block tile: warp 0 spans two rows of threads


def _first_shared_load(variant_name: str, fields: dict, array: str, M: int = accesses.TRACE_SIZE):
    v = stages.variant(variant_name)
    tr = accesses.kernel_trace(v, v.config(**fields), M)
    req = next(q for q in accesses.shared_requests(tr) if q.array == array)
    return accesses.bank_view(tr, req)


def check_04_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of As[threadRow * TM + i][k] in
    04_1d_thread_tiling with BM = 64, BN = 16, BK = 16, TM = 4."""
    pair = _pair(answer, "(distinct words of As, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    c = EX04_2_CONFIG
    view = _first_shared_load("04_1d_thread_tiling", c, "As")
    words, wavefronts = view.distinct_words, view.report.wavefronts
    rows = -(-WARP_SIZE // c["BN"])
    apart = c["TM"] * c["BK"]
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        banks = sorted(set(int(b) for b in view.banks))
        return _right(f"with BN = {c['BN']}, threadCol = tid % {c['BN']}, so warp 0 holds threadRow 0 to {rows - 1} and "
                      f"reads As[threadRow * {c['TM']}][k]: {words} words, {apart} words apart (TM x BK), in bank"
                      f"{'s' if len(banks) > 1 else ''} {', '.join(map(str, banks))}. Different words in one bank "
                      f"are served one after the other: {wavefronts} wavefronts, a {view.report.ways}-way conflict. "
                      f"({view.lane_groups()}.)")
    if got_words != words:
        if got_words == 1:
            return _wrong(f"one word is the case BN >= 32, where warp 0 lies in one row of threads. With BN = {c['BN']}, "
                          f"threadCol = tid % {c['BN']}: how many values of threadRow do lanes 0 to 31 have?")
        if got_words == WARP_SIZE:
            return _wrong("lanes that read the SAME address are one word, however many lanes read it. "
                          "As[threadRow * TM + i][k] depends on threadRow only (i and k are the same for the warp).")
        if got_words == c["BN"]:
            return _wrong(f"{c['BN']} is how many lanes share each word (one row of threads). How many different "
                          f"words: how many rows of threads does warp 0 span?")
        return _wrong(f"{got_words} words is not what warp 0 reads. threadRow = tid / {c['BN']}, and the word is "
                      f"(threadRow * {c['TM']} + i) * {c['BK']} + k: how many values of threadRow does warp 0 hold?")
    if got_waves == 1:
        return _wrong(f"the words are right ({words}). Are they in different banks? Word = row * BK + k, and the rows "
                      f"are threadRow * TM: the words lie TM x BK = {apart} apart. Bank = word mod 32.")
    if got_waves < 1:
        return _wrong("every request takes at least one wavefront.")
    return _wrong(f"the words are right ({words}). Wavefronts = the most different words any one bank must serve; "
                  f"the words are {apart} apart and bank = word mod 32.")


# ---- stage 05 --------------------------------------------------------------------------------
EX05_1_TILES = ((16, 4), (8, 8))   # thread tiles (TM, TN) with the same 64 results per thread


def _fmas_per_shared_load(TM: int, TN: int) -> float:
    """Multiply-adds per 4-byte shared load of 05_2d_thread_tiling with this thread tile, from
    helpers.intensity at a size every tile divides."""
    v = stages.variant("05_2d_thread_tiling")
    i = intensity.intensity(v, 4096, 4096, 4096, v.config(TM=TM, TN=TN))
    return (i.flops / 2) / (i.smem_bytes / 4)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.01 * max(1.0, abs(b))


def check_05_exercise_1(answer) -> Feedback:
    """(for 16 x 4, for 8 x 8): multiply-adds per shared-memory load of one thread in the inner
    loop of 05_2d_thread_tiling, thread tiles of the same 64 results."""
    (tm1, tn1), (tm2, tn2) = EX05_1_TILES
    what = f"(multiply-adds per shared load for {tm1} x {tn1}, for {tm2} x {tn2})"
    if is_placeholder(answer):
        return unanswered(f"replace the placeholders with two numbers: {what}.")
    try:
        got = tuple(float(x) for x in answer)
    except (TypeError, ValueError):
        return _wrong(f"give two numbers as a tuple, like (1.5, 2): {what}; got {answer!r}.")
    if len(got) != 2:
        return _wrong(f"give exactly two numbers, {what}; got {len(got)}.")
    want = (_fmas_per_shared_load(tm1, tn1), _fmas_per_shared_load(tm2, tn2))
    a, b = got
    if _close(a, want[0]) and _close(b, want[1]):
        return _right(f"per step of k a thread loads TM + TN values ({tm1 + tn1} and {tm2 + tn2}) and does TM x TN = "
                      f"64 multiply-adds: {want[0]:.3g} and {want[1]:.3g} per load. For a fixed number of results the "
                      f"square tile reuses most (TM * TN / (TM + TN) is largest when TM = TN); stage 04's column "
                      f"never reaches 1.")
    if _close(a, want[1]) and _close(b, want[0]):
        return _wrong(f"the two numbers are swapped: the first is the {tm1} x {tn1} tile.")
    if _close(a, tm1 * tn1) and _close(b, tm2 * tn2):
        return _wrong("64 is the multiply-adds per step of k; divide by the shared loads that feed them.")
    if _close(a, tm1 + tn1) and _close(b, tm2 + tn2):
        return _wrong("those are the shared loads per step (TM + TN); the question is multiply-adds per load.")
    if _close(a, want[0] / 2) and _close(b, want[1] / 2):
        return _wrong("those are FLOP per shared byte (the intensity table's column): a multiply-add is 2 FLOP and "
                      "a load 4 bytes, so multiply-adds per load are twice that.")
    if _close(a, tm1 / (tm1 + 1)) or _close(b, tm2 / (tm2 + 1)):
        return _wrong("TM / (TM + 1) is stage 04, where a thread loads one value of B per step. Here it loads TN "
                      "values of B and TM of A, and every pair of them is a multiply-add.")
    return _wrong("per step of k, count a thread's shared loads (a[i] for i < TM, b[j] for j < TN) and its "
                  f"multiply-adds (every i with every j), then divide.")


EX05_2_CONFIG = dict(BM=128, BN=128, BK=16, TM=8, TN=8)   # 16 threads per row: warp 0 spans two rows
EX05_2_SIZE = 128


def check_05_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of Bs[k][threadCol * TN + j] in
    05_2d_thread_tiling with BM = BN = 128, BK = 16, TM = TN = 8."""
    pair = _pair(answer, "(distinct words of Bs, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    c = EX05_2_CONFIG
    view = _first_shared_load("05_2d_thread_tiling", c, "Bs", EX05_2_SIZE)
    words, wavefronts = view.distinct_words, view.report.wavefronts
    per_row = c["BN"] // c["TN"]
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        banks = sorted(set(int(b) for b in view.banks))
        return _right(f"BN / TN = {per_row} threads per row, so lanes i and i + {per_row} have the same threadCol and "
                      f"read the same word: {words} words, threadCol * {c['TN']} = 0, {c['TN']}, {2 * c['TN']}, ... "
                      f"They fall in banks {', '.join(map(str, banks))} only, {words // len(banks)} different words in "
                      f"each: {wavefronts} wavefronts, a {view.report.ways}-way conflict. Stage 06 takes up "
                      f"conflicts like this one.")
    if got_words != words:
        if got_words == WARP_SIZE:
            return _wrong(f"lanes with the same threadCol read the same word. threadCol = tid % (BN / TN) = "
                          f"tid % {per_row}: which lanes share one?")
        if got_words == c["TN"]:
            return _wrong(f"one request is one j for the whole warp: b[j] = Bs[k][threadCol * {c['TN']} + j] with the "
                          f"same j in every lane. Count the different threadCol values in warp 0.")
        return _wrong(f"{got_words} words is not what warp 0 reads. The word is threadCol * {c['TN']} + j (j and k "
                      f"fixed), threadCol = tid % {per_row}: how many different values in lanes 0 to 31?")
    if got_waves == 1:
        return _wrong(f"the words are right ({words}), but they are {c['TN']} apart: which banks (word mod 32) do "
                      f"they fall in?")
    if got_waves == words:
        return _wrong(f"{words} wavefronts would mean {words} words in one bank. Words {c['TN']} apart fall in "
                      f"32 / {c['TN']} = {32 // c['TN']} banks: how many words does each get?")
    if got_waves < 1:
        return _wrong("every request takes at least one wavefront.")
    return _wrong(f"the words are right ({words}). Wavefronts = the most different words any one bank must serve; "
                  f"bank = word mod 32, and the words are threadCol * {c['TN']}.")


# ---- stage 07 --------------------------------------------------------------------------------
def _stage07_global_loads(M: int, N: int, K: int, fields: dict | None = None, first_tile: bool = False) -> dict:
    """{array: (requests, widest bytes per lane)} of the global loads of block 0 of 07_vectorized
    (default configuration with `fields` changed), traced on M x N x K; with first_tile, only the
    loads before the block's first barrier (the copy of the first tiles)."""
    v = stages.variant("07_vectorized")
    tr = accesses.kernel_trace(v, v.config(**(fields or {})), M, N, K)
    out: dict[str, tuple[int, int]] = {}
    for q in memory.requests(tr, "global"):
        if q.op != "load" or q.block != tr.blocks[0] or (first_tile and q.epoch != 0):
            continue
        n, width = out.get(q.array, (0, 0))
        out[q.array] = (n + 1, max(width, q.size))
    return out


def _ex07_1_shapes() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Two problems one block tile big, two tiles deep: K % 4 == 0, and K one less."""
    c = stages.variant("07_vectorized").default
    return (c.BM, c.BN, 2 * c.BK), (c.BM, c.BN, 2 * c.BK - 1)


def check_07_exercise_1(answer) -> Feedback:
    """(with 16-byte loads, with the 4-byte fallback): global load requests the whole block issues
    to copy the first tile of A (BM x BK floats), default configuration of 07_vectorized."""
    pair = _whole_pair(answer, "(requests with K % 4 == 0, requests with K % 4 != 0)")
    if isinstance(pair, Feedback):
        return pair
    c = stages.variant("07_vectorized").default
    wide, narrow = _ex07_1_shapes()
    (n16, w16), (n4, w4) = (_stage07_global_loads(*s, first_tile=True)["A"] for s in (wide, narrow))
    want = (n16, n4)
    warps = -(-c.threads() // WARP_SIZE)
    floats = c.BM * c.BK
    got16, got4 = pair
    if pair == want:
        return _right(f"A's tile is {c.BM} x {c.BK} = {floats} floats, {floats // 4} runs of 4. With K % 4 == 0 a lane "
                      f"reads a run with one {w16}-byte load, so each of the {c.threads()} threads copies {floats // 4 // c.threads()} "
                      f"run(s): {n16} warp requests. With K % 4 != 0 the rows of A start off the 16-byte grid and each "
                      f"float of a run is its own {w4}-byte load: {n4} requests, four times as many, for the same bytes.")
    if pair == want[::-1]:
        return _wrong("the two numbers are swapped: the first is the 16-byte path (K % 4 == 0), which needs fewer "
                      "requests.")
    if pair == (n16 // warps, n4 // warps):
        return _wrong(f"those are the requests of one warp. The block has {warps} warps, and each issues its own.")
    if pair == (floats // 4, floats):
        return _wrong(f"{floats // 4} and {floats} count the lanes' accesses. A request is one instruction of a warp: "
                      f"{WARP_SIZE} lanes at once.")
    if pair == (2 * n16, 2 * n4):
        return _wrong("that is both tiles of a K = 2 x BK problem; count the copy of the first tile only.")
    if got16 == got4:
        return _wrong("the fallback (load4 with aligned == false) reads each of the 4 floats of a run with its own "
                      "4-byte load: it cannot take as few requests as the 16-byte path.")
    if got16 == n16:
        return _wrong(f"the 16-byte count is right ({n16}). Without alignment, how many load instructions does a lane "
                      f"need for one run of 4 floats?")
    if got4 == n4:
        return _wrong(f"the 4-byte count is right ({n4}). With 16-byte loads one instruction moves a whole run of 4 "
                      f"floats: how many runs does the block copy, and how many lanes does a warp have?")
    return _wrong(f"count runs of 4 floats in A's {c.BM} x {c.BK} tile, share them among the {c.threads()} threads "
                  f"({warps} warps of {WARP_SIZE} lanes), then count warp instructions: one per run with 16-byte loads, "
                  f"one per float without.")


EX07_2_SIZE = (1000, 1002, 1024)   # M, N, K: which matrices take the 16-byte path?
_MATRICES = ("A", "B", "C")


def _matrix_set(answer):
    """A set of matrix names from 'A', 'A, C', ['A', 'C'], {'a'}, '' or 'none'; or Feedback."""
    if answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("?", "...")):
        return unanswered("replace the placeholder with the matrices read with 16-byte loads, e.g. {'A'} or "
                      "'A, C'; set() or 'none' if none of them.")
    if isinstance(answer, str):
        text = answer.strip().upper()
        items = [] if text in ("", "NONE") else [t for t in text.replace(",", " ").split() if t]
        if len(items) == 1 and len(items[0]) > 1 and set(items[0]) <= set(_MATRICES):
            items = list(items[0])   # "AC"
    elif isinstance(answer, (set, frozenset, list, tuple)):
        if not all(isinstance(a, str) for a in answer):
            return _wrong(f"name the matrices with strings 'A', 'B', 'C'; got {answer!r}.")
        items = [a.strip().upper() for a in answer]
    else:
        return _wrong(f"give the matrices as a set of names like {{'A', 'C'}} or a string like 'A, C'; got {answer!r}.")
    unknown = sorted(set(items) - set(_MATRICES))
    if unknown:
        return _wrong(f"{', '.join(unknown)} is not one of the kernel's matrices; they are A, B and C.")
    return set(items)


def _ex07_2_wide() -> set:
    """The matrices 07_vectorized reads with 16-byte loads at EX07_2_SIZE, traced on a small problem
    with the same K % 4 and N % 4 (what decides the alignment of every row), beta != 0."""
    M, N, K = EX07_2_SIZE
    c = stages.variant("07_vectorized").default
    small = (c.BM, c.BN + N % 4, c.BK + K % 4)
    return {a for a, (_, width) in _stage07_global_loads(*small).items() if width == 16}


def check_07_exercise_2(answer) -> Feedback:
    """Which of A, B, C 07_vectorized reads with 16-byte loads for M x N x K = EX07_2_SIZE."""
    got = _matrix_set(answer)
    if isinstance(got, Feedback):
        return got
    M, N, K = EX07_2_SIZE
    want = _ex07_2_wide()
    show = lambda s: "{" + ", ".join(repr(x) for x in sorted(s)) + "}" if s else "none"   # noqa: E731
    rows = {"A": ("K", K), "B": ("N", N), "C": ("N", N)}
    why = "; ".join(f"{a}: rows of {d} = {n} floats, {4 * n} bytes, {'a' if n % 4 == 0 else 'not a'} multiple of 16"
                    for a, (d, n) in rows.items())
    if got == want:
        return _right(f"{show(want)}. A run of 4 floats starting at column c (a multiple of 4) of row r lies at byte "
                      f"4(r x row length + c) from the start: 16-byte aligned in every row only when the row length is "
                      f"a multiple of 4. {why}. M plays no part. The others are read 4 bytes at a time, still correct.")
    if ({"B", "C"} & got) and not {"B", "C"} <= got:
        return _wrong("B and C both have rows of N floats, so their rows start on the same grid: they take the same "
                      "path, both or neither.")
    if got == {"B", "C"} and want == {"A"} or got == {"A"} and want == {"B", "C"}:
        return _wrong("swapped: A is M x K, so its rows are K floats long; B (K x N) and C (M x N) have rows of N.")
    if got == set(_MATRICES):
        odd = [(d, n) for d, n in (("K", K), ("N", N)) if n % 4]
        return _wrong("; ".join(f"{d} = {n} is not a multiple of 4 (even is not enough): in a matrix with rows of {n} "
                                f"floats, row 1 starts {4 * n} bytes in, {4 * n % 16} bytes past a 16-byte boundary"
                                for d, n in odd) + ".")
    if not got:
        return _wrong(f"the kernel checks each matrix on its own: {why}.")
    return _wrong(f"the rule is per matrix: A's rows are K floats long, B's and C's N floats; a row of n floats keeps "
                  f"every run of 4 on the 16-byte grid when n % 4 == 0. Here M = {M}, N = {N}, K = {K}.")


EX07_3_CONFIG = dict(BM=128, BN=128, BK=16, TM=8, TN=16)   # 8 threads per row of the block


def _ex07_3_wavefronts() -> tuple[int, int, int, int]:
    """(wavefronts in 06's layout, in 07's, ways in 06's, ways in 07's) of warp 0's first load of
    Bs as one 16-byte load per lane; 06_transposed_a's scalar b[0] request is counted as the
    16-byte load b[0..3] the compiler may merge it into."""
    import dataclasses
    out = []
    for name in ("06_transposed_a", "07_vectorized"):
        v = stages.variant(name)
        tr = accesses.kernel_trace(v, v.config(**EX07_3_CONFIG), accesses.TRACE_SIZE * 2)
        req = next(q for q in accesses.shared_requests(tr) if q.array == "Bs")
        out.append(memory.banks(dataclasses.replace(req, size=16)))
    return out[0].wavefronts, out[1].wavefronts, out[0].ways, out[1].ways


def check_07_exercise_3(answer) -> Feedback:
    """(06's layout, 07's layout): wavefronts of warp 0's first 16-byte load of Bs with
    BM = BN = 128, BK = 16, TM = 8, TN = 16."""
    pair = _whole_pair(answer, "(wavefronts in 06_transposed_a's layout, wavefronts in 07_vectorized's layout)")
    if isinstance(pair, Feedback):
        return pair
    c = EX07_3_CONFIG
    w06, w07, ways06, ways07 = _ex07_3_wavefronts()
    per_row = c["BN"] // c["TN"]
    quarters = WARP_SIZE // 8
    if pair == (w06, w07):
        return _right(f"a 16-byte request is served a quarter warp (8 lanes, 128 bytes) at a time: at best {quarters} "
                      f"wavefronts. In 06's layout lane i of a quarter starts at word {c['TN']} x i (TN = {c['TN']} "
                      f"contiguous columns each), so 8 lanes x 4 words fall in {32 // c['TN'] * 4} banks, "
                      f"{ways06} words in each: {ways06}-way, {w06} wavefronts. In 07's they start at word 4 x i: "
                      f"32 consecutive words, every bank once, {w07} wavefronts.")
    if pair == (w07, w06):
        return _wrong("the two numbers are swapped: the first is 06_transposed_a's layout (TN contiguous columns per "
                      "thread).")
    if pair == (ways06, ways07):
        return _wrong(f"{ways06} and {ways07} are the ways of the worst conflict in a quarter warp. Wavefronts count "
                      f"all passes of the request: {quarters} quarter warps, each taking as many passes as its worst "
                      f"bank.")
    if min(pair) < quarters:
        return _wrong(f"a 16-byte request is served 8 lanes at a time (8 x 16 = 128 bytes, the 32 banks once), so "
                      f"a warp's request takes at least {quarters} wavefronts.")
    if pair[1] != w07:
        return _wrong(f"in 07's layout the {per_row} threads of a row take consecutive runs of 4 columns in each band: "
                      f"the 8 lanes of a quarter read 32 consecutive words. Which banks are they in?")
    return _wrong(f"07's count is right. In 06's layout lane i (threadCol = i % {per_row}) reads words "
                  f"{c['TN']} i .. {c['TN']} i + 3: bank = word mod 32. How many different words land in one bank "
                  f"within a quarter warp, and how many quarters are there?")


# ---- stage 06 --------------------------------------------------------------------------------
EX06_1_CONFIG = dict(BM=128, BN=128, BK=8, TM=8, TN=8)   # warp 0 holds two thread rows: rows 0 and TM of As
EX06_1_PADS = (1, 2, 3, 4, 8)


def _first_shared_store(variant_name: str, fields: dict, array: str, M: int = accesses.TRACE_SIZE):
    v = stages.variant(variant_name)
    tr = accesses.kernel_trace(v, v.config(**fields), M)
    req = next(q for q in accesses.shared_requests(tr, op="store") if q.array == array)
    return accesses.bank_view(tr, req)


def _pads(answer):
    """A set of whole numbers from the learner's answer, or Feedback saying what is wrong with it."""
    if is_placeholder(answer) or (isinstance(answer, (set, frozenset)) and any(is_placeholder(a) for a in answer)):
        return unanswered(f"replace the placeholder with the values of PAD that work, as a set like {{1, 8}}; "
                      f"choose from {', '.join(map(str, EX06_1_PADS))}.")
    items = [answer] if isinstance(answer, (int, float)) and not isinstance(answer, bool) else answer
    try:
        values = [float(a) for a in items]
    except (TypeError, ValueError):
        return _wrong(f"give the values of PAD as a set of whole numbers, like {{1, 8}}; got {answer!r}.")
    if any(isinstance(a, bool) for a in items) or any(not v.is_integer() for v in values):
        return _wrong(f"PAD is a whole number of floats; give a set of whole numbers, like {{1, 8}}; got {answer!r}.")
    return {int(v) for v in values}


def check_06_exercise_1(answer) -> Feedback:
    """Which of PAD = 1, 2, 3, 4, 8 leave warp 0's first load of As[threadRow * TM + i][k] in
    06_padded (BM = BN = 128, BK = 8, TM = TN = 8) conflict-free, as the source writes it?"""
    pads = _pads(answer)
    if isinstance(pads, Feedback):
        return pads
    c = EX06_1_CONFIG
    views = {p: _first_shared_load("06_padded", dict(c, PAD=p), "As") for p in EX06_1_PADS}
    apart = {p: max(int(w) for w in v.words) - min(int(w) for w in v.words)    # words between the thread rows
             for p, v in views.items()}
    want = {p for p, v in views.items() if v.report.ways == 1}
    bad = sorted(set(EX06_1_PADS) - want)
    others = sorted(pads - set(EX06_1_PADS))
    if others:
        return _wrong(f"choose among PAD = {', '.join(map(str, EX06_1_PADS))}; "
                      f"{', '.join(map(str, others))} {'is' if len(others) == 1 else 'are'} not among them.")
    if pads == want:
        return _right(f"warp 0 holds two thread rows (BN / TN = {c['BN'] // c['TN']} threads per row), which read rows "
                      f"0 and TM = {c['TM']} of As. With rows BK + PAD floats long those are TM x (BK + PAD) words "
                      f"apart: " + ", ".join(f"PAD = {p}: {apart[p]} (bank {apart[p] % 32})" for p in EX06_1_PADS)
                      + f". Only a distance that is a multiple of 32 puts both words in one bank, so PAD = "
                      f"{', '.join(map(str, sorted(want)))} work{'s' if len(want) == 1 else ''} and "
                      f"{', '.join(map(str, bad))} do{'es' if len(bad) == 1 else ''} not. The row length need not be "
                      f"odd. Which of the good ones keeps every row 8 bytes aligned, so that the compiler can still "
                      f"read As[row][k] and As[row][k + 1] with one 8-byte load? Exercise 3 times it.")
    for p in bad:
        if p in pads:
            return _wrong(f"PAD = {p} makes rows of {c['BK'] + p} floats, so the two thread rows of warp 0 read words "
                          f"{c['TM']} x {c['BK'] + p} = {apart[p]} apart: {apart[p]} is {apart[p] // 32} x 32, the same "
                          f"bank. " + ("PAD = 4 is the popular choice (rows stay 16 bytes aligned), and here it "
                                       "fixes nothing." if p == 4 else
                                       f"With TM = {c['TM']}, any row length that is a multiple of "
                                       f"{next(n for n in range(1, 33) if c['TM'] * n % 32 == 0)} floats does that."))
    missing = sorted(want - pads)
    if missing:
        return _wrong(f"{' and '.join(f'PAD = {p}' for p in missing)} work{'s' if len(missing) == 1 else ''} too: "
                      + "; ".join(f"with PAD = {p} the thread rows are {c['TM']} x {c['BK'] + p} = {apart[p]} words "
                                  f"apart, bank {apart[p] % 32} against bank 0" for p in missing)
                      + ". Any distance that is not a multiple of 32 separates the banks; an odd row length is "
                        "one way, not the only one.")
    return _wrong("not yet. Warp 0 reads rows 0 and TM of As at one step; with rows of BK + PAD floats they are "
                  "TM x (BK + PAD) words apart. Bank = word mod 32: which of the choices make that distance a "
                  "multiple of 32?")


EX06_2_FIELDS = ({"BK": 8}, {"BK": 16})   # 06_transposed_a, 128 x 128 block tile, 8 x 8 thread tiles


def check_06_exercise_2(answer) -> Feedback:
    """(ways for BK = 8, ways for BK = 16): the bank conflict of warp 0's first store into the
    transposed tile As[c][r] in 06_transposed_a, BM = BN = 128, TM = TN = 8."""
    pair = _pair(answer, "(ways of the store for BK = 8, ways for BK = 16)")
    if isinstance(pair, Feedback):
        return pair
    views = [_first_shared_store("06_transposed_a", f, "As") for f in EX06_2_FIELDS]
    want = tuple(v.report.ways for v in views)
    banks = tuple(v.banks_used for v in views)
    bm = stages.variant("06_transposed_a").default.BM
    (bk8, bk16) = (f["BK"] for f in EX06_2_FIELDS)
    if pair == want:
        return _right(f"lane t copies element e = t of the tile: r = t / BK, c = t % BK, and writes As[c][r], word "
                      f"c x {bm} + r. {bm} is a multiple of 32, so the bank is r alone: with BK = {bk8} the 32 lanes "
                      f"cover r = 0..{32 // bk8 - 1}, {banks[0]} banks of {want[0]} words each ({want[0]}-way); with "
                      f"BK = {bk16}, r = 0..{32 // bk16 - 1}, {banks[1]} banks of {want[1]} ({want[1]}-way). The reads "
                      f"it buys are conflict-free; the copy pays for them once per tile.")
    if pair == want[::-1]:
        return _wrong(f"the two numbers are swapped: the first is BK = {bk8}.")
    if pair == (1, 1):
        return _wrong(f"that is the copy of 05 (and 06_swizzled), where lane t writes word t of a row. Here it writes "
                      f"As[c][r]: neighbouring lanes move along c, {bm} floats apart.")
    if pair == banks:
        return _wrong(f"{banks[0]} and {banks[1]} are the banks the 32 lanes use. The conflict is how many "
                      f"different words the busiest of them must serve: 32 lanes, all different words, spread over "
                      f"those banks.")
    if pair == (2, 2):
        return _wrong("2-way is the copy into 06_padded's tile. Work out the words of the transposed store: "
                      f"As[c][r] is word c x {bm} + r, with r = t / BK and c = t % BK for lane t.")
    if 32 in pair:
        return _wrong(f"the 32 lanes are not all in one bank: the bank of As[c][r] is r ({bm} is a multiple of 32), "
                      f"and r = t / BK takes several values in a warp.")
    if pair[0] == pair[1]:
        return _wrong(f"the two tiles do not give the same conflict: with BK = {bk16} a warp's 32 elements cover "
                      f"fewer rows r of A's tile than with BK = {bk8}. The bank of As[c][r] is r (since {bm} is a "
                      f"multiple of 32): how many values of r does each take?")
    return _wrong(f"write out lane t: r = t / BK, c = t % BK, word c x {bm} + r, bank = word mod 32. Count, per bank, "
                  f"the different words the 32 lanes write.")


def _whole(answer, unit: str):
    """A whole number from the learner's answer, or Feedback saying what is wrong with it."""
    if is_placeholder(answer):
        return unanswered(f"replace the placeholder with a whole number of {unit}.")
    try:
        return int(answer)
    except (TypeError, ValueError):
        return _wrong(f"answer with a whole number of {unit}, not {answer!r}.")


# ---- stage 08: warp tiling ------------------------------------------------------------------------
EX08_1_CONFIG = dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8)   # 08's default on the H200


def check_08_exercise_1(answer) -> Feedback:
    """(warps per block, lanes along a column of the warp tile, i.e. WM / TM) for EX08_1_CONFIG."""
    pair = _pair(answer, "(warps per block, WM / TM)")
    if isinstance(pair, Feedback):
        return pair
    c = configs.WarpTileConfig(**EX08_1_CONFIG)
    warps, rows = (c.BM // c.WM) * (c.BN // c.WN), c.WM // c.TM
    if pair == (warps, rows):
        return _right(f"the {c.BM} x {c.BN} block tile holds ({c.BM}/{c.WM}) x ({c.BN}/{c.WN}) = {warps} warp tiles, one "
                      f"per warp ({c.threads()} threads); a {c.WM} x {c.WN} warp tile holds {rows} x {c.WN // c.TN} "
                      f"thread tiles of {c.TM} x {c.TN}, one per lane.")
    got_warps, got_rows = pair
    if got_warps == c.threads():
        return _wrong(f"{got_warps} is the number of threads; a warp is 32 of them.")
    if got_warps != warps:
        return _wrong(f"each warp owns one WM x WN = {c.WM} x {c.WN} tile of the BM x BN = {c.BM} x {c.BN} block tile: "
                      "how many fit?")
    if got_rows == c.WN // c.TN:
        return _wrong(f"{got_rows} is WN / TN, the lanes along a row of the warp tile; the question asks WM / TM.")
    if got_rows == 32:
        return _wrong("32 is all the lanes of the warp; they form a (WM/TM) x (WN/TN) grid over the warp tile.")
    return _wrong(f"the warps are right ({warps}). A lane's tile is TM = {c.TM} rows high and the warp tile WM = "
                  f"{c.WM}: how many lanes stack along its rows?")


def check_08_exercise_2(answer) -> Feedback:
    """Bytes of static shared memory of 08's default (EX08_1_CONFIG), as the kernel declares it."""
    got = _whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = configs.WarpTileConfig(**EX08_1_CONFIG)
    traced = sum(a.size for a in _trace_of("08_warp_tiling", c).shared_variables)
    if got == traced:
        return _right(f"As is BK x (BM + 4) = {c.BK} x {c.BM + 4} floats and Bs BK x BN = {c.BK} x {c.BN}: "
                      f"{traced} bytes, as the trace of the kernel's shared arrays says.")
    if got == (c.BM + c.BN) * c.BK * 4:
        return _wrong("close: the rows of the transposed A tile are padded by 4 floats (from stage 07). Count them.")
    if got == (c.BM + 4 + c.BN) * c.BK:
        return _wrong("that is the number of floats; a float is 4 bytes.")
    if got * 2 == traced or got == (c.BM + 4 + c.BN) * 8 * 4:
        return _wrong(f"BK is {c.BK} in this configuration.")
    return _wrong(f"add the two tiles: As holds BK x (BM + 4) floats, Bs holds BK x BN, 4 bytes each (BK = {c.BK}).")


def _trace_of(variant_name: str, config, **shape):
    return accesses.kernel_trace(stages.variant(variant_name), config, **shape)


# ---- stage 09: double buffering and asynchronous copies --------------------------------------------
EX09_1_CONFIG = dict(BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, STAGES=3, MIN_BLOCKS=2)
EX09_2_TILES = 6


def check_09_exercise_1(answer) -> Feedback:
    """Bytes of static shared memory of 09_async_copy with EX09_1_CONFIG (3 stages)."""
    got = _whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = configs.AsyncCopyConfig(**EX09_1_CONFIG)
    traced = sum(a.size for a in _trace_of("09_async_copy", c).shared_variables)
    one = (c.BM + 4 + c.BN) * c.BK * 4
    if got == traced:
        return _right(f"{c.STAGES} stages of (BM + 4 + BN) x BK floats: {c.STAGES} x {one} = {traced} bytes (the trace "
                      "of the kernel's shared arrays agrees). More stages, more tiles in flight, less room for blocks.")
    if got == one:
        return _wrong(f"that is one stage; shared memory holds STAGES = {c.STAGES} of them.")
    if got == 2 * one:
        return _wrong(f"two buffers is 09_double_buffering; this kernel holds STAGES = {c.STAGES}.")
    if got == c.STAGES * (c.BM + c.BN) * c.BK * 4:
        return _wrong("close: each row of the transposed A tile has 4 floats of padding.")
    if got == c.STAGES * (c.BM + 4 + c.BN) * c.BK:
        return _wrong("that is the number of floats; a float is 4 bytes.")
    return _wrong("per stage: As holds BK x (BM + 4) floats and Bs BK x BN; multiply by the stages and 4 bytes.")


def check_09_exercise_2(answer) -> Feedback:
    """In the schedule of 09_double_buffering (default configuration, K = EX09_2_TILES tiles), how many
    barrier intervals compute on one tile while the loads of another are issued?"""
    got = _whole(answer, "intervals")
    if isinstance(got, Feedback):
        return got
    s = pipeline.kernel_schedule(stages.variant("09_double_buffering"), tiles=EX09_2_TILES)
    overlap = sum(1 for i in s.intervals if i.computed and (i.loading or i.in_flight))
    if got == overlap:
        return _right(f"{overlap} of {len(s.intervals)}: every tile but the last is computed while the next one's loads "
                      "are on their way; the first interval only loads and the last only computes.")
    if got == 0:
        return _wrong("0 is stage 08, which loads and computes in separate intervals. Run "
                      "pipeline.kernel_schedule(...).table() for 09.")
    if got == EX09_2_TILES:
        return _wrong("the last tile has no next tile to load while it is computed.")
    if got == len(s.intervals):
        return _wrong("the first interval only loads: nothing is in shared memory to compute on yet.")
    return _wrong("read the schedule's table: count the intervals with both a tile computed and loads issued.")


EX09_3_BARRIER = "        __syncthreads();  // the next tiles are complete before anyone reads them\n"


def broken_double_buffering():
    """A copy of kernels/09_double_buffering.cu without the barrier after the next tiles are stored,
    in a temporary folder; returns its path (the learner's kernel file is not touched)."""
    import tempfile
    from pathlib import Path
    src = stages.variant("09_double_buffering").path
    text = src.read_text()
    if text.count(EX09_3_BARRIER) != 1:
        raise RuntimeError(f"{src.name} no longer has the barrier this exercise removes ({EX09_3_BARRIER.strip()!r}).")
    path = Path(tempfile.mkdtemp(prefix="tbt_ex09_")) / src.name
    path.write_text(text.replace(EX09_3_BARRIER, ""))
    return path


def _ex09_3_races():
    import numpy as np
    c = configs.DoubleBufferConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=1)
    M, N, K = 64, 64, 48
    rng = np.random.default_rng(3)
    A, B = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((M, K), (K, N)))
    C = np.zeros((M, N), np.float32)
    t = trace.capture(broken_double_buffering(), stages.variant("09_double_buffering").name_expression(c),
                      c.grid(M, N), c.block(), launch_args(M, N, K, 1.0, A, B, 0.0, C))
    return memory.races(t)


def check_09_exercise_3(answer) -> Feedback:
    """(line of the write, line of the read) named by the race check's first race in the kernel without
    the barrier after the next tiles are stored (broken_double_buffering())."""
    pair = _pair(answer, "(line of the write, line of the other access)")
    if isinstance(pair, Feedback):
        return pair
    races = _ex09_3_races()
    if not races:
        return _wrong("the race check found no race in the broken kernel: the exercise no longer matches the kernel file.")
    lines = {(r.first[1], r.second[1]) for r in races}
    first = (races[0].first[1], races[0].second[1])
    if pair in lines:
        return _right(f"the store of the next tiles (line {pair[0]}) and a read of the same shared words (line "
                      f"{pair[1]}) with no barrier between them: {len(races)} races in all. Put the barrier back and "
                      "the check finds none (section 3).")
    if pair[::-1] in lines:
        return _wrong("swapped: the first number is the line that writes the shared word.")
    return _wrong(f"print(*exercises._ex09_3_races()[:3], sep='\\n') lists the races; each names the two lines "
                  f"(the first one, for instance, is between lines {first[0]} and ...).")


# ---- stage 10: tensor cores ----------------------------------------------------------------------
EX10_1_CONFIG = dict(BM=128, BN=128, BK=32, WM=64, WN=64, STAGES=3, ROUND=1)   # 10's default


def check_10_exercise_1(answer) -> Feedback:
    """Bytes of dynamic shared memory one block of 10_tensor_cores asks for with EX10_1_CONFIG."""
    got = _whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = configs.TensorCoreConfig(**EX10_1_CONFIG)
    want = c.shared_bytes()
    tiles = c.STAGES * (c.BM * (c.BK + 4) + c.BK * (c.BN + 8))
    staging = c.warps() * 16 * 20
    if got == want:
        return _right(f"{c.STAGES} stages of BM x (BK + 4) + BK x (BN + 8) floats ({tiles} floats) and a 16 x 20 staging "
                      f"tile per warp ({staging} floats): {want} bytes, more than the 48 KiB a static __shared__ array "
                      "may take, so the kernel declares it extern and the launch gives the size.")
    if got == tiles + staging:
        return _wrong("that is the number of floats; a float is 4 bytes.")
    if got == 4 * tiles:
        return _wrong("add the staging tiles: each warp has 16 x 20 floats to take its results out of the fragments.")
    if got == 4 * (c.STAGES * (c.BM * c.BK + c.BK * c.BN) + staging) or got == 4 * (c.STAGES * (c.BM * c.BK + c.BK * c.BN)):
        return _wrong("the rows are padded: A's tile rows hold BK + 4 floats and B's BN + 8.")
    if got == 4 * (tiles // c.STAGES + staging):
        return _wrong(f"that is one stage; the pipeline holds STAGES = {c.STAGES} tiles of A and of B.")
    return _wrong("add STAGES x (BM x (BK + 4) + BK x (BN + 8)) floats of tiles and (BM/WM) x (BN/WN) x 16 x 20 of "
                  "staging, then multiply by 4 bytes (the comment at the top of the kernel lists the layout).")


def stage10_results() -> Path:
    """The newest committed folder of stage-10 GPU measurements (results/stage_10_*)."""
    found = sorted(RESULTS_DIR.glob("stage_10_*/exp_10.json"))
    if not found:
        raise FileNotFoundError("no results/stage_10_*/exp_10.json: run tools/experiments/exp_10.py on a GPU")
    return found[-1].parent


def _ex10_2_counts() -> tuple[int, int]:
    """(multiply-adds, HMMA instructions) of the committed Nsight Compute launch of 10's default."""
    import csv
    text = (stage10_results() / "ncu_10_metrics.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if line.startswith('"'))
    c = configs.TensorCoreConfig(**EX10_1_CONFIG)
    name = stages.variant("10_tensor_cores").name_expression(c)
    hmma = next(int(r["Metric Value"].replace(",", "")) for r in rows
                if name in r["Kernel Name"] and r["Metric Name"] == "sm__inst_executed_pipe_tensor_op_hmma.sum")
    return 4096 ** 3, hmma


def check_10_exercise_2(answer) -> Feedback:
    """Multiply-adds per HMMA instruction, from the committed Nsight Compute count at 4096^3."""
    got = _whole(answer, "multiply-adds")
    if isinstance(got, Feedback):
        return got
    fmas, hmma = _ex10_2_counts()
    want = fmas // hmma
    if got == want:
        return _right(f"4096^3 = {fmas:,} multiply-adds over {hmma:,} HMMA instructions: {want} each, a 16 x 8 x 4 "
                      f"product. One wmma 16 x 16 x 8 mma_sync ({16 * 16 * 8} multiply-adds) is {16 * 16 * 8 // want} "
                      "hardware instructions: the SASS says which (HMMA.1684.F32.TF32).")
    if got == 16 * 16 * 8:
        return _wrong("that is one wmma::mma_sync (16 x 16 x 8); the count of HMMA instructions says the hardware "
                      "splits it. Divide 4096^3 by that count.")
    if got == 2 * want:
        return _wrong("that counts floating-point operations (2 per multiply-add); the question asks for multiply-adds.")
    return _wrong(f"divide the multiply-adds of the product, 4096^3, by the HMMA instructions Nsight Compute counted "
                  f"({hmma:,}).")


def _ex10_3_ratio() -> float:
    import json
    rows = json.loads((stage10_results() / "exp_10.json").read_text())["precision"]
    rms = {r["what"].rsplit("ROUND=", 1)[1].rstrip(")"): r["rms_err_over_rms"]
           for r in rows if r["what"].startswith("10_tensor_cores") and "ROUND=" in r["what"]}
    return rms["0"] / rms["1"]


def check_10_exercise_3(answer) -> Feedback:
    """From the committed precision rows: the RMS error of ROUND = 0 over that of ROUND = 1."""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with a number, the ratio of the two RMS errors.")
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return _wrong(f"answer with a number (the ratio), not {answer!r}.")
    want = _ex10_3_ratio()
    if abs(got - want) <= 0.1:
        return _right(f"{want:.2f}: dropping the low 13 bits errs {want:.1f} times as far as rounding them. Truncation "
                      "always shrinks an input, so each product is biased by about 2^-10 on top of the same spread as "
                      "rounding: sqrt(7) = 2.65 times the RMS error, as measured. Rounded inputs give what cuBLAS "
                      "in TF32 gives.")
    if abs(got - 1 / want) <= 0.05:
        return _wrong("upside down: ROUND = 0's error over ROUND = 1's.")
    if abs(got - 2) <= 0.05:
        return _wrong("2 is what one input's worst case says (2^-10 against 2^-11); read the measured RMS errors in "
                      "exp_10.json's precision rows.")
    return _wrong("divide the rms_err_over_rms of the ROUND=0 row by that of the ROUND=1 row (exp_10.json, 'precision').")


def check_10_exercise_4(answer) -> Feedback:
    """(multiply-adds, bytes): one wgmma_m64k8_tf32 of 10_wgmma's default configuration, and the
    bytes of A's tile the tensor cores read from shared memory for it."""
    pair = _whole_pair(answer, "the multiply-adds of one wgmma_m64k8_tf32, then the bytes of A it reads")
    if isinstance(pair, Feedback):
        return pair
    fmas, read = pair
    c = stages.variant("10_wgmma").default
    want = (64 * c.BM * 8, c.BM * 8 * 4)
    if pair == want:
        return _right(f"64 x {c.BM} x 8 = {want[0]:,} multiply-adds from {c.BM} rows x 8 floats = {want[1]:,} bytes of A's "
                      f"tile: 16 multiply-adds per byte the tensor cores read, however large BM is (each of A's values "
                      f"meets the 64 rows of the warpgroup's B fragment). wmma's mma_sync did 2,048 from operands its warp "
                      "had first loaded into registers.")
    if fmas == 2 * want[0]:
        return _wrong("that counts floating-point operations (2 per multiply-add); the question asks for multiply-adds.")
    if read == 4 * want[1]:
        return _wrong(f"that is A's whole tile ({c.BM} x 32 floats); one instruction reads one step of 8 along K.")
    if read == want[1] // 4:
        return _wrong("that is the number of floats; a float is 4 bytes.")
    if fmas == want[0]:
        return _wrong(f"the multiply-adds are right; for the bytes: the instruction's B operand in shared memory is "
                      f"{c.BM} rows (BM) of 8 TF32 values of K.")
    return _wrong(f"the instruction is m64 x n{c.BM} x k8 (BM = {c.BM} is wgmma's N): a 64 x 8 tile from registers times an "
                  f"8 x {c.BM} tile from shared memory; count the products, then the bytes of the shared-memory operand.")


# ---- stage 11: autotuning and the final ladder ------------------------------------------------------
EX11_1_VARIANT = "04_1d_thread_tiling"
EX11_1_RANGES = {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (16,), "TM": (4, 8, 16, 32)}   # 36 combinations


def _ex11_1_space():
    return autotune.search_space(EX11_1_VARIANT, radius=None, ranges=EX11_1_RANGES)


def check_11_exercise_1(answer) -> Feedback:
    """(candidates, configurations left out) of the search of EX11_1_VARIANT over EX11_1_RANGES, whole space."""
    pair = _pair(answer, "(candidates, configurations left out)")
    if isinstance(pair, Feedback):
        return pair
    space = _ex11_1_space()
    total = len(space.configs) + len(space.rejected)
    by_rule = {rule: sum(r.rule == rule for r in space.rejected) for rule in ("kernel rule", "threads", "fits on an SM")}
    want = (len(space.configs), len(space.rejected))
    if pair == want:
        return _right(f"{want[0]} of the {total}: " + ", ".join(f"{n} left out by {rule}" for rule, n in by_rule.items()
                                                               if n) + ". The kernel's rules drop blocks of more than "
                      "1024 threads and tiles the threads cannot copy in whole passes; the search drops a block "
                      "of 32 threads, too few warps to hide anything.")
    if sum(pair) != total:
        return _wrong(f"the ranges hold 3 x 3 x 1 x 4 = {total} combinations, and each is either a candidate or left "
                      f"out: your two numbers add up to {sum(pair)}.")
    if pair == (want[0] + by_rule["threads"], want[1] - by_rule["threads"]):
        return _wrong("the kernel's rules are right. The search adds its own: 64 to 1024 threads per block. Which "
                      "combination has BM x BN / TM below 64?")
    if pair[0] > want[0]:
        return _wrong("too many candidates. Threads = BM x BN / TM: at most 1024, and the BM x BK and BK x BN tiles "
                      "must each be a whole number of passes of the threads. Check the combinations with TM = 4.")
    return _wrong("too few candidates: a combination is left out only when it breaks a rule. Threads = BM x BN / TM "
                  "(64 to 1024); BM x 16 and 16 x BN multiples of the threads; a thread's TM + 1 accumulators and "
                  "values fit in its registers easily here.")


EX11_2_VARIANT = "08_warp_tiling"
EX11_2_CONFIGS = {   # 08_warp_tiling configurations; which are candidates of a search that reaches them?
    "a": dict(BM=64, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8),
    "b": dict(BM=128, BN=128, BK=16, WM=64, WN=64, TM=8, TN=8),
    "c": dict(BM=256, BN=256, BK=16, WM=32, WN=64, TM=8, TN=8),
    "d": dict(BM=128, BN=128, BK=32, WM=32, WN=64, TM=8, TN=8),
    "e": dict(BM=32, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8),
    "f": dict(BM=128, BN=128, BK=64, WM=32, WN=64, TM=8, TN=8),
}


def _ex11_2_rules() -> dict:
    """letter -> (rule, reason) or None for a candidate."""
    return {k: autotune.left_out_by(EX11_2_VARIANT, **fields) for k, fields in EX11_2_CONFIGS.items()}


def check_11_exercise_2(answer) -> Feedback:
    """The set of letters of EX11_2_CONFIGS that are candidates (no rule leaves them out)."""
    letters = sorted(EX11_2_CONFIGS)
    if is_placeholder(answer) or (isinstance(answer, (set, frozenset)) and any(is_placeholder(a) for a in answer)):
        return unanswered(f"replace the placeholder with the letters of the candidates, as a set like {{'a', 'b'}}; "
                           f"choose from {', '.join(letters)}.")
    items = [answer] if isinstance(answer, str) else answer
    try:
        got = {str(a).strip().lower() for a in items}
    except TypeError:
        return _wrong(f"give a set of letters, like {{'a', 'b'}}; got {answer!r}.")
    if len(got) == 1 and len(next(iter(got))) > 1 and set(next(iter(got))) <= set(letters):
        got = set(next(iter(got)))   # "ad" for {"a", "d"}
    unknown = sorted(got - set(letters))
    if unknown:
        return _wrong(f"choose among {', '.join(letters)}; {', '.join(map(repr, unknown))} "
                      f"{'is' if len(unknown) == 1 else 'are'} not among them.")
    rules = _ex11_2_rules()
    want = {k for k, r in rules.items() if r is None}
    if got == want:
        return _right(f"{', '.join(sorted(want))}. The others: " + "; ".join(
            f"{k}: {rules[k][0]}, {rules[k][1].rstrip('.')}" for k in letters if rules[k]) + ".")
    wrongly_in = sorted(got - want)
    if wrongly_in:
        k = wrongly_in[0]
        rule = rules[k][0]
        hint = {"kernel rule": "the kernel refuses it: check how many lanes its warp tile needs "
                               "((WM/TM) x (WN/TN) must be 32) and its shared memory ((BM + 4 + BN) x BK x 4 bytes, "
                               "at most 48 KiB)",
                "threads": "count its threads: (BM/WM) x (BN/WN) warps of 32; the search keeps 64 to 1024",
                "fits on an SM": "count its registers: at least TM x TN + TM + TN per thread, for every thread of "
                                 "the block; an SM has 65536"}[rule]
        return _wrong(f"{k} is left out: {hint}.")
    missing = sorted(want - got)
    return _wrong(f"{missing[0]} breaks no rule: its warp tile has (WM/TM) x (WN/TN) = 32 lanes, its block between "
                  f"64 and 1024 threads, its tiles fit in 48 KiB and its registers in an SM.")


def _ex11_3_steps():
    return ladder_report.steps(ladder_report.load_ladder())


def _stage_id(answer) -> str | None:
    import re
    if isinstance(answer, int) and not isinstance(answer, bool):
        return f"{answer:02d}"
    m = re.match(r"\s*(\d{1,2})(?!\d)", str(answer))
    return f"{int(m.group(1)):02d}" if m else None


def check_11_exercise_3(answer) -> Feedback:
    """The stage whose step bought the most (the largest x previous stage in steps() of the newest
    committed ladder): its two-digit id, or a kernel name of it."""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with the stage's two-digit id, like '05'.")
    sid = _stage_id(answer)
    if sid is None:
        return _wrong(f"answer with a stage id, like '05' (or a kernel name that starts with one); got {answer!r}.")
    steps = _ex11_3_steps()
    by_id = {s["variant"][:2]: s for s in steps}
    gains = [s for s in steps if s["speedup"] is not None]
    best = max(gains, key=lambda s: s["speedup"])
    if sid == best["variant"][:2]:
        tf32 = (" It also changes the precision: the tensor cores multiply in TF32, a step of its own kind."
                if best["precision"] != "fp32" else "")
        return _right(f"{best['stage']}: {best['speedup']:.2f}x over {best['previous']} ({best['tflops']:.2f} TFLOP/s)."
                      + tf32)
    if sid not in by_id:
        return _wrong(f"stage {sid} has no timed kernel in the ladder; the table's stages are "
                      f"{', '.join(by_id)}.")
    s = by_id[sid]
    if s["speedup"] is None:
        return _wrong(f"stage {sid} is the first row: it has no previous stage to be compared with.")
    fastest = max(steps, key=lambda x: x["tflops"])
    if s is fastest:
        return _wrong(f"stage {sid} is the fastest, but its own step bought {s['speedup']:.2f}x: the question asks for "
                      "the largest 'x previous stage'.")
    return _wrong(f"stage {sid}'s step bought {s['speedup']:.2f}x. Read the column 'x previous stage' of the steps "
                  "table: which is largest?")

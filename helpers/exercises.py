"""Exercise checkers. Each takes the learner's answer and returns Feedback: right, or what is
wrong with this particular answer. They never raise, so an exercise cell always runs, and the
solutions live here, not in the notebooks: computed from traces of the kernel files
(helpers.figures), so an edited kernel gets answers that fit the edit.

Naming: check_<stage>_exercise_<n>.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import figures, stages
from .figures import WARP_SIZE
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
    w = figures.stage02_warp0("02_naive_coalesced", block_x, block_y)
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
    if _placeholder(block_x) or _placeholder(block_y):
        return _wrong("replace the placeholders with whole numbers: block_x and block_y.")
    try:
        NaiveConfig(block_x, block_y)
    except ValueError as e:
        return _wrong(f"that block cannot launch: {e}")
    w = figures.stage02_warp0("02_naive", block_x, block_y)
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
    if _placeholder(answer):
        return _wrong(f"replace the placeholders with two whole numbers: {what}.")
    try:
        pair = tuple(int(v) for v in answer)
    except (TypeError, ValueError):
        return _wrong(f"give two whole numbers as a tuple, like (3, 4): {what}; got {answer!r}.")
    if len(pair) != 2:
        return _wrong(f"give exactly two numbers, {what}; got {len(pair)}.")
    return pair


def _loads_per_element(name: str, fields: dict) -> int:
    v = stages.variant(name)
    n = figures.TRACE_SIZE
    counts = figures.global_load_counts(figures.kernel_trace(v, v.config(**fields)), "A", n, n)
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
    n, got = figures.TRACE_SIZE, pair
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
    tr = figures.kernel_trace(v, v.config(tile=tile))
    req = next(q for q in figures.shared_requests(tr) if q.array == "As")
    return figures.bank_view(tr, req)


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
    from . import resources
    pair = _whole_pair(answer, "(blocks per SM, warps per SM)")
    if isinstance(pair, Feedback):
        return pair
    v = stages.variant("04_1d_thread_tiling")
    c = v.default
    occ = resources.occupancy(EX04_1_ARCH, c.threads(), EX04_1_REGISTERS, c.static_shared_bytes())
    a = resources.arch_limits(EX04_1_ARCH)
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


def _first_shared_load(variant_name: str, fields: dict, array: str, M: int = figures.TRACE_SIZE):
    v = stages.variant(variant_name)
    tr = figures.kernel_trace(v, v.config(**fields), M)
    req = next(q for q in figures.shared_requests(tr) if q.array == array)
    return figures.bank_view(tr, req)


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
    from . import intensity
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
    if _placeholder(answer):
        return _wrong(f"replace the placeholders with two numbers: {what}.")
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

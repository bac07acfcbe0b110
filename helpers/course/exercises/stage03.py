"""Stage 03's exercises (shared-memory tiling): how often a block loads each element of A with and
without the tile, and the bank conflict of a load from the tile, both traced from the kernel files."""

from __future__ import annotations

import math

from helpers.core import stages
from helpers.core.arch import WARP_SIZE
from helpers.course.exercises.feedback import Feedback, band_of, parse_choice, parse_pair, printed, right, wrong
from helpers.measure import accesses, facts

# 03_smem_tiling with tile 8 against 02_naive_coalesced with an 8 x 8 block: not the tile 16 that section 1
# of the notebook prints, so the answer is not on the screen above the exercise.
EX03_1_TILE = 8


def _loads_per_element(name: str, fields: dict) -> int:
    v = stages.variant(name)
    n = accesses.TRACE_SIZE
    counts = accesses.global_load_counts(accesses.kernel_trace(v, v.config(**fields)), "A", n, n)
    used = counts[counts > 0]
    return round(used.mean()) if used.size else 0


def _ex03_1_counts() -> tuple[int, int]:
    """(tiled, naive) loads per element of A, as exercise 1 asks for them."""
    t = EX03_1_TILE
    return (_loads_per_element("03_smem_tiling", {"tile": t}),
            _loads_per_element("02_naive_coalesced", {"block_x": t, "block_y": t}))


def check_03_exercise_1(answer) -> Feedback:
    """(tiled, naive): how many times block 0 loads each element of A it uses from global memory,
    in 03_smem_tiling (tile EX03_1_TILE) and in 02_naive_coalesced (block EX03_1_TILE x EX03_1_TILE),
    M = N = K = 64."""
    pair = parse_pair(answer, "(loads per element in 03_smem_tiling, loads per element in 02_naive_coalesced)")
    if isinstance(pair, Feedback):
        return pair
    t = EX03_1_TILE
    tiled, naive = _ex03_1_counts()
    n, got = accesses.TRACE_SIZE, pair
    if got == (tiled, naive):
        return right(f"in 02_naive_coalesced every one of the {t} threads of a row of the block reads A[row][k] "
                     f"itself, {naive} loads of each element; in 03_smem_tiling one thread copies it into As and all "
                     f"{t} read it from shared memory: {tiled} load. Global loads drop by the tile size, {t}x.")
    if got == (naive, tiled):
        return wrong("the two numbers are swapped: the first is the tiled kernel (03_smem_tiling).")
    if got[0] == n // t:
        return wrong(f"{n // t} is the number of tiles along K (K / tile = {n} / {t}). Each element A[row][k] lies in "
                     f"exactly one of them: how many times is it copied into As?")
    if got[0] != tiled:
        return wrong("in 03_smem_tiling, count the loads of A on the line `As[ty][tx] = ... *a`: "
                     f"for one tile k0, which (ty, tx) reads a given A[row][k0 + tx]? How many such threads are there?")
    if got[1] in (n, t * t):
        return wrong(f"{got[1]} counts too many threads: A[row][k] is used by the threads computing row `row` of C "
                     f"in this block. How many columns of C does a {t} x {t} block cover?")
    return wrong("the tiled count is right. For 02_naive_coalesced: every thread runs the whole k loop and reads "
                 f"A[row * K + k] itself. How many threads of the block share one row?")


EX03_2_TILE = 8           # warp 0's first load of As[ty][k] with tile 8


def _as_load(tile: int):
    v = stages.variant("03_smem_tiling")
    tr = accesses.kernel_trace(v, v.config(tile=tile))
    req = next(q for q in accesses.shared_requests(tr) if q.array == "As")
    return accesses.bank_view(tr, req)


def check_03_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of As[ty][k] in the inner loop, tile 8."""
    pair = parse_pair(answer, "(distinct words of As, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    t = EX03_2_TILE
    view = _as_load(t)
    words, wavefronts = view.distinct_words, view.report.wavefronts
    rows = WARP_SIZE // t
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        return right(f"warp 0 is threadIdx.y = 0..{rows - 1} with threadIdx.x = 0..{t - 1} each. Lanes of one row "
                     f"read the same As[ty][k] (a broadcast), so the request holds {words} words; they are "
                     f"As[ty][k] = word ty * {t} + k, in banks {', '.join(str(int(b)) for b in sorted(set(view.banks)))}: "
                     f"all different, so {wavefronts} wavefront. ({view.lane_groups()}.)")
    if got_words != words:
        if got_words == 1:
            return wrong(f"one word is the tile = 32 case, where warp 0 is a single row (ty = 0). With tile = {t} "
                         f"the 32 lanes of warp 0 are threads 0..31 of the {t} x {t} block: how many values of "
                         f"threadIdx.y do they have?")
        if got_words == WARP_SIZE:
            return wrong("lanes that read the SAME address are one word, however many lanes read it. As[ty][k] "
                         "depends on ty only (k is the same for the whole warp at one step).")
        if got_words == t:
            return wrong(f"{t} is how many lanes share each word (one row of the tile). The question is how many "
                         f"different words: how many rows (values of ty) does warp 0 span?")
        return wrong(f"{got_words} words is not what warp 0 reads. Lane = threadIdx.x + {t} * threadIdx.y; "
                     f"As[ty][k] depends on ty only. How many values of ty does warp 0 hold?")
    if got_waves == got_words:
        return wrong(f"{words} different words cost extra wavefronts only when two of them fall in the same bank. "
                     f"As[ty][k] is word ty * {t} + k of As: in which banks are the words of ty = 0..{rows - 1}?")
    if got_waves < 1:
        return wrong("every request takes at least one wavefront.")
    return wrong(f"the words are right ({words}). Now the banks: bank = word mod 32, word = ty * {t} + k. "
                 f"Wavefronts = the most different words any one bank must serve.")

# ---- the prediction, before section 4 measures (issue 21): asked of the committed H200 ladder ----
PREDICTION_FILE = "results/ladder_h200_2026-11-22.json"
PREDICTION_BANDS = {"a": (0.0, 1.1), "b": (1.1, 2.0), "c": (2.0, 8.0), "d": (8.0, math.inf)}
PREDICTION_CHOICES = {"a": "no faster (under 1.1 times), or slower", "b": "1.1 to 2 times", "c": "2 to 8 times",
                      "d": "more than 8 times"}


def _prediction_measured() -> dict:
    """TFLOP/s of 02_naive_coalesced, 03_smem_tiling (tile 32) and cuBLAS at 4096³, and the speed-up (facts)."""
    rates = {v: facts.value(f"ladder_tflops/{v}") for v in ("02_naive_coalesced", "03_smem_tiling", "cublas")}
    return dict(rates, speedup=facts.value("ladder_speedup/03_smem_tiling/02_naive_coalesced"),
                pct=facts.value("ladder_pct_cublas/03_smem_tiling"))


def _prediction_answer() -> str:
    return band_of(_prediction_measured()["speedup"], PREDICTION_BANDS)


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where the answer would show before its cell: the tiled kernel's measured rate, or a speed-up in the band."""
    m = _prediction_measured()
    low, high = PREDICTION_BANDS[_prediction_answer()]
    in_band = r"(?<![\d.])1\.\d+" if (low, high) == (1.1, 2.0) else "(?!)"
    return [("the tiled kernel's measured rate", printed(m["03_smem_tiling"], "TFLOP/s")),
            ("a speed-up in the answer's band", rf"(?i){in_band}\s*(?:times|×) (?:faster|the speed)"),
            ("a marked fact of the ladder about the tiled kernel", r"<!--\s*fact:\s*(?:ratio/)?ladder_\w+/03_smem_tiling")]


def check_03_prediction(answer) -> Feedback:
    """A prediction before section 4 measures it: at 4096³ on an H200, how many times faster than
    02_naive_coalesced (block 32 × 32) does 03_smem_tiling with tile 32 run? One letter of PREDICTION_CHOICES."""
    letter = parse_choice(answer, PREDICTION_CHOICES, "how many times faster tile 32 runs than 02_naive_coalesced")
    if isinstance(letter, Feedback):
        return letter
    m, want = _prediction_measured(), _prediction_answer()
    if letter == want:
        return right(f"{m['speedup']:.2f} times: 03_smem_tiling (tile 32) ran at {m['03_smem_tiling']:.2f} TFLOP/s, "
                     f"02_naive_coalesced at {m['02_naive_coalesced']:.2f}, cuBLAS at {m['cublas']:.2f} "
                     f"({PREDICTION_FILE}: an NVIDIA H200, 2026-11-22, medians of 50 at 4096³). The global loads fell "
                     f"32 times, but the time did not: every multiply-add still loads two floats, now from shared "
                     f"memory, and the block waits at two barriers per tile. The kernel reaches {m['pct']:.1f} % of "
                     f"cuBLAS; section 4 puts it on the roofline and stages 04 and 05 attack the shared loads.")
    if letter == "a":
        return wrong("tiling does not make the kernel do more: the same multiply-adds, and 32 times fewer loads from "
                     "global memory, at the price of two barriers per tile. Could that cost more than the loads it "
                     "saves? Then weigh what the multiply-adds still need (section 1 says where the operands now come "
                     "from).")
    return wrong("the global loads fall by the tile, 32 times, but were they what set the pace? Section 1 says "
                 "what every multiply-add still needs after tiling, and where it now comes from; the caches had "
                 "caught part of the repeats of 02_naive_coalesced already. If each multiply-add still issues two "
                 "loads, how far can its time fall?")

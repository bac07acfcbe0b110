"""Stage 05's exercises (2D thread tiling): the reuse a thread tile buys (from the intensity model)
and the bank conflict of warp 0's load from the B tile (traced from the kernel file)."""

from __future__ import annotations

import dataclasses
import math

from helpers.core import stages
from helpers.core.arch import WARP_SIZE
from helpers.course.exercises.feedback import (Feedback, band_of, is_placeholder, number, parse_choice, parse_pair,
                                               printed, right, unanswered, wrong)
from helpers.course.exercises.traces import first_shared_load, words_and_wavefronts
from helpers.measure import accesses, facts, intensity, memory
from helpers.measure.facts.common import config, run_named
from helpers.measure.facts.notebook_04 import TUNING_RUN, row

# Thread tiles (TM, TN) with the same 256 results per thread. Not the 16 x 4 and 8 x 8 of section 1,
# which the notebook works out (and whose intensity rows it prints) above the exercise.
EX05_1_TILES = ((32, 8), (16, 16))


def _fmas_per_shared_load(TM: int, TN: int) -> float:
    """Multiply-adds per 4-byte shared load of 05_2d_thread_tiling with this thread tile, from
    helpers.intensity at a size every tile divides."""
    v = stages.variant("05_2d_thread_tiling")
    i = intensity.intensity(v, 4096, 4096, 4096, v.config(TM=TM, TN=TN))
    return (i.flops / 2) / (i.smem_bytes / 4)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.01 * max(1.0, abs(b))


def check_05_exercise_1(answer) -> Feedback:
    """(for EX05_1_TILES[0], for EX05_1_TILES[1]): multiply-adds per shared-memory load of one thread
    in the inner loop of 05_2d_thread_tiling, thread tiles of the same number of results."""
    (tm1, tn1), (tm2, tn2) = EX05_1_TILES
    what = f"(multiply-adds per shared load for {tm1} x {tn1}, for {tm2} x {tn2})"
    if is_placeholder(answer):
        return unanswered(f"replace the placeholders with two numbers: {what}.")
    try:
        got = tuple(number(x) for x in answer)
    except (TypeError, ValueError):
        return wrong(f"give two numbers as a tuple, like (1.5, 2): {what}; got {answer!r}.")
    if len(got) != 2:
        return wrong(f"give exactly two numbers, {what}; got {len(got)}.")
    want = tuple(_fmas_per_shared_load(tm, tn) for tm, tn in EX05_1_TILES)
    a, b = got
    if _close(a, want[0]) and _close(b, want[1]):
        return right(f"per step of k a thread loads TM + TN values ({tm1 + tn1} and {tm2 + tn2}) and does TM x TN = "
                     f"{tm1 * tn1} multiply-adds: {want[0]:.3g} and {want[1]:.3g} per load. For a fixed number of results the "
                     f"square tile reuses most (TM * TN / (TM + TN) is largest when TM = TN); stage 04's column "
                     f"never reaches 1.")
    if _close(a, want[1]) and _close(b, want[0]):
        return wrong(f"the two numbers are swapped: the first is the {tm1} x {tn1} tile.")
    if _close(a, tm1 * tn1) and _close(b, tm2 * tn2):
        return wrong(f"{tm1 * tn1} is the multiply-adds per step of k; divide by the shared loads that feed them.")
    if _close(a, tm1 + tn1) and _close(b, tm2 + tn2):
        return wrong("those are the shared loads per step (TM + TN); the question is multiply-adds per load.")
    if _close(a, want[0] / 2) and _close(b, want[1] / 2):
        return wrong("those are FLOP per shared byte (the intensity table's column): a multiply-add is 2 FLOP and "
                     "a load 4 bytes, so multiply-adds per load are twice that.")
    if _close(a, tm1 / (tm1 + 1)) or _close(b, tm2 / (tm2 + 1)):
        return wrong("TM / (TM + 1) is stage 04, where a thread loads one value of B per step. Here it loads TN "
                     "values of B and TM of A, and every pair of them is a multiply-add.")
    return wrong("per step of k, count a thread's shared loads (a[i] for i < TM, b[j] for j < TN) and its "
                 f"multiply-adds (every i with every j), then divide.")


# 16 threads per row: warp 0 spans two rows. Not the 8 x 8 tile of section 6, whose bank summary the
# notebook prints above the exercise.
EX05_2_CONFIG = dict(BM=64, BN=64, BK=8, TM=4, TN=4)
EX05_2_SIZE = 128


def check_05_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of Bs[k][threadCol * TN + j] in
    05_2d_thread_tiling with EX05_2_CONFIG."""
    pair = parse_pair(answer, "(distinct words of Bs, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    c = EX05_2_CONFIG
    view = first_shared_load("05_2d_thread_tiling", c, "Bs", EX05_2_SIZE)
    words, wavefronts = view.distinct_words, view.report.wavefronts
    per_row = c["BN"] // c["TN"]
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        banks = sorted(set(int(b) for b in view.banks))
        return right(f"BN / TN = {per_row} threads per row, so lanes i and i + {per_row} have the same threadCol and "
                     f"read the same word: {words} words, threadCol * {c['TN']} = 0, {c['TN']}, {2 * c['TN']}, ... "
                     f"They fall in banks {', '.join(map(str, banks))} only, {words // len(banks)} different words in "
                     f"each: {wavefronts} wavefronts, a {view.report.ways}-way conflict. Stage 06 takes up "
                     f"conflicts like this one.")
    if got_words != words:
        if got_words == WARP_SIZE:
            return wrong(f"lanes with the same threadCol read the same word. threadCol = tid % (BN / TN) = "
                         f"tid % {per_row}: which lanes share one?")
        if got_words == c["TN"]:
            return wrong(f"one request is one j for the whole warp: b[j] = Bs[k][threadCol * {c['TN']} + j] with the "
                         f"same j in every lane. Count the different threadCol values in warp 0.")
        return wrong(f"{got_words} words is not what warp 0 reads. The word is threadCol * {c['TN']} + j (j and k "
                     f"fixed), threadCol = tid % {per_row}: how many different values in lanes 0 to 31?")
    if got_waves == 1:
        return wrong(f"the words are right ({words}), but they are {c['TN']} apart: which banks (word mod 32) do "
                     f"they fall in?")
    if got_waves == words:
        return wrong(f"{words} wavefronts would mean {words} words in one bank. Words {c['TN']} apart fall in "
                     f"32 / {c['TN']} = {32 // c['TN']} banks: how many words does each get?")
    if got_waves < 1:
        return wrong("every request takes at least one wavefront.")
    return wrong(f"the words are right ({words}). Wavefronts = the most different words any one bank must serve; "
                 f"bank = word mod 32, and the words are threadCol * {c['TN']}.")

# ---- the prediction, before section 4 measures (issue 21): asked of the committed H200 tuning run, the file the
# notebook's table shows and its prose cites (facts.notebook_04.TUNING_RUN) ----
PREDICTION_TILES = {"16 x 4": "BM128,BN128,BK16,TM16,TN4", "8 x 8": "BM128,BN128,BK16,TM8,TN8"}   # facts' form
PREDICTION_BANDS = {"a": (0.0, 1 / 1.05), "b": (1 / 1.05, 1.05), "c": (1.05, math.inf)}   # 16 x 4's time over 8 x 8's
PREDICTION_CHOICES = {"a": "8 × 8, by more than 5 %", "b": "within 5 % of each other", "c": "16 × 4, by more than 5 %"}


def _prediction_measured() -> dict:
    """TFLOP/s of both thread tiles (128 × 128 × 16) at 4096³, and how many times faster 16 × 4 ran (facts)."""
    rates = {tile: facts.value(f"tuning_run_tflops/05_2d_thread_tiling/{arg}")
             for tile, arg in PREDICTION_TILES.items()}
    return dict(rates, ratio=rates["16 x 4"] / rates["8 x 8"])


def _prediction_answer() -> str:
    return band_of(_prediction_measured()["ratio"], PREDICTION_BANDS)


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where the answer would show before its cell: either tile's measured rate, a sentence saying which ran faster
    or that the better reuse lost, or any marked fact of the tuning run about this kernel."""
    m = _prediction_measured()
    faster, slower = ("16 × 4", "8 × 8") if m["ratio"] >= 1 else ("8 × 8", "16 × 4")
    tile = lambda t: t.replace(" × ", r"\s*[×x]\s*")
    return [(f"the measured rate of {t}", printed(m[t], "TFLOP/s")) for t in PREDICTION_TILES] + [
        ("prose: which tile ran faster", rf"(?i){tile(faster)}\b[^.\n]{{0,40}}\b(?:ran|runs|is|was) faster"),
        ("prose: which tile ran slower", rf"(?i){tile(slower)}\b[^.\n]{{0,40}}\b(?:ran|runs|is|was) slower"),
        ("prose: the better reuse lost", r"(?i)better reuse (?:lost|loses)|the advantage of its better reuse"),
        ("a marked fact of the tuning run about this kernel",
         r"<!--\s*fact:\s*(?:ratio/)?tuning_run_\w+/05_2d_thread_tiling/")]


MERGED_WIDTH = {"As": 8, "Bs": 16}   # bytes per shared load as ptxas 12.9 merges them for sm_90 (notebook 05, section 6)


def _conflicts(tile: str) -> dict[str, tuple[int, int]]:
    """array -> (ways as the source writes warp 0's first load of it, ways as the compiler merges it into
    MERGED_WIDTH-byte loads), traced from the kernel file with the prediction's tile (block 0 of 128³)."""
    v = stages.variant("05_2d_thread_tiling")
    t = accesses.kernel_trace(v, config(v.name, PREDICTION_TILES[tile]), M=128)
    return {q.array: (memory.banks(q).ways, memory.banks(dataclasses.replace(q, size=MERGED_WIDTH[q.array])).ways)
            for q in accesses.shared_requests(t)}


def _conflicts_said(ways: dict[str, tuple[int, int]], which: int) -> str:
    """'no conflict', 'a 2-way conflict on Bs', 'a 2-way conflict on As and a 4-way one on Bs' (which: 0 as the
    source writes the loads, 1 as merged)."""
    found = [(w[which], a) for a, w in sorted(ways.items()) if w[which] > 1]
    if not found:
        return "no conflict"
    return " and ".join(f"a {n}-way {'conflict' if i == 0 else 'one'} on {a}" for i, (n, a) in enumerate(found))


def _loads_explained() -> str:
    """What section 6's traces show about both tiles' shared loads, as the source writes them and as merged, and
    what the run recorded of their registers."""
    wide, square = _conflicts("16 x 4"), _conflicts("8 x 8")
    regs = {tile: row("05_2d_thread_tiling", arg)["registers"] for tile, arg in PREDICTION_TILES.items()}
    same = regs["16 x 4"] == regs["8 x 8"]
    return ((f"Both took {regs['16 x 4']} registers, so as many blocks per SM; " if same else
             f"16 × 4 took {regs['16 x 4']} registers and 8 × 8 {regs['8 x 8']}; ") +
            f"what 8 × 8 lost is in its shared loads (section 6). As the source writes them, 16 × 4's loads have "
            f"{_conflicts_said(wide, 0)} and 8 × 8's {_conflicts_said(square, 0)} (its warp holds two thread rows). "
            f"Merged by the compiler into {MERGED_WIDTH['As']}-byte loads of As and {MERGED_WIDTH['Bs']}-byte loads of "
            f"Bs, 16 × 4's have {_conflicts_said(wide, 1)} and 8 × 8's {_conflicts_said(square, 1)}.")


def check_05_prediction(answer) -> Feedback:
    """A prediction before section 4 measures it: with 128 × 128 × 16 block tiles, which thread tile runs faster at
    4096³ on an H200, 16 × 4 (the default) or 8 × 8? One letter of PREDICTION_CHOICES."""
    letter = parse_choice(answer, PREDICTION_CHOICES, "which thread tile runs faster")
    if isinstance(letter, Feedback):
        return letter
    m, want = _prediction_measured(), _prediction_answer()
    if letter == want:
        return right(f"16 × 4 ran at {m['16 x 4']:.2f} TFLOP/s and 8 × 8 at {m['8 x 8']:.2f}, "
                     f"{100 * (m['ratio'] - 1):.0f} % apart ({run_named(TUNING_RUN)}, medians of 30 at 4096³). Reuse "
                     f"per load favoured 8 × 8 (4 multiply-adds per shared load against 3.2). {_loads_explained()} "
                     "The tuning found 8 × 8 about a tenth faster with mappings that put a thread's columns apart "
                     "(the tuning history, section 4).")
    return wrong("section 1 counts one cost, multiply-adds per shared load, and on that count 8 × 8 wins (4 against "
                 "3.2). Two other costs decide as much. Which rows of As do the 32 lanes of warp 0 read at one step "
                 "in each tile (BN / TN threads along a row of the block), and do different words land in one bank "
                 "(notebook 03, section 5)? And does either tile need more registers per thread, and so fewer warps "
                 "per SM?")

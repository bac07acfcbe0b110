"""Stage 04's exercises (1D thread tiling): the occupancy calculator by hand, and the bank conflict
of warp 0's load from the A tile when the block tile is narrow (traced from the kernel file)."""

from __future__ import annotations

import math

from helpers.core import arch
from helpers.core import stages
from helpers.core.arch import WARP_SIZE
from helpers.course.exercises.feedback import (Feedback, band_of, parse_choice, parse_pair, parse_whole_pair,
                                               printed, right, wrong)
from helpers.course.exercises.traces import first_shared_load
from helpers.measure import facts
from helpers.measure.facts.common import run_named
from helpers.measure.facts.notebook_04 import TUNING_RUN
from helpers.views import ladder_report

# Exercise 1: the occupancy calculator by hand, for the default configuration with a fixed register
# count, so the answer does not depend on the compiler installed here. Not the 80 registers the H200
# tuning run recorded (facts.notebook_04.TUNING_RUN): the notebook's table prints what those give,
# above the exercise. 96 is what another compiler version might give the same kernel.
EX04_1_REGISTERS = 96
EX04_1_ARCH = "sm_90"


def _ex04_1_occupancy() -> arch.Occupancy:
    c = stages.variant("04_1d_thread_tiling").default
    return arch.occupancy(EX04_1_ARCH, c.threads(), EX04_1_REGISTERS, c.static_shared_bytes())


def _ex04_1_want() -> tuple[int, int]:
    occ = _ex04_1_occupancy()
    return occ.active_blocks, occ.active_warps


def check_04_exercise_1(answer) -> Feedback:
    """(blocks, warps): how many blocks of the default 04 configuration, and so how many warps,
    an SM of compute capability 9.0 holds at once with EX04_1_REGISTERS registers per thread."""
    pair = parse_whole_pair(answer, "(blocks per SM, warps per SM)")
    if isinstance(pair, Feedback):
        return pair
    c = stages.variant("04_1d_thread_tiling").default
    occ = _ex04_1_occupancy()
    a = arch.arch_limits(EX04_1_ARCH)
    limits = dict(occ.limits)
    want = _ex04_1_want()
    per_block = occ.warps_per_block
    blocks, warps = pair
    per_warp = -(-EX04_1_REGISTERS * WARP_SIZE // a.register_unit) * a.register_unit
    per_file = (a.registers_per_sm // a.sub_partitions) // per_warp
    if pair == want:
        return right(f"{EX04_1_REGISTERS} registers x 32 lanes = {per_warp} per warp; each of the "
                     f"{a.sub_partitions} register files of {a.registers_per_sm // a.sub_partitions} holds "
                     f"{per_file} such warps, so the SM has registers for {per_file * a.sub_partitions} warps: "
                     f"{occ.active_blocks} whole blocks of "
                     f"{per_block} warps = {occ.active_warps} of {occ.max_warps} warp slots, "
                     f"{100 * occ.occupancy:.1f}% occupancy. Registers are the limit: warp slots would allow "
                     f"{limits['warps']} blocks and shared memory {limits['shared memory']}.")
    if blocks * per_block != warps:
        return wrong(f"warps come in whole blocks: a block of {c.threads()} threads is {per_block} warps, so "
                     f"{blocks} block{'s' if blocks != 1 else ''} make{'s' if blocks == 1 else ''} "
                     f"{blocks * per_block} warps, not {warps}.")
    if blocks == limits["warps"]:
        return wrong(f"{blocks} blocks fill the SM's {occ.max_warps} warp slots, but that is only one of the limits. "
                     f"Each thread needs {EX04_1_REGISTERS} registers: how many warps' worth does the SM's "
                     f"{a.registers_per_sm}-register file hold?")
    if blocks == limits["blocks"]:
        return wrong(f"{blocks} is the most blocks an SM can hold of any kernel; registers and warp slots "
                     f"allow fewer here.")
    if blocks == limits["shared memory"]:
        return wrong(f"shared memory allows {blocks} blocks ({c.static_shared_bytes()} B each plus the driver's "
                     f"1 KiB), but registers allow fewer. The SM runs as many blocks as the scarcest resource allows.")
    if blocks == want[0] + 1:
        return wrong(f"{a.registers_per_sm} / ({EX04_1_REGISTERS} x {c.threads()}) = "
                     f"{a.registers_per_sm / (EX04_1_REGISTERS * c.threads()):.2f}: round down. A block whose "
                     f"registers do not all fit does not start.")
    return wrong(f"{blocks} block{'s' if blocks != 1 else ''} is not what fits. Work out each limit: warp slots "
                 f"({occ.max_warps} per SM, {per_block} per block), registers ({a.registers_per_sm} per SM, "
                 f"{EX04_1_REGISTERS} per thread, {c.threads()} threads per block) and shared memory; the SM holds "
                 f"the fewest blocks any of them allows.")


EX04_2_CONFIG = dict(BM=64, BN=16, BK=16, TM=4)   # a narrow block tile: warp 0 spans two rows of threads


def check_04_exercise_2(answer) -> Feedback:
    """(distinct words, wavefronts) of warp 0's first load of As[threadRow * TM + i][k] in
    04_1d_thread_tiling with BM = 64, BN = 16, BK = 16, TM = 4."""
    pair = parse_pair(answer, "(distinct words of As, wavefronts)")
    if isinstance(pair, Feedback):
        return pair
    c = EX04_2_CONFIG
    view = first_shared_load("04_1d_thread_tiling", c, "As")
    words, wavefronts = view.distinct_words, view.report.wavefronts
    rows = -(-WARP_SIZE // c["BN"])
    apart = c["TM"] * c["BK"]
    got_words, got_waves = pair
    if pair == (words, wavefronts):
        banks = sorted(set(int(b) for b in view.banks))
        return right(f"with BN = {c['BN']}, threadCol = tid % {c['BN']}, so warp 0 holds threadRow 0 to {rows - 1} and "
                     f"reads As[threadRow * {c['TM']}][k]: {words} words, {apart} words apart (TM x BK), in bank"
                     f"{'s' if len(banks) > 1 else ''} {', '.join(map(str, banks))}. Different words in one bank "
                     f"are served one after the other: {wavefronts} wavefronts, a {view.report.ways}-way conflict. "
                     f"({view.lane_groups()}.)")
    if got_words != words:
        if got_words == 1:
            return wrong(f"one word is the case BN >= 32, where warp 0 lies in one row of threads. With BN = {c['BN']}, "
                         f"threadCol = tid % {c['BN']}: how many values of threadRow do lanes 0 to 31 have?")
        if got_words == WARP_SIZE:
            return wrong("lanes that read the SAME address are one word, however many lanes read it. "
                         "As[threadRow * TM + i][k] depends on threadRow only (i and k are the same for the warp).")
        if got_words == c["BN"]:
            return wrong(f"{c['BN']} is how many lanes share each word (one row of threads). How many different "
                         f"words: how many rows of threads does warp 0 span?")
        return wrong(f"{got_words} words is not what warp 0 reads. threadRow = tid / {c['BN']}, and the word is "
                     f"(threadRow * {c['TM']} + i) * {c['BK']} + k: how many values of threadRow does warp 0 hold?")
    if got_waves == 1:
        return wrong(f"the words are right ({words}). Are they in different banks? Word = row * BK + k, and the rows "
                     f"are threadRow * TM: the words lie TM x BK = {apart} apart. Bank = word mod 32.")
    if got_waves < 1:
        return wrong("every request takes at least one wavefront.")
    return wrong(f"the words are right ({words}). Wavefronts = the most different words any one bank must serve; "
                 f"the words are {apart} apart and bank = word mod 32.")

# ---- the prediction, before section 4 measures (issue 21): asked of the committed H200 tuning run, the file the
# notebook's table shows and its prose cites (facts.notebook_04.TUNING_RUN) ----
PREDICTION_CONFIG = "04_1d_thread_tiling/BM64,BN64,BK16,TM16"     # the default (facts.tuning_run_*)
PREDICTION_BANDS = {"a": (0.0, 10.0), "b": (10.0, 30.0), "c": (30.0, 60.0), "d": (60.0, math.inf)}
PREDICTION_CHOICES = {"a": "below 10 %", "b": "10 to 30 %", "c": "30 to 60 %", "d": "above 60 %"}


def _prediction_measured() -> dict:
    """The default's TFLOP/s and % of cuBLAS at 4096³, cuBLAS's, and stage 03's on the ladder (facts)."""
    return {"tflops": facts.value(f"tuning_run_tflops/{PREDICTION_CONFIG}"),
            "pct": facts.value(f"tuning_run_pct_cublas/{PREDICTION_CONFIG}"),
            "cublas": facts.value("tuning_run_cublas_tflops/before"),
            "stage03": facts.value("ladder_tflops/03_smem_tiling")}


def _prediction_answer() -> str:
    return band_of(_prediction_measured()["pct"], PREDICTION_BANDS)


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where the answer would show before its cell: the default's measured rate or its share of cuBLAS, a share in
    the answer's band said in words or numbers, or any marked fact of the tuning run about this kernel."""
    m = _prediction_measured()
    low, high = PREDICTION_BANDS[_prediction_answer()]
    in_band = "|".join(str(n) for n in range(int(low), int(min(high, 100))))
    words = r"(?:about |nearly |almost |under |over |more than |less than )?(?:half|two.fifths|a third)"
    return [("the default's measured rate", printed(m["tflops"], "TFLOP/s")),
            ("the default's share of cuBLAS", rf"(?<![\d.])(?:{m['pct']:.0f}|{m['pct']:.1f})\s*% of cuBLAS"),
            ("a share of cuBLAS in the answer's band", rf"(?<![\d.])(?:{in_band})(?:\.\d+)?\s*% of cuBLAS"),
            ("a share of cuBLAS in words", rf"(?i)\b{words} (?:of |the speed of )?cuBLAS"),
            ("the kernel's row of a results table, its share in the answer's band",
             rf"(?m)04_1d_thread_tiling\b[^\n]*\|\s*(?:{in_band})(?:\.\d+)?\s*\|\s*$"),
            ("a marked fact of the tuning run about this kernel",
             r"<!--\s*fact:\s*(?:ratio/)?tuning_run_\w+/04_1d_thread_tiling/")]


def _ladder_note() -> str:
    """The same kernel in docs/results.md's table (the newest ladder: another run, read after the notebooks), so
    that a learner who meets that number there knows why it differs."""
    lad = ladder_report.load_ladder()
    row = next((r for r in lad.kernels if r.get("variant") == "04_1d_thread_tiling" and r.get("pct_cublas")), None)
    return (f" docs/results.md shows another run of the same kernel, the ladder of {lad.date} ({lad.source}): "
            f"{row['pct_cublas']:.1f} %." if row else "")


def check_04_prediction(answer) -> Feedback:
    """A prediction before section 4 measures it: what fraction of cuBLAS does 04_1d_thread_tiling's default reach at
    4096³ on an H200? One letter of PREDICTION_CHOICES."""
    letter = parse_choice(answer, PREDICTION_CHOICES, "the default's share of cuBLAS at 4096³")
    if isinstance(letter, Feedback):
        return letter
    m, want = _prediction_measured(), _prediction_answer()
    if letter == want:
        return right(f"{m['pct']:.1f} %: the default ran at {m['tflops']:.2f} TFLOP/s against cuBLAS's {m['cublas']:.2f} "
                     f"({run_named(TUNING_RUN)}, medians of 30 at 4096³), "
                     f"{m['tflops'] / m['stage03']:.1f} times stage 03's {m['stage03']:.2f} on the ladder. The shared "
                     f"loads per multiply-add fell from 2 to 17/16, which alone would give about 1.9 times; the rest came "
                     f"with them: fewer address computations, loop steps and barriers per multiply-add, and 16 "
                     f"independent multiply-adds per value of B to hide latency with (section 5).{_ladder_note()}")
    side = "higher" if letter > want else "lower"
    return wrong(f"your band is {side} than the loads suggest. Start from stage 03: its tile-32 kernel reached about a "
                 "sixth of cuBLAS, issuing two shared loads per multiply-add. This kernel issues TM + 1 = 17 per 16 "
                 "(section 1's table). If the time followed the shared loads, how many times faster would it run, "
                 "and what share of cuBLAS is that? Then ask whether anything else got cheaper per multiply-add.")

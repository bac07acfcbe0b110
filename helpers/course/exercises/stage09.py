"""Stage 09's exercises (double buffering and asynchronous copies): the shared memory of a
multi-stage pipeline, what overlaps in the schedule, and the race a missing barrier causes. Every
answer comes from traces of the kernel files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from helpers.core import configs
from helpers.core import stages
from helpers.course.exercises.feedback import Feedback, parse_choice, parse_pair, parse_whole, right, wrong
from helpers.course.exercises.traces import traced_shared_bytes
from helpers.measure import memory
from helpers.measure import pipeline
from helpers.measure import trace
from helpers.run.gemm import launch_args
from helpers.measure import facts

# Neither is printed by the notebook above its exercises: its registry table lists the shared bytes of
# 09_async_copy with 128 x 128 tiles and 3 stages, and section 1 the schedule over 6 k-tiles.
EX09_1_CONFIG = dict(BM=128, BN=256, BK=8, WM=64, WN=64, TM=8, TN=16, STAGES=3, MIN_BLOCKS=1)   # default tiles, 3 stages
EX09_2_TILES = 10


def check_09_exercise_1(answer) -> Feedback:
    """Bytes of static shared memory of 09_async_copy with EX09_1_CONFIG (3 stages)."""
    got = parse_whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = configs.AsyncCopyConfig(**EX09_1_CONFIG)
    traced = traced_shared_bytes("09_async_copy", c)
    one = (c.BM + 4 + c.BN) * c.BK * 4
    if got == traced:
        return right(f"{c.STAGES} stages of (BM + 4 + BN) x BK floats: {c.STAGES} x {one} = {traced} bytes (the trace "
                     "of the kernel's shared arrays agrees). More stages, more tiles in flight, less room for blocks.")
    if got == one:
        return wrong(f"that is one stage; shared memory holds STAGES = {c.STAGES} of them.")
    if got == 2 * one:
        return wrong(f"two buffers is 09_double_buffering; this kernel holds STAGES = {c.STAGES}.")
    if got == c.STAGES * (c.BM + c.BN) * c.BK * 4:
        return wrong("close: each row of the transposed A tile has 4 floats of padding.")
    if got == c.STAGES * (c.BM + 4 + c.BN) * c.BK:
        return wrong("that is the number of floats; a float is 4 bytes.")
    return wrong("per stage: As holds BK x (BM + 4) floats and Bs BK x BN; multiply by the stages and 4 bytes.")


def _ex09_2_schedule():
    return pipeline.kernel_schedule(stages.variant("09_double_buffering"), tiles=EX09_2_TILES)


def _overlapping(schedule) -> int:
    """The barrier intervals that compute on one tile while another's loads are issued or in flight."""
    return sum(1 for i in schedule.intervals if i.computed and (i.loading or i.in_flight))


def check_09_exercise_2(answer) -> Feedback:
    """In the schedule of 09_double_buffering (default configuration, K = EX09_2_TILES tiles), how many
    barrier intervals compute on one tile while the loads of another are issued?"""
    got = parse_whole(answer, "intervals")
    if isinstance(got, Feedback):
        return got
    s = _ex09_2_schedule()
    overlap = _overlapping(s)
    if got == overlap:
        return right(f"{overlap} of {len(s.intervals)}: every tile but the last is computed while the next one's loads "
                     "are on their way; the first interval only loads and the last only computes.")
    if got == 0:
        return wrong("0 is stage 08, which loads and computes in separate intervals. Run "
                     "pipeline.kernel_schedule(...).table() for 09.")
    if got == EX09_2_TILES:
        return wrong("the last tile has no next tile to load while it is computed.")
    if got == len(s.intervals):
        return wrong("the first interval only loads: nothing is in shared memory to compute on yet.")
    return wrong("read the schedule's table: count the intervals with both a tile computed and loads issued.")


EX09_3_BARRIER = "        __syncthreads();  // the next tiles are complete before anyone reads them\n"


def broken_double_buffering():
    """A copy of kernels/09_double_buffering.cu without the barrier after the next tiles are stored,
    in a temporary folder; returns its path (the learner's kernel file is not touched)."""
    src = stages.variant("09_double_buffering").path
    text = src.read_text()
    if text.count(EX09_3_BARRIER) != 1:
        raise RuntimeError(f"{src.name} no longer has the barrier this exercise removes ({EX09_3_BARRIER.strip()!r}).")
    path = Path(tempfile.mkdtemp(prefix="tbt_ex09_")) / src.name
    path.write_text(text.replace(EX09_3_BARRIER, ""))
    return path


def broken_double_buffering_races() -> list:
    """What the race check finds in a trace of broken_double_buffering() on a small problem."""
    c = configs.DoubleBufferConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=1)
    M, N, K = 64, 64, 48
    rng = np.random.default_rng(3)
    A, B = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((M, K), (K, N)))
    C = np.zeros((M, N), np.float32)
    t = trace.capture(broken_double_buffering(), stages.variant("09_double_buffering").name_expression(c),
                      c.grid(M, N), c.block(), launch_args(M, N, K, 1.0, A, B, 0.0, C))
    return memory.races(t)


def _ex09_3_first_race() -> tuple[int, int]:
    race = broken_double_buffering_races()[0]
    return race.first[1], race.second[1]


def check_09_exercise_3(answer) -> Feedback:
    """(line of the write, line of the read) named by the race check's first race in the kernel without
    the barrier after the next tiles are stored (broken_double_buffering())."""
    pair = parse_pair(answer, "(line of the write, line of the other access)")
    if isinstance(pair, Feedback):
        return pair
    races = broken_double_buffering_races()
    if not races:
        return wrong("the race check found no race in the broken kernel: the exercise no longer matches the kernel file.")
    lines = {(r.first[1], r.second[1]) for r in races}
    first = (races[0].first[1], races[0].second[1])
    if pair in lines:
        return right(f"the store of the next tiles (line {pair[0]}) and a read of the same shared words (line "
                     f"{pair[1]}) with no barrier between them: {len(races)} races in all. Put the barrier back and "
                     "the check finds none (section 3).")
    if pair[::-1] in lines:
        return wrong("swapped: the first number is the line that writes the shared word.")
    return wrong(f"print(*exercises.broken_double_buffering_races()[:3], sep='\\n') lists the races; each names "
                 f"the two lines (the first one, for instance, is between lines {first[0]} and ...).")


# ---- the prediction before section 5 measures: which of 08 and the two 09 kernels is fastest ----------------------
PRED09_CHOICES = {"a": "08_warp_tiling", "b": "09_double_buffering", "c": "09_async_copy"}
PRED09_RUN = "exp_08_09"   # the run of facts.H200_RUNS_07_09 the notebook's table shows


def _pred09_fastest(run: dict) -> str:
    return max(PRED09_CHOICES, key=lambda k: run[PRED09_CHOICES[k]])


def _pred09_answer() -> str:
    return _pred09_fastest(facts.h200_runs_07_09()[PRED09_RUN])


def check_09_prediction(answer) -> Feedback:
    """Before section 5 measures it: which default ran fastest at 4096^3 on an H200, 08_warp_tiling,
    09_double_buffering or 09_async_copy? A letter of PRED09_CHOICES, from
    results/stages_06_09_h200_2026-11-22/exp_08_09.json."""
    got = parse_choice(answer, PRED09_CHOICES, "the fastest of the three defaults")
    if isinstance(got, Feedback):
        return got
    runs = facts.h200_runs_07_09()
    r = runs[PRED09_RUN]
    want = _pred09_answer()
    if got == want:
        same = sum(_pred09_fastest(x) == want for x in runs.values())
        others = [f"{name}: " + ", ".join(f"{PRED09_CHOICES[k]} {x[PRED09_CHOICES[k]]:.2f}" for k in PRED09_CHOICES)
                  for name, x in runs.items() if _pred09_fastest(x) != want]
        return right(f"{want}, {PRED09_CHOICES[want]}: " + ", ".join(
            f"{PRED09_CHOICES[k]} {r[PRED09_CHOICES[k]]:.1f}" for k in PRED09_CHOICES)
            + f" TFLOP/s (NVIDIA H200, 4096³, results/stages_06_09_h200_2026-11-22/{PRED09_RUN}.json). It was the "
            f"fastest in {same} of the {len(runs)} committed H200 runs (two experiments and five ladders)"
            + (f"; not in {'; '.join(others)}" if others else "") + ". A block's threads hide the next tile's "
            "loads behind the math just as well through registers, and the asynchronous copies of A must be 4 bytes "
            "wide to land transposed.")
    if got == "a":
        return wrong("08 loads a tile, waits at a barrier, computes, waits again: section 1's schedule of 08 computes "
                     "in no interval that loads. Both 09 kernels overlap the two. Which of them does it more cheaply?")
    if got == "c":
        return wrong("asynchronous copies skip the registers, but both 09 kernels overlap a tile's loads with the "
                     "previous tile's math (section 1's schedules). Look at what each copy moves: section 4's "
                     "per-line view gives the width of the copies of A and B in 09_async_copy. Is the extra depth "
                     "of the pipeline worth more than those instructions?")
    return wrong("09_double_buffering keeps the next tile's loads in flight in registers while it computes, with one "
                 "barrier per tile: compare its schedule in section 1 with 08's before you choose.")


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where check_09_prediction's answer would be on the screen: a default's TFLOP/s of the run the notebook
    shows, as its table prints them."""
    r = facts.h200_runs_07_09()[PRED09_RUN]
    return [(f"{v}'s TFLOP/s in {PRED09_RUN}", rf"(?<![\d.]){r[v]:.1f}\s*TFLOP/s") for v in PRED09_CHOICES.values()]

"""Stage 08's exercises (warp tiling): how a block tile splits into warp tiles and lanes, and the
shared memory the kernel declares (traced from the kernel file)."""

from __future__ import annotations

from helpers.core import configs
from helpers.course.exercises.feedback import Feedback, parse_choice, parse_pair, parse_whole, right, wrong
from helpers.course.exercises.traces import traced_shared_bytes
from helpers.measure import facts

# Exercises 1 and 2: the warp tiles of the kernel the learner writes at the end of notebook 08 (64 x 64
# blocks, 32 x 32 warp tiles, 4 x 8 per lane) with tiles 32 deep. Not 08's default or a registered
# alternative: the notebook prints their warps, lanes and shared bytes above the exercises.
EX08_1_CONFIG = dict(BM=64, BN=64, BK=32, WM=32, WN=32, TM=4, TN=8)


def _ex08_1_want() -> tuple[int, int]:
    c = configs.WarpTileConfig(**EX08_1_CONFIG)
    return (c.BM // c.WM) * (c.BN // c.WN), c.WM // c.TM


def check_08_exercise_1(answer) -> Feedback:
    """(warps per block, lanes along a column of the warp tile, i.e. WM / TM) for EX08_1_CONFIG."""
    pair = parse_pair(answer, "(warps per block, WM / TM)")
    if isinstance(pair, Feedback):
        return pair
    c = configs.WarpTileConfig(**EX08_1_CONFIG)
    warps, rows = _ex08_1_want()
    if pair == (warps, rows):
        return right(f"the {c.BM} x {c.BN} block tile holds ({c.BM}/{c.WM}) x ({c.BN}/{c.WN}) = {warps} warp tiles, one "
                     f"per warp ({c.threads()} threads); a {c.WM} x {c.WN} warp tile holds {rows} x {c.WN // c.TN} "
                     f"thread tiles of {c.TM} x {c.TN}, one per lane.")
    got_warps, got_rows = pair
    if got_warps == c.threads():
        return wrong(f"{got_warps} is the number of threads; a warp is 32 of them.")
    if got_warps != warps:
        return wrong(f"each warp owns one WM x WN = {c.WM} x {c.WN} tile of the BM x BN = {c.BM} x {c.BN} block tile: "
                     "how many fit?")
    if got_rows == c.WN // c.TN:
        return wrong(f"{got_rows} is WN / TN, the lanes along a row of the warp tile; the question asks WM / TM.")
    if got_rows == 32:
        return wrong("32 is all the lanes of the warp; they form a (WM/TM) x (WN/TN) grid over the warp tile.")
    return wrong(f"the warps are right ({warps}). A lane's tile is TM = {c.TM} rows high and the warp tile WM = "
                 f"{c.WM}: how many lanes stack along its rows?")


def check_08_exercise_2(answer) -> Feedback:
    """Bytes of static shared memory of 08_warp_tiling with EX08_1_CONFIG, as the kernel declares it."""
    got = parse_whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = configs.WarpTileConfig(**EX08_1_CONFIG)
    traced = traced_shared_bytes("08_warp_tiling", c)
    if got == traced:
        return right(f"As is BK x (BM + 4) = {c.BK} x {c.BM + 4} floats and Bs BK x BN = {c.BK} x {c.BN}: "
                     f"{traced} bytes, as the trace of the kernel's shared arrays says.")
    if got == (c.BM + c.BN) * c.BK * 4:
        return wrong("close: the rows of the transposed A tile are padded by 4 floats (from stage 07). Count them.")
    if got == (c.BM + 4 + c.BN) * c.BK:
        if got == (c.BM + 4 + c.BN) * 8 * 4:   # the two slips give the same number at BK = 32
            return wrong(f"that is the number of floats at BK = {c.BK}, or the bytes at the starter's BK = 8: this "
                         f"configuration's tiles are {c.BK} deep, and a float is 4 bytes.")
        return wrong("that is the number of floats; a float is 4 bytes.")
    if got * 2 == traced or got == (c.BM + 4 + c.BN) * 8 * 4:
        return wrong(f"BK is {c.BK} in this configuration.")
    return wrong(f"add the two tiles: As holds BK x (BM + 4) floats, Bs holds BK x BN, 4 bytes each (BK = {c.BK}).")


# ---- the prediction before section 5 measures: 08 against 07, both at their defaults ------------------------------
PRED08_CHOICES = {"a": "more than 2 % slower than 07", "b": "within 2 % of 07, either way",
                  "c": "2 to 10 % faster than 07", "d": "more than 10 % faster than 07"}
PRED08_BANDS = {"a": (-100.0, -2.0), "b": (-2.0, 2.0), "c": (2.0, 10.0), "d": (10.0, float("inf"))}
PRED08_RUN = "exp_08_09"   # the run of facts.H200_RUNS_07_09 the notebook's table shows


def _pred08_changes() -> dict[str, float]:
    """run -> how much faster 08_warp_tiling ran than 07_vectorized in that run, in %."""
    return {name: 100.0 * (r["08_warp_tiling"] / r["07_vectorized"] - 1) for name, r in facts.h200_runs_07_09().items()}


def _pred08_answer() -> str:
    change = _pred08_changes()[PRED08_RUN]
    return next(k for k, (lo, hi) in PRED08_BANDS.items() if lo <= change < hi)


def check_08_prediction(answer) -> Feedback:
    """Before section 5 measures it: 08_warp_tiling's default against 07_vectorized's at 4096^3 on an H200, in the
    same run. A letter of PRED08_CHOICES, from the band of the change in
    results/stages_06_09_h200_2026-11-22/exp_08_09.json."""
    got = parse_choice(answer, PRED08_CHOICES, "how 08 compares with 07")
    if isinstance(got, Feedback):
        return got
    want = _pred08_answer()
    runs = facts.h200_runs_07_09()
    r = runs[PRED08_RUN]
    changes = _pred08_changes()
    if got == want:
        return right(f"{want}, {PRED08_CHOICES[want]}: 08_warp_tiling {r['08_warp_tiling']:.1f} TFLOP/s, 07_vectorized "
                     f"{r['07_vectorized']:.1f}, {changes[PRED08_RUN]:+.1f} % (NVIDIA H200, 4096³, "
                     f"results/stages_06_09_h200_2026-11-22/{PRED08_RUN}.json). In all {len(runs)} committed H200 runs "
                     f"(two experiments and five ladders) the change stayed between {min(changes.values()):+.1f} and "
                     f"{max(changes.values()):+.1f} %. A third fewer shared wavefronts did not matter: the H200 was not "
                     f"waiting on shared memory.")
    if PRED08_BANDS[got][0] >= PRED08_BANDS[want][1]:
        return wrong("section 4 found the same requests per warp, and Nsight Compute a third fewer shared wavefronts "
                     "for 08. Ask whether shared memory was what the H200 was waiting on: stage 07's inner loop was "
                     "already mostly FFMA (its header counts the instructions). Fewer wavefronts help only a kernel "
                     "that waits on them.")
    return wrong("warp tiling changes which values each warp reads, not how many instructions a thread issues "
                 "(section 2's diff: indices only, the same copies and inner loop). What would make it slower?")


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where check_08_prediction's answer would be on the screen: 08's or 07's TFLOP/s of the run the notebook
    shows, as its table prints them."""
    r = facts.h200_runs_07_09()[PRED08_RUN]
    return [(f"{v}'s TFLOP/s in {PRED08_RUN}", rf"(?<![\d.]){r[v]:.1f}\s*TFLOP/s") for v in ("08_warp_tiling", "07_vectorized")]

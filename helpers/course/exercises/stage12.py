"""Stage 12's exercises (Hopper: TMA, mbarriers, warp specialization): a prediction of which idea buys the most
(from the committed H200 measurements), the bytes a stage's barrier waits for (from the configuration), and the
shape of the committed sweep furthest below cuBLAS."""

from __future__ import annotations

from helpers.core.configs_hopper import WarpSpecializedConfig
from helpers.course.exercises.feedback import (Feedback, is_placeholder, parse_whole, right, unanswered, whole,
                                               wrong)
from helpers.measure import hopper

# the prediction's choices: each a step of the committed measurements, against the step before it
PREDICTION_CHOICES = {"a": "TMA + warp specialization", "b": "+ persistent tiles", "c": "+ TF32 rounded by the copy engine"}
EX12_1_CONFIG = WarpSpecializedConfig(BM=128, CONSUMERS=1, STAGES=3)


def _gains() -> dict[str, float]:
    """Each step's gain in percentage points of cuBLAS TF32 at 4096³ over the step before it (10_wgmma first)."""
    med = hopper.step_medians(hopper.measurements())
    order = ["10_wgmma", *PREDICTION_CHOICES.values()]
    return {step: med[step] - med[before] for before, step in zip(order, order[1:])}


def _prediction_answer() -> str:
    gains = _gains()
    best = max(gains, key=gains.get)
    return next(k for k, v in PREDICTION_CHOICES.items() if v == best)


def check_12_prediction(answer) -> Feedback:
    """Which idea gains the most at 4096³ on an H200, each over the kernel before it: 'a', 'b' or 'c'."""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with 'a', 'b' or 'c': the idea you expect to gain the most over "
                          "the step before it.")
    choice = str(answer).strip().lower().strip("()'\" ")
    if choice not in PREDICTION_CHOICES:
        return wrong(f"answer with one letter, 'a', 'b' or 'c', not {answer!r}.")
    gains = _gains()
    said = " · ".join(f"{k}: {gains[v]:+.1f} points" for k, v in PREDICTION_CHOICES.items())
    where = hopper.label(hopper.measurements())
    if choice == _prediction_answer():
        return right(f"Each idea over the one before it, in % of cuBLAS TF32 at 4096³: {said}. {where}. Feeding "
                     "the tensor cores by one thread's TMA copies and barriers frees the multiplying warpgroups from "
                     "every address and edge check of 10_wgmma's copies, which cost them more than the products.")
    return wrong("think about what 10_wgmma's multiplying threads did besides multiplying (every 16-byte copy, its "
                 "address and its edge check, a __syncthreads per tile) and which idea takes that off them; then "
                 "what a persistent block saves (a launch per tile, its first loads) when a tile's loop is 128 "
                 "k-tiles long, and what rounding costs when the copy engine does it.")


def _stage_bytes(config: WarpSpecializedConfig) -> int:
    """The bytes one stage's full barrier waits for: A's box and B's boxes (mbarrier_arrive_expect_tx)."""
    a, b = config.tensor_maps(1, 1, 1)
    return 4 * (a.box_rows * a.box_cols + (config.BN // b.box_cols) * b.box_rows * b.box_cols)


def check_12_exercise_1(answer) -> Feedback:
    """The bytes the producer announces per stage (mbarrier_arrive_expect_tx) with EX12_1_CONFIG."""
    n = parse_whole(answer, "bytes")
    if isinstance(n, Feedback):
        return n
    want, c = _stage_bytes(EX12_1_CONFIG), EX12_1_CONFIG
    if n == want:
        return right(f"{want:,} bytes: A's box of {c.BM} × 32 floats and {c.BN // 32} boxes of B of 32 × 32, 4 bytes "
                     "each. The barrier's phase completes when all of them have landed, zero-filled boxes past an "
                     "edge included: the copy engine counts the box, not the bytes it read.")
    if n == want // 4:
        return wrong("that is the number of floats: a barrier counts bytes.")
    return wrong(f"count the boxes one stage's copies fill: A's is BM × 32 floats, and B's tile, BN = {c.BN} columns, "
                 "comes as boxes of 32 × 32. Then 4 bytes a float.")


def _worst_shape() -> tuple[int, int, int]:
    data = hopper.measurements()
    worst = min(data["sweep"], key=lambda r: r["pct_cublas_tf32"])
    return tuple(worst["shape"])


def check_12_exercise_2(answer) -> Feedback:
    """The shape (M, N, K) of the committed sweep where the kernel is furthest below cuBLAS TF32."""
    if is_placeholder(answer):
        return unanswered("replace the placeholders with three whole numbers, the shape (M, N, K).")
    try:
        shape = tuple(whole(v) for v in answer)
    except (TypeError, ValueError):
        return wrong(f"give the shape as three whole numbers, (M, N, K); got {answer!r}.")
    want = _worst_shape()
    if shape == want:
        row = next(r for r in hopper.measurements()["sweep"] if tuple(r["shape"]) == want)
        return right(f"{want[0]} × {want[1]} × {want[2]}: {row['pct_cublas_tf32']:.1f} % of cuBLAS TF32. Count its "
                     "tiles of 256 × 128 and compare with the 132 SMs: a small problem is a fraction of one wave, "
                     "and a block's pipeline fill and drain are not hidden behind any other tile.")
    return wrong("read the column '% of cuBLAS TF32' of the sweep table: which row is smallest?")

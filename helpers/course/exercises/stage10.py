"""Stage 10's exercises (tensor cores): the dynamic shared memory of 10_tensor_cores, what one HMMA
instruction does and what TF32 truncation costs (from the committed GPU measurements of
results/stage_10_*), and the work of one wgmma instruction."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers.core.configs_tensor_cores import TensorCoreConfig
from helpers.core import results_files, stages
from helpers.core.paths import RESULTS_DIR
from helpers.course.exercises.feedback import (Feedback, is_placeholder, number, parse_choice, parse_whole,
                                               parse_whole_pair, right, unanswered, wrong)
from helpers.measure import facts

EX10_DEFAULT = dict(BM=128, BN=128, BK=32, WM=64, WN=64, STAGES=3, ROUND=1)   # 10's default (exercise 2's launch)
# Exercise 1: the default with 4 stages, which the notebook's table of configurations (above the
# exercise) does not list; it lists the default's own bytes.
EX10_1_CONFIG = dict(EX10_DEFAULT, STAGES=4)
# Exercise 3: how close a ratio must be. Two decimals, as the question asks: 10_wgmma's own ratio
# (2.65, quoted in its kernel file, which the notebook shows) is another kernel's and does not pass.
EX10_3_TOLERANCE = 0.02


def check_10_exercise_1(answer) -> Feedback:
    """Bytes of dynamic shared memory one block of 10_tensor_cores asks for with EX10_1_CONFIG."""
    got = parse_whole(answer, "bytes")
    if isinstance(got, Feedback):
        return got
    c = TensorCoreConfig(**EX10_1_CONFIG)
    want = c.shared_bytes()
    tiles = c.STAGES * (c.BM * (c.BK + 4) + c.BK * (c.BN + 8))
    staging = c.warps() * 16 * 20
    if got == want:
        return right(f"{c.STAGES} stages of BM x (BK + 4) + BK x (BN + 8) floats ({tiles} floats) and a 16 x 20 staging "
                     f"tile per warp ({staging} floats): {want} bytes, more than the 48 KiB a static __shared__ array "
                     "may take, so the kernel declares it extern and the launch gives the size.")
    if got == tiles + staging:
        return wrong("that is the number of floats; a float is 4 bytes.")
    if got == 4 * tiles:
        return wrong("add the staging tiles: each warp has 16 x 20 floats to take its results out of the fragments.")
    if got == 4 * (c.STAGES * (c.BM * c.BK + c.BK * c.BN) + staging) or got == 4 * (c.STAGES * (c.BM * c.BK + c.BK * c.BN)):
        return wrong("the rows are padded: A's tile rows hold BK + 4 floats and B's BN + 8.")
    if got == 4 * (tiles // c.STAGES + staging):
        return wrong(f"that is one stage; the pipeline holds STAGES = {c.STAGES} tiles of A and of B.")
    return wrong("add STAGES x (BM x (BK + 4) + BK x (BN + 8)) floats of tiles and (BM/WM) x (BN/WN) x 16 x 20 of "
                 "staging, then multiply by 4 bytes (the comment at the top of the kernel lists the layout).")


def stage10_results() -> Path:
    """The newest committed folder of stage-10 GPU measurements (results/stage_10_*)."""
    found = sorted(RESULTS_DIR.glob("stage_10_*/exp_10.json"))
    if not found:
        raise FileNotFoundError("no results/stage_10_*/exp_10.json: run tools/experiments/exp_10.py on a GPU")
    return found[-1].parent


def _ex10_2_counts() -> tuple[int, int]:
    """(multiply-adds, HMMA instructions) of the committed Nsight Compute launch of 10's default."""
    text = (stage10_results() / "ncu_10_metrics.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if line.startswith('"'))
    c = TensorCoreConfig(**EX10_DEFAULT)
    name = stages.variant("10_tensor_cores").name_expression(c)
    hmma = next(int(r["Metric Value"].replace(",", "")) for r in rows
                if name in r["Kernel Name"] and r["Metric Name"] == "sm__inst_executed_pipe_tensor_op_hmma.sum")
    return 4096 ** 3, hmma


def _ex10_2_fmas_per_hmma() -> int:
    fmas, hmma = _ex10_2_counts()
    return fmas // hmma


def check_10_exercise_2(answer) -> Feedback:
    """Multiply-adds per HMMA instruction, from the committed Nsight Compute count at 4096^3."""
    got = parse_whole(answer, "multiply-adds")
    if isinstance(got, Feedback):
        return got
    fmas, hmma = _ex10_2_counts()
    want = fmas // hmma
    if got == want:
        return right(f"4096^3 = {fmas:,} multiply-adds over {hmma:,} HMMA instructions: {want} each, a 16 x 8 x 4 "
                     f"product. One wmma 16 x 16 x 8 mma_sync ({16 * 16 * 8} multiply-adds) is {16 * 16 * 8 // want} "
                     "hardware instructions: the SASS says which (HMMA.1684.F32.TF32).")
    if got == 16 * 16 * 8:
        return wrong("that is one wmma::mma_sync (16 x 16 x 8); the count of HMMA instructions says the hardware "
                     "splits it. Divide 4096^3 by that count.")
    if got == 2 * want:
        return wrong("that is twice the answer: either floating-point operations (2 per multiply-add), or what one of "
                     "10_mma_sync's HMMA instructions does (section 6). The question asks for multiply-adds per HMMA "
                     "of 10_tensor_cores, the wmma kernel, whose count section 5's table shows.")
    return wrong(f"divide the multiply-adds of the product, 4096^3, by the HMMA instructions Nsight Compute counted "
                 f"({hmma:,}).")


def _ex10_3_ratio() -> float:
    rows = results_files.read_json(stage10_results() / "exp_10.json")["precision"]
    rms = {r["what"].rsplit("ROUND=", 1)[1].rstrip(")"): r["rms_err_over_rms"]
           for r in rows if r["what"].startswith("10_tensor_cores") and "ROUND=" in r["what"]}
    return rms["0"] / rms["1"]


def check_10_exercise_3(answer) -> Feedback:
    """From the committed precision rows: the RMS error of ROUND = 0 over that of ROUND = 1."""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with a number, the ratio of the two RMS errors.")
    try:
        got = number(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with a number (the ratio), not {answer!r}.")
    want = _ex10_3_ratio()
    if abs(got - want) <= EX10_3_TOLERANCE:
        return right(f"the ratio is {want:.3f}: dropping the low 13 bits errs {want:.1f} times as far as rounding them. "
                     "Truncation always shrinks an input, so each product is biased by about 2^-10 on top of the same "
                     "spread as rounding: about sqrt(7) = 2.65 times the RMS error, close to what was measured. "
                     "Rounded inputs give what cuBLAS in TF32 gives.")
    if abs(got - 1 / want) <= 0.05:
        return wrong("upside down: ROUND = 0's error over ROUND = 1's.")
    if abs(got - want) <= 0.1:
        return wrong("close, but not to two decimals. Take the two 10_tensor_cores rows (ROUND=0 and ROUND=1) of the "
                     "'RMS error / RMS(C)' column in section 5's precision table (tensor_cores.committed_precision(), "
                     "the committed run at 4096³), not section 3's emulator run at 128 x 128 x 512; 10_wgmma's ratio, "
                     "quoted in its kernel file, is another kernel's measurement.")
    if abs(got - 2) <= 0.05:
        return wrong("2 is what one input's worst case says (2^-10 against 2^-11); read the measured RMS errors in "
                     "section 5's precision table.")
    return wrong("divide the 'RMS error / RMS(C)' of the ROUND=0 row by that of the ROUND=1 row, both 10_tensor_cores, "
                 "in section 5's precision table (tensor_cores.committed_precision()).")


def _ex10_4_want() -> tuple[int, int]:
    """(multiply-adds, bytes of A's tile read) of one wgmma m64 x nBM x k8: 10_wgmma's BM is wgmma's N."""
    bm = stages.variant("10_wgmma").default.BM
    return 64 * bm * 8, bm * 8 * 4


def check_10_exercise_4(answer) -> Feedback:
    """(multiply-adds, bytes): one wgmma_m64k8_tf32 of 10_wgmma's default configuration, and the
    bytes of A's tile the tensor cores read from shared memory for it."""
    pair = parse_whole_pair(answer, "the multiply-adds of one wgmma_m64k8_tf32, then the bytes of A it reads")
    if isinstance(pair, Feedback):
        return pair
    fmas, read = pair
    c = stages.variant("10_wgmma").default
    want = _ex10_4_want()
    if pair == want:
        return right(f"64 x {c.BM} x 8 = {want[0]:,} multiply-adds from {c.BM} rows x 8 floats = {want[1]:,} bytes of A's "
                     f"tile: 16 multiply-adds per byte the tensor cores read, however large BM is (each of A's values "
                     f"meets the 64 rows of the warpgroup's B fragment). wmma's mma_sync did 2,048 from operands its warp "
                     "had first loaded into registers.")
    if fmas == 2 * want[0]:
        return wrong("that counts floating-point operations (2 per multiply-add); the question asks for multiply-adds.")
    if read == 4 * want[1]:
        return wrong(f"that is A's whole tile ({c.BM} x 32 floats); one instruction reads one step of 8 along K.")
    if read == want[1] // 4:
        return wrong("that is the number of floats; a float is 4 bytes.")
    if fmas == want[0]:
        return wrong(f"the multiply-adds are right; for the bytes: the instruction's B operand in shared memory is "
                     f"{c.BM} rows (BM) of 8 TF32 values of K.")
    return wrong(f"the instruction is m64 x n{c.BM} x k8 (BM = {c.BM} is wgmma's N): a 64 x 8 tile from registers times an "
                 f"8 x {c.BM} tile from shared memory; count the products, then the bytes of the shared-memory operand.")


# ---- the prediction before section 5 measures: wmma against stage 09's FP32 kernel --------------------------------
PRED10_CHOICES = {"a": "less than 1.25 times as fast", "b": "1.25 to 1.5 times", "c": "1.5 to 2.5 times",
                  "d": "more than 2.5 times"}
PRED10_BANDS = {"a": (0.0, 1.25), "b": (1.25, 1.5), "c": (1.5, 2.5), "d": (2.5, float("inf"))}
PRED10_RUN = "gpu_h200_2026-11-25"   # the newest committed H200 ladder: every stage's default in one run
PRED10_WMMA = "wmma_run_tflops/10_tensor_cores/BM128,BN128,BK32,WM64,WN64,STAGES3,ROUND1"   # the fact of exp_10.json


def _pred10_run() -> dict:
    return facts.h200_runs_07_09()[PRED10_RUN]


def _pred10_ratio() -> float:
    r = _pred10_run()
    return r["10_tensor_cores"] / r["09_double_buffering"]


def _pred10_answer() -> str:
    ratio = _pred10_ratio()
    return next(k for k, (lo, hi) in PRED10_BANDS.items() if lo <= ratio < hi)


def check_10_prediction(answer) -> Feedback:
    """Before section 5 measures it: how many times as fast as 09_double_buffering (FP32, CUDA cores) did
    10_tensor_cores' default (TF32, wmma) run at 4096^3 on an H200, in the same run? A letter of PRED10_CHOICES, from
    the ratio in results/gpu_h200_2026-11-25/ladder.json."""
    got = parse_choice(answer, PRED10_CHOICES, "how many times as fast as stage 09 wmma ran")
    if isinstance(got, Feedback):
        return got
    want = _pred10_answer()
    r = _pred10_run()
    if got == want:
        return right(f"{want}, {PRED10_CHOICES[want]}: 10_tensor_cores {r['10_tensor_cores']:.1f} TFLOP/s against "
                     f"09_double_buffering's {r['09_double_buffering']:.1f}, {_pred10_ratio():.2f} times, with cuBLAS "
                     f"FP32 at {r['cublas']:.1f} in the same run (NVIDIA H200, 4096³, results/{PRED10_RUN}/ladder.json). "
                     f"Far from the tensor cores' peak: wmma feeds them from registers, and the rest of this notebook "
                     f"measures why.")
    if got < want:
        return wrong("one mma_sync does 16 × 16 × 8 = 2048 multiply-adds for the warp, and section 1 counted 32 "
                     "multiply-adds per float loaded from shared memory, against 4 for stage 09's thread tiles. Even "
                     "tensor cores kept far from busy do the FP32 lanes' work in much less time: aim higher.")
    return wrong("the tensor cores' TF32 peak is several times the FP32 lanes', but wmma feeds them through "
                 "registers: every fragment is loaded by the warp's lanes first (section 4: 255 registers, 2 blocks "
                 "of 4 warps per SM). Do they stay busy? Aim lower.")


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where check_10_prediction's answer would be on the screen: the wmma kernel's TFLOP/s or the ratio, as the
    notebook prints them."""
    return [("wmma's TFLOP/s in the ladder", rf"(?<![\d.]){_pred10_run()['10_tensor_cores']:.1f}\s*TFLOP/s"),
            ("wmma's TFLOP/s in exp_10.json", rf"(?<![\d.]){facts.value(PRED10_WMMA):.1f}\s*TFLOP/s"),
            ("the ratio to stage 09", rf"(?<![\d.]){_pred10_ratio():.1f}\s*times\s*09")]

"""Numbers notebook 10's prose states, beside the stage-10 facts of helpers/measure/facts.py (which registers these
with FACTS.update): 10_wgmma's committed H200 run (its rounds, sweep and precision rows), cuBLAS and the wmma
configurations of exp_10.json, and Nsight Compute's counts in millions. Markers: `<!-- fact: NAME -->`."""

from __future__ import annotations

import statistics

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure import tensor_cores

EXP_10 = RESULTS_DIR / "stage_10_h200_2026-11-23" / "exp_10.json"
WGMMA_RUN = RESULTS_DIR / "stage_10_h200_2026-11-24" / "measure_10_wgmma.json"
NCU_KERNELS = {"wmma": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 1>", "mma_sync": "sgemm_mma_sync<",
               "wgmma": "sgemm_wgmma<256, 128, 4, 0>", "wgmma_round1": "sgemm_wgmma<256, 128, 4, 1>",
               "cublas_tf32": "sm90_xmma"}
NCU_COUNTS = {"hmma": "sm__inst_executed_pipe_tensor_op_hmma.sum", "gmma": "sm__inst_executed_pipe_tensor_op_gmma.sum",
              "shared_loads": "smsp__sass_inst_executed_op_shared_ld.sum",
              "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"}


def _round_tflops(arg: str) -> float:
    """'KERNEL' or 'KERNEL/ROUND' (cublas_tf32, cublas_sgemm, 10_wgmma, 10_tensor_cores): TFLOP/s at 4096³ in that
    round of WGMMA_RUN, or the median of its rounds."""
    kernel, _, rnd = arg.partition("/")
    values = [r["tflops"] for rows in results_files.read_json(WGMMA_RUN)["rounds_4096"] for r in rows if r["kernel"] == kernel]
    return values[int(rnd) - 1] if rnd else statistics.median(values)


def _sweep_tflops(arg: str) -> float:
    """'KERNEL/SIZE': TFLOP/s of a kernel at SIZE³ in WGMMA_RUN's sweep."""
    kernel, _, size = arg.partition("/")
    return next(r["tflops"] for r in results_files.read_json(WGMMA_RUN)["sweep"] if r["kernel"] == kernel and r["size"] == int(size))


def _rms(arg: str) -> float:
    """'cublas_tf32', 'round0' or 'round1' (10_wgmma's ROUND): RMS error / RMS(C) in WGMMA_RUN's precision rows."""
    rows = results_files.read_json(WGMMA_RUN)["precision"]
    return next(r["rms_err_over_rms"] for r in rows if (r["what"] == "cuBLAS TF32" if arg == "cublas_tf32" else
                                                        r["what"].startswith("10_wgmma") and r["what"].endswith(f"ROUND={arg[-1]})")))


def _small_warp_tiles(how: str) -> float:
    """'min' or 'max' TFLOP/s of the wmma configurations of EXP_10 with warp tiles (WM × WN) smaller than 64 × 64."""
    values = []
    for r in results_files.read_json(EXP_10)["rows"]:
        args = [int(a) for a in r["expr"].split("<")[1].rstrip(">").split(",")]   # BM, BN, BK, WM, WN, STAGES, ROUND
        if r["variant"] == "10_tensor_cores" and r.get("tflops") and args[3] * args[4] < 64 * 64:
            values.append(r["tflops"])
    return {"min": min, "max": max}[how](values)


def _ncu_millions(arg: str) -> float:
    """'DAY/KERNEL/COUNT': a count (NCU_COUNTS) of a kernel (NCU_KERNELS) in results/stage_10_h200_DAY/ncu_10*_metrics.csv,
    in millions."""
    day, kernel, count = arg.split("/")
    rows = tensor_cores.committed_ncu(RESULTS_DIR / f"stage_10_h200_{day}", {NCU_COUNTS[count]: count})
    found = [r[count] for r in rows if r["kernel"].startswith(NCU_KERNELS[kernel]) and count in r]
    if not found:
        raise results_files.ResultsFileError(f"no {count} of {kernel} in results/stage_10_h200_{day}/ncu_10*_metrics.csv")
    return found[0] / 1e6


FACTS = {
    "s10_wgmma_round_tflops": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", _round_tflops),
    "s10_wgmma_sweep_tflops": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", _sweep_tflops),
    "s10_wgmma_rms": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", _rms),
    "s10_exp_cublas": ("stage_10_h200_2026-11-23/exp_10.json",   # 'fp32' or 'tf32': the mean of before and after
                       lambda kind: statistics.mean(tensor_cores.cublas(results_files.read_json(EXP_10))[kind])),
    "s10_wmma_small_warp_tiles": ("stage_10_h200_2026-11-23/exp_10.json", _small_warp_tiles),
    "s10_ncu_millions": ("stage_10_h200_*/ncu_10*_metrics.csv", _ncu_millions),
}


# ---- 10_wgmma measured again after the beta = 0 contract (results/stage_10_h200_2026-11-27_wgmma/) ----------------
WGMMA_AGAIN = RESULTS_DIR / "stage_10_h200_2026-11-27_wgmma" / "measure_10_wgmma.json"


def _again(arg: str) -> float:
    """'tflops_min', 'tflops_max', 'pct_min', 'pct_max' of 10_wgmma over the rounds at 4096³ of WGMMA_AGAIN, or
    'cublas_min', 'cublas_max': cuBLAS TF32's."""
    rounds = tensor_cores.wgmma_rounds(results_files.read_json(WGMMA_AGAIN))
    what, _, how = arg.partition("_")
    key = {"tflops": "10_wgmma TFLOP/s", "pct": "10_wgmma % of cuBLAS TF32", "cublas": "cublas_tf32 TFLOP/s"}[what]
    return {"min": min, "max": max}[how](r[key] for r in rounds)


FACTS["s10_wgmma_again"] = ("stage_10_h200_2026-11-27_wgmma/measure_10_wgmma.json", _again)


def _beta(arg: str) -> float:
    """'KERNEL/BETA' (BETA 0 or 1): the median TFLOP/s of that kernel at 4096³ with that beta (exp_10_beta.json)."""
    kernel, _, beta = arg.partition("/")
    return results_files.read_json(WGMMA_AGAIN.parent / "exp_10_beta.json")["median_tflops"][f"{kernel} beta={beta}"]


FACTS["s10_beta_tflops"] = ("stage_10_h200_2026-11-27_wgmma/exp_10_beta.json", _beta)

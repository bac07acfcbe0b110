"""Numbers notebook 10 (tensor cores) states: the wmma configurations' run (exp_10.json), 10_wgmma's two H200
runs (2026-11-24, and again after the beta = 0 contract with its beta run), its rounding on an H100 (notebook 12
cites that too), and Nsight Compute's tensor-pipe figures and instruction counts of each stage-10 folder."""

from __future__ import annotations

import statistics

from helpers.core import results_files, stages
from helpers.core.paths import RESULTS_DIR
from helpers.measure import tensor_cores
from helpers.measure.facts.common import config, fact, median, pick

WMMA_RUN = RESULTS_DIR / "stage_10_h200_2026-11-23" / "exp_10.json"
WGMMA_RUN = RESULTS_DIR / "stage_10_h200_2026-11-24" / "measure_10_wgmma.json"
WGMMA_RERUN = RESULTS_DIR / "stage_10_h200_2026-11-27_wgmma" / "measure_10_wgmma.json"   # after the beta = 0 contract
BETA_RUN = WGMMA_RERUN.parent / "exp_10_beta.json"
H100_ROUNDING_RUN = RESULTS_DIR / "stage_10_h100_2026-11-24" / "exp_10_wgmma_round.json"
NCU = "results/stage_10_h200_*/ncu_10*_metrics.csv"
NCU_KERNELS = {   # the GEMM kernels of the Nsight Compute runs, by the name a fact gives them
    "10_tensor_cores": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 1>",
    "10_tensor_cores_round0": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 0>",
    "10_mma_sync": "sgemm_mma_sync<128, 128, 32, 64, 64, 3, 1>",
    "10_wgmma": "sgemm_wgmma<256, 128, 4, 0>", "10_wgmma_round1": "sgemm_wgmma<256, 128, 4, 1>",
    "cublas_tf32": "sm90_xmma"}
NCU_COUNTS = {"hmma": "sm__inst_executed_pipe_tensor_op_hmma.sum", "gmma": "sm__inst_executed_pipe_tensor_op_gmma.sum",
              "shared_loads": "smsp__sass_inst_executed_op_shared_ld.sum",
              "wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"}
WMMA_DEFAULT_TILES = "BM128,BN128,BK32,WM64,WN64,STAGES3"


# ---- the wmma configurations (exp_10.json) ------------------------------------------------------------------------
def _wmma_row(variant: str, configuration: str) -> dict:
    expr = stages.variant(variant).name_expression(config(variant, configuration))
    return next(r for r in tensor_cores.committed_configs(results_files.read_json(WMMA_RUN)) if r["kernel"] == expr)


def _rounding_cost(rounding: str) -> float:
    """'ROUND1': how much slower ROUND = 1 ran than ROUND = 0 at the default tiles, in %; 'ROUND2': ROUND = 2 than 1."""
    r = int(rounding.removeprefix("ROUND"))
    rate = {n: _wmma_row("10_tensor_cores", f"{WMMA_DEFAULT_TILES},ROUND{n}")["TFLOP/s"] for n in (r - 1, r)}
    return 100.0 * (1 - rate[r] / rate[r - 1])


def _small_warp_tiles(how: str) -> float:
    """'min' or 'max' TFLOP/s of the wmma configurations with warp tiles (WM × WN) smaller than 64 × 64."""
    values = []
    for r in results_files.read_json(WMMA_RUN)["rows"]:
        args = [int(a) for a in r["expr"].split("<")[1].rstrip(">").split(",")]   # BM, BN, BK, WM, WN, STAGES, ROUND
        if r["variant"] == "10_tensor_cores" and r.get("tflops") and args[3] * args[4] < 64 * 64:
            values.append(r["tflops"])
    return pick(how, values)


# ---- 10_wgmma's runs (tools/measure_10_wgmma.py): interleaved rounds at 4096³, a sweep of sizes, precision --------
def _rounds(path, kernel: str, which: str, key: str = "tflops") -> float:
    """A kernel's TFLOP/s (key 'pct_cublas_tf32': % of cuBLAS TF32) at 4096³ in round WHICH ('round1'), or the
    min, max or median over the rounds."""
    values = [r[key] for rows in results_files.read_json(path)["rounds_4096"] for r in rows if r["kernel"] == kernel]
    return values[int(which.removeprefix("round")) - 1] if which.startswith("round") else pick(which, values)


def _sweep(kernel: str, size: str) -> float:
    rows = results_files.read_json(WGMMA_RUN)["sweep"]
    return next(r["tflops"] for r in rows if r["kernel"] == kernel and r["size"] == int(size))


def _rms_error(kernel: str, configuration: str = "") -> float:
    """RMS error / RMS(C) of cublas_tf32, or of a kernel's configuration, in WGMMA_RUN's precision rows."""
    what = "cuBLAS TF32" if kernel == "cublas_tf32" else f"{kernel} ({config(kernel, configuration).label()})"
    return next(r["rms_err_over_rms"] for r in results_files.read_json(WGMMA_RUN)["precision"] if r["what"] == what)


def _h100_rounding(rounding: str) -> float:
    """The mean TFLOP/s of 10_wgmma's default tiles with ROUND0 or ROUND1 on the H100."""
    data = results_files.read_json(H100_ROUNDING_RUN)
    with results_files.reading(H100_ROUNDING_RUN):
        want = f"sgemm_wgmma<256, 128, 4, {rounding.removeprefix('ROUND')}>"
        return statistics.mean(row["tflops"] for row in data["rows"] if row["config"] == want)


# ---- Nsight Compute (tools/experiments/ncu_10.sh) ----------------------------------------------------------------
def _ncu(folder: str, kernel: str, key: str, metrics=tensor_cores.NCU_METRICS) -> float:
    """A figure (key: the name `metrics` gives it) of the first launch of a kernel (NCU_KERNELS) that has it."""
    rows = tensor_cores.committed_ncu(RESULTS_DIR / folder, metrics)
    found = [r[key] for r in rows if r["kernel"].startswith(NCU_KERNELS[kernel]) and key in r]
    if not found:
        raise results_files.ResultsFileError(f"no {key} of {kernel} in results/{folder}/ncu_10*_metrics.csv")
    return found[0]


FACTS = {
    # VARIANT/CONFIGURATION (10_tensor_cores/BM128,BN128,BK32,WM64,WN64,STAGES3,ROUND1)
    "wmma_run_tflops": fact(WMMA_RUN, lambda variant, c: _wmma_row(variant, c)["TFLOP/s"]),
    # % of cuBLAS in the kernel's precision (TF32 for the tensor cores)
    "wmma_run_pct_cublas": fact(WMMA_RUN, lambda variant, c: _wmma_row(variant, c)["% of cuBLAS (same precision)"]),
    "wmma_run_rounding_cost_pct": fact(WMMA_RUN, _rounding_cost),
    "wmma_run_small_warp_tiles_tflops": fact(WMMA_RUN, _small_warp_tiles),
    # fp32 or tf32: the mean of cuBLAS before and after the configurations
    "wmma_run_cublas_tflops": fact(WMMA_RUN, lambda precision: statistics.mean(
        tensor_cores.cublas(results_files.read_json(WMMA_RUN))[precision])),
    # KERNEL/WHICH: 10_wgmma, 10_tensor_cores, cublas_tf32 or cublas_sgemm; round1 ... or min, max, median
    "wgmma_run_tflops": fact(WGMMA_RUN, lambda kernel, which: _rounds(WGMMA_RUN, kernel, which)),
    "wgmma_run_pct_cublas_tf32": fact(WGMMA_RUN, lambda kernel, which: _rounds(WGMMA_RUN, kernel, which,
                                                                               "pct_cublas_tf32")),
    "wgmma_run_sweep_tflops": fact(WGMMA_RUN, _sweep),
    "wgmma_run_sweep_pct_cublas_tf32": fact(WGMMA_RUN, lambda kernel, size: 100.0 * _sweep(kernel, size)
                                            / _sweep("cublas_tf32", size)),
    "wgmma_run_rms_error": fact(WGMMA_RUN, _rms_error),
    "wgmma_rerun_tflops": fact(WGMMA_RERUN, lambda kernel, which: _rounds(WGMMA_RERUN, kernel, which)),
    "wgmma_rerun_pct_cublas_tf32": fact(WGMMA_RERUN, lambda kernel, which: _rounds(WGMMA_RERUN, kernel, which,
                                                                                   "pct_cublas_tf32")),
    # KERNEL/beta0 or beta1: the median TFLOP/s at 4096³ with that beta
    "beta_run_tflops": fact(BETA_RUN, lambda kernel, beta: results_files.read_json(BETA_RUN)["median_tflops"][
        f"{kernel} beta={beta.removeprefix('beta')}"]),
    "h100_rounding_run_tflops": fact(H100_ROUNDING_RUN, _h100_rounding),
    # how much slower ROUND = 1 ran than ROUND = 0, in %
    "h100_rounding_run_cost_pct": fact(H100_ROUNDING_RUN, lambda: 100.0 * (1 - _h100_rounding("ROUND1")
                                                                            / _h100_rounding("ROUND0"))),
    # FOLDER/KERNEL (NCU_KERNELS): the tensor pipe's % busy
    "ncu_tensor_pipe_pct": fact(NCU, lambda folder, kernel: _ncu(folder, kernel, "tensor pipe active (%)")),
    # FOLDER/KERNEL/COUNT (NCU_COUNTS), in millions
    "ncu_count_millions": fact(NCU, lambda folder, kernel, count: _ncu(folder, kernel, count,
                                                                       {NCU_COUNTS[count]: count}) / 1e6),
}

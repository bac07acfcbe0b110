"""Numbers notebook 12 (Hopper the way cuBLAS does it) states: stage 12's committed H200 run (tools/measure_12.py:
its steps in interleaved rounds, configurations, sweep and precision), the run of its first kernel, and Nsight
Compute on it, whose files are named where their readers live (helpers/measure/hopper.py); and the H100 run of
2026-11-27 that notebooks 10 and 12 both cite (BETA_RUN: tools/measure_hopper_beta.py, 10_wgmma and 12 with beta = 0
and 1 beside cuBLAS TF32, the clocks and power of every timing, TF32's errors on zero-mean and same-sign data;
TMA_PROBE: tools/experiments/probe_tma_tf32.py, how TMA and the tensor cores turn FP32 into TF32, bit by bit)."""

from __future__ import annotations

import math

import numpy as np

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure import hopper
from helpers.measure.facts.common import config, fact, pick
from helpers.measure.facts.notebook_11 import LIBRARY_SWEEP, library_row, library_summary

STEPS = {"cublas_tf32": "cuBLAS TF32", "10_wgmma": "10_wgmma", "tma_warp_specialized": "TMA + warp specialization",
         "persistent_tiles": "+ persistent tiles", "rounded_by_copy_engine": "+ TF32 rounded by the copy engine"}
BETA_RUN = RESULTS_DIR / "stage_10_12_h100_2026-11-27_beta" / "measure_hopper_beta.json"   # an H100
TMA_PROBE = BETA_RUN.parent / "probe_tma_tf32.json"
BETA_KERNELS = {"cublas_tf32": "cuBLAS TF32", "10_wgmma": "10_wgmma (C_BATCH = 8)",
                "10_wgmma_cbatch1": "10_wgmma (C_BATCH = 1)",
                "12_warp_specialized": "12_warp_specialized (C_BATCH = 8)",
                "12_warp_specialized_cbatch1": "12_warp_specialized (C_BATCH = 1)",
                "10_wgmma_round1": "10_wgmma (ROUND = 1)",
                "12_warp_specialized_round0": "12_warp_specialized (ROUND = 0)"}
BETA_DATA = {"zero_mean": "U[-1,1)", "same_sign": "U[0,1)"}
BETA_ERRORS = {"rms": "rms_error_over_rms", "worst": "worst_error_over_tolerance"}
PROBE_MAPS = {"tf32": "TF32 map", "fp32": "FP32 map"}
PROBE_WHERE = {"landed": "landed in shared memory", "tensor": "what the tensor cores multiplied"}
PROBE_MODELS = {"even": "ties to even", "away": "ties away (cvt.rna)", "truncation": "truncation",
                "unchanged": "unchanged"}
NCU_KERNELS = {"10_wgmma": "10_wgmma", "12_warp_specialized_persistent": "12_warp_specialized (PERSISTENT=1)",
               "cublas_tf32": "cuBLAS TF32"}


def _steps(step: str, which: str, key: str) -> float:
    """A step's TFLOP/s (key 'tflops') or % of cuBLAS TF32 ('pct_cublas_tf32'; cuBLAS's own is 100) at 4096³: the
    median, min or max over the rounds."""
    rows = [r for rnd in hopper.measurements()["steps_4096"] for r in rnd if r["step"] == STEPS[step]]
    return pick(which, (r.get(key, 100.0) for r in rows))


def _config_tflops(configuration: str) -> float:
    """TFLOP/s at 4096³ of a configuration of 12_warp_specialized in the configurations' timings."""
    label = config("12_warp_specialized", configuration).label()
    rows = hopper.measurements()["configs_timed"]
    return next(r["tflops"] for r in rows if r["size"] == 4096 and r["config"] == label)


def _geomean(pcts) -> float:
    pcts = list(pcts)
    return math.exp(sum(math.log(p) for p in pcts) / len(pcts))


def _sweep(shape: str) -> float:
    """'4096x4096x4096': % of cuBLAS TF32 at that shape; 'geomean': over the shapes whose timing is the whole call
    (hopper.sweep_geomean: not those whose operands were copied to a padded pitch outside it); 'geomean_even_sides':
    without the shapes with an odd side, where cuBLAS TF32 leaves its fast kernels."""
    sweep = hopper.measurements()["sweep"]
    if shape == "geomean":
        return hopper.sweep_geomean(hopper.measurements())
    if shape == "geomean_even_sides":
        return _geomean(r["pct_cublas_tf32"] for r in sweep if all(n % 2 == 0 for n in r["shape"]))
    return next(r["pct_cublas_tf32"] for r in sweep if r["shape"] == [int(x) for x in shape.split("x")])


def _error_over_cublas(configuration: str, which: str) -> float:
    """A configuration's error ('max' or 'rms', over RMS(C)) over cuBLAS TF32's, in the precision rows."""
    rows = {r["what"]: r[f"{which}_err_over_rms"] for r in hopper.measurements()["precision"]}
    return rows[f"12_warp_specialized ({config('12_warp_specialized', configuration).label()})"] / rows["cuBLAS TF32"]


def _first_kernel_pct() -> float:
    """The median % of cuBLAS TF32 of the first kernel's rounding step (A's tiles rounded in shared memory)."""
    data = results_files.read_json(hopper.FIRST_KERNEL)
    return float(np.median([r["pct_cublas_tf32"] for rnd in data["steps_4096"] for r in rnd
                            if r["step"] == "+ TF32 rounded to nearest"]))


def _ncu_clock(kernel: str) -> float:
    """The SM clock (GHz) of a profiled GEMM of NCU_KERNELS (12's first launch is PERSISTENT=1), or 'other_max'."""
    clocks = hopper.ncu_sm_clocks()
    if kernel == "other_max":
        return max(clocks["other"])
    return clocks[NCU_KERNELS[kernel].split(" (")[0]][0]


def _ncu(kernel: str) -> dict:
    return hopper.committed_ncu().loc[NCU_KERNELS[kernel]]


# ---- the H100 run of 2026-11-27: beta = 0 and 1, C_BATCH = 8 and 1, clocks (tools/measure_hopper_beta.py) ---------
def _beta_rows(kernel: str, beta: str) -> list[dict]:
    """The timings (one a round) of a kernel of BETA_KERNELS with beta 'beta0' or 'beta1'."""
    b = float(beta.removeprefix("beta"))
    rows = [r for r in results_files.read_json(BETA_RUN)["rows"]
            if r["what"] == BETA_KERNELS[kernel] and r["beta"] == b]
    if not rows:
        raise results_files.ResultsFileError(f"no timing of {BETA_KERNELS[kernel]} with beta = {b} in {BETA_RUN.name}")
    return rows


def _beta(kernel: str, beta: str, which: str, key: str) -> float:
    """TFLOP/s ('tflops'), % of cuBLAS TF32 with the same beta in the same round ('pct_cublas_tf32') or time in ms
    ('median_ms'): the median, min or max over the rounds."""
    return pick(which, (r[key] for r in _beta_rows(kernel, beta)))


def _clocks(key: str, which: str) -> float:
    """A figure of the clocks sampled during each timing (sm_mhz_median, max_sm_mhz, power_w_median, power_limit_w):
    min, max or median over every timing of the run; 'near_limit_min'/'near_limit_max' over the timings whose median
    power was within 3 % of the limit."""
    clocks = [r["clocks"] for r in results_files.read_json(BETA_RUN)["rows"]]
    if which.startswith("near_limit_"):
        clocks, which = [c for c in clocks if c["power_w_median"] >= 0.97 * c["power_limit_w"]], which.removeprefix(
            "near_limit_")
    return pick(which, (c[key] for c in clocks))


def _timings(which: str) -> float:
    """How many timings: 'all', 'power_limited' (NVML named the SW power cap as a reason for the clock during it),
    'near_limit' (median power within 3 % of the limit)."""
    clocks = [r["clocks"] for r in results_files.read_json(BETA_RUN)["rows"]]
    keep = {"all": lambda c: True, "power_limited": lambda c: c["power_limited"] and "SW power cap" in c["reasons"],
            "near_limit": lambda c: c["power_w_median"] >= 0.97 * c["power_limit_w"]}[which]
    return float(sum(keep(c) for c in clocks))


def _beta_error(kernel: str, data: str, which: str) -> float:
    """A kernel's TF32 error with beta = 0 on BETA_DATA's data: 'rms' (RMS error / RMS(C)) or 'worst' (the worst
    |C - ref| over verify's tolerance)."""
    rows = results_files.read_json(BETA_RUN)["errors"]
    return next(r[BETA_ERRORS[which]] for r in rows
                if r["what"] == BETA_KERNELS[kernel] and r["beta"] == 0.0 and r["data"] == BETA_DATA[data])


def _probe(kind: str, where: str, model: str) -> float:
    """How many inputs the probe compared ('inputs') or how many disagreed with a model of PROBE_MODELS, through a
    map of PROBE_MAPS, where PROBE_WHERE; kind 'rna' (where 'all') is cvt.rna's."""
    data = results_files.read_json(TMA_PROBE)
    v = data["cvt.rna (__float_to_tf32)"] if kind == "rna" else data[PROBE_MAPS[kind]][PROBE_WHERE[where]]
    return float(v["inputs compared"] if model == "inputs" else v[PROBE_MODELS[model]]["disagreements"])


FACTS = {
    # STEP/WHICH: a step of STEPS; median, min or max over the rounds
    "hopper_steps_tflops": fact(hopper.MEASUREMENTS, lambda step, which: _steps(step, which, "tflops")),
    "hopper_steps_pct_cublas_tf32": fact(hopper.MEASUREMENTS, lambda step, which: _steps(step, which,
                                                                                        "pct_cublas_tf32")),
    "hopper_configs_tflops": fact(hopper.MEASUREMENTS, _config_tflops),
    "hopper_sweep_pct_cublas_tf32": fact(hopper.MEASUREMENTS, _sweep),
    "hopper_error_over_cublas_tf32": fact(hopper.MEASUREMENTS, _error_over_cublas),
    "hopper_first_kernel_pct_cublas_tf32": fact(hopper.FIRST_KERNEL, _first_kernel_pct),
    "hopper_first_kernel_tfloat32_maps_tflops": fact(hopper.FIRST_KERNEL, lambda: results_files.read_json(
        hopper.FIRST_KERNEL)["precision_tfloat32_maps"]["tflops"]),
    # KERNEL of NCU_KERNELS
    "hopper_ncu_tensor_pipe_pct": fact(hopper.NCU_STAGE_12, lambda kernel: float(_ncu(kernel)["tensor pipe busy (%)"])),
    "hopper_ncu_time_us": fact(hopper.NCU_STAGE_12, lambda kernel: float(_ncu(kernel)["time (µs)"])),
    "hopper_ncu_wavefronts_per_shared_load": fact(hopper.NCU_STAGE_12, lambda kernel: float(
        _ncu(kernel)["shared-load wavefronts"] / _ncu(kernel)["shared loads (warp instructions)"])),
    # KERNEL of NCU_KERNELS (its first profiled launch), or "other_max": the highest clock of the run's other launches
    "hopper_ncu_sm_ghz": fact(hopper.NCU_SECTIONS_12, _ncu_clock),
    # the H100 run of 2026-11-27. KERNEL (BETA_KERNELS)/beta0 or beta1/median, min or max over the rounds
    "hopper_beta_tflops": fact(BETA_RUN, lambda kernel, beta, which: _beta(kernel, beta, which, "tflops")),
    "hopper_beta_pct_cublas_tf32": fact(BETA_RUN, lambda kernel, beta, which: _beta(kernel, beta, which,
                                                                                  "pct_cublas_tf32")),
    # KERNEL: how much slower (%) its median with beta = 1 ran than with beta = 0
    "hopper_beta_cost_pct": fact(BETA_RUN, lambda kernel: 100.0 * (1 - _beta(kernel, "beta1", "median", "tflops")
                                                                   / _beta(kernel, "beta0", "median", "tflops"))),
    # KERNEL: the time (µs) beta = 1 added to its median time
    "hopper_beta_added_us": fact(BETA_RUN, lambda kernel: 1e3 * (_beta(kernel, "beta1", "median", "median_ms")
                                                                 - _beta(kernel, "beta0", "median", "median_ms"))),
    # KERNEL (10_wgmma or 12_warp_specialized)/BETA: how much faster (%) C_BATCH = 8 ran than C_BATCH = 1 (medians)
    "hopper_beta_batch_gain_pct": fact(BETA_RUN, lambda kernel, beta: 100.0 * (
        _beta(kernel, beta, "median", "tflops") / _beta(f"{kernel}_cbatch1", beta, "median", "tflops") - 1)),
    # KEY/WHICH (_clocks), and WHICH (_timings): counts of timings
    "hopper_beta_clocks": fact(BETA_RUN, _clocks),
    "hopper_beta_timings": fact(BETA_RUN, _timings),
    # KERNEL/zero_mean or same_sign/rms or worst, with beta = 0
    "hopper_beta_error": fact(BETA_RUN, _beta_error),
    # tf32 or fp32/landed or tensor/inputs or a model of PROBE_MODELS; rna/all/MODEL for cvt.rna
    "hopper_tma_probe_count": fact(TMA_PROBE, _probe),
    # helpers.sgemm(..., precision="tf32") as called on an H100 (notebook 11's library sweep): % of cuBLAS TF32 at a
    # shape (MxNxK, beta = 0), and the geometric mean over the held-out shapes ('held_out') or all ('all')
    "library_tf32_pct_cublas_tf32": fact(LIBRARY_SWEEP, lambda shape: library_row(shape)["tf32"]["pct_cublas"]),
    "library_tf32_geomean_pct_cublas_tf32": fact(LIBRARY_SWEEP, lambda which: library_summary(which, "tf32_geomean_pct_cublas")),
}

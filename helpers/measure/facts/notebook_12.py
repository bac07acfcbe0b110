"""Numbers notebook 12 (Hopper the way cuBLAS does it) states: stage 12's committed H200 run (tools/measure_12.py:
its steps in interleaved rounds, configurations, sweep and precision), the run of its first kernel, and Nsight
Compute on it. The files are named where their readers live (helpers/measure/hopper.py)."""

from __future__ import annotations

import math

import numpy as np

from helpers.core import results_files
from helpers.measure import hopper
from helpers.measure.facts.common import config, fact, pick
from helpers.measure.facts.notebook_11 import LIBRARY_SWEEP, library_row, library_summary

STEPS = {"cublas_tf32": "cuBLAS TF32", "10_wgmma": "10_wgmma", "tma_warp_specialized": "TMA + warp specialization",
         "persistent_tiles": "+ persistent tiles", "rounded_by_copy_engine": "+ TF32 rounded by the copy engine"}
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
    # helpers.sgemm(..., precision="tf32") as called on an H100 (notebook 11's library sweep): % of cuBLAS TF32 at a
    # shape (MxNxK, beta = 0), and the geometric mean over the held-out shapes ('held_out') or all ('all')
    "library_tf32_pct_cublas_tf32": fact(LIBRARY_SWEEP, lambda shape: library_row(shape)["tf32"]["pct_cublas"]),
    "library_tf32_geomean_pct_cublas_tf32": fact(LIBRARY_SWEEP, lambda which: library_summary(which, "tf32_geomean_pct_cublas")),
}

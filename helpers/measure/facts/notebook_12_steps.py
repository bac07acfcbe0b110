"""Numbers notebook 12's section on the steps past the stage states: the H100 runs of 2026-11-28
(helpers/measure/hopper_steps.py names their files): the steps timed beside the stage's kernel and cuBLAS TF32, Nsight
Compute on them, and the two experiments on the first cluster kernel."""

from __future__ import annotations

from helpers.measure import hopper_steps as hs
from helpers.measure.facts.common import fact

_BETA = {"beta0": 0.0, "beta1": 1.0}


def _cycles(kernel: str, run: str) -> float:
    return hs.ncu_metric(kernel, "Elapsed Cycles", {"final": hs.NCU_SECTIONS, "first": hs.NCU_FIRST_SECTIONS}[run])

FACTS = {
    # STEP (hopper_steps.STEPS)/N/beta0 or beta1/median, min or max over the rounds
    "steps_past_tflops": fact(hs.STEPS_RUN, lambda step, n, beta, which: hs.value(step, int(n), _BETA[beta], "tflops",
                                                                                 which)),
    "steps_past_pct_cublas_tf32": fact(hs.STEPS_RUN, lambda step, n, beta, which: hs.value(
        step, int(n), _BETA[beta], "pct_cublas_tf32", which)),
    # STEP/N/BETA: % faster than the stage's kernel (medians); _loss_pct: % slower; _first_run_: in the first run
    "steps_past_gain_pct": fact(hs.STEPS_RUN, lambda step, n, beta: hs.gain_pct(step, int(n), _BETA[beta])),
    "steps_past_loss_pct": fact(hs.STEPS_RUN, lambda step, n, beta: -hs.gain_pct(step, int(n), _BETA[beta])),
    "steps_past_first_run_loss_pct": fact(hs.FIRST_RUN, lambda step, n, beta: -hs.gain_pct(
        step, int(n), _BETA[beta], hs.measurements(hs.FIRST_RUN))),
    # the first cluster kernel in the first run: STEP/N/BETA/WHICH
    "steps_past_first_run_tflops": fact(hs.FIRST_RUN, lambda step, n, beta, which: hs.value(
        step, int(n), _BETA[beta], "tflops", which, hs.measurements(hs.FIRST_RUN))),
    # the run of 128 x 128 tiles (bm128, bm128_cluster, stage, cublas_tf32): STEP/N/BETA/WHICH
    "steps_past_bm128_tflops": fact(hs.BM128_RUN, lambda step, n, beta, which: hs.value(
        step, int(n), _BETA[beta], "tflops", which, hs.measurements(hs.BM128_RUN))),
    # KERNEL (hopper_steps.NCU_KERNELS): % of its cycles the tensor pipe was busy; time (µs)
    "steps_past_ncu_tensor_pipe_pct": fact(hs.NCU, lambda kernel: hs.ncu_metric(kernel)),
    "steps_past_ncu_time_us": fact(hs.NCU, lambda kernel: hs.ncu_metric(kernel, "gpu__time_duration.sum") / 1e3),
    "steps_past_ncu_first_tensor_pipe_pct": fact(hs.NCU_FIRST, lambda kernel: hs.ncu_metric(kernel, path=hs.NCU_FIRST)),
    # KERNEL: how many fewer cycles (%) than the stage's kernel it took under Nsight Compute (elapsed cycles: not
    # the clock's), in the final run ('final') or the first ('first')
    "steps_past_ncu_cycles_saved_pct": fact(hs.NCU_SECTIONS, lambda kernel, run: 100.0 * (1 - _cycles(kernel, run)
                                                                                         / _cycles("stage", run))),
    # KERNEL: Nsight Compute's L2 throughput (% of peak), final run
    "steps_past_ncu_l2_pct": fact(hs.NCU_SECTIONS, lambda kernel: hs.ncu_metric(kernel, "L2 Cache Throughput",
                                                                                hs.NCU_SECTIONS)),
    # VARIANT (hopper_steps.ARRIVALS)/WHICH over the rounds
    "steps_past_cluster_arrivals_tflops": fact(hs.CLUSTER_ARRIVE, hs.arrivals_tflops),
    "steps_past_max_active_clusters": fact(hs.CLUSTER_GRID, lambda: float(
        hs.cluster_grid_row("CLUSTER = 2, a block per tile")["max_active_clusters"])),
    "steps_past_cluster_per_tile_tflops": fact(hs.CLUSTER_GRID, lambda: hs.cluster_grid_row(
        "CLUSTER = 2, a block per tile")["tflops"]),
}

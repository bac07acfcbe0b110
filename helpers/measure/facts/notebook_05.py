"""Numbers notebook 05 (2D thread tiling) states, beside the tuning run it shares with 04 (notebook_04): the
exploration of thread-to-output mappings before the tuning (kept in the first tuning run's file, 2026-11-22), and
the run that checked the stage's target (where the course's timer of then was found to time its launch checks too)."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import TFLOPS_COLUMNS, config, fact, label_pattern

EXPLORATION_RUN = RESULTS_DIR / "stages_04_05_h200_2026-11-22.json"   # its "exploration_05" section
TARGETS_RUN = RESULTS_DIR / "experiments_h200_2026-11-22" / "exp_bars.json"
TARGETS_RUN_KERNELS = {   # the kernels of TARGETS_RUN the notebook cites, by the name a fact gives them
    "seed_004_v1_float4": "ref v1<true> (seed 004 V1, float4)",       # the design the stage's target came from
    "05_course_timer": "05_2d_thread_tiling",                         # timed by the course's timer of then
    "05_raw_launches": "05_2d_thread_tiling NVRTC carveout 100"}      # the same kernel, raw launches


def _mappings() -> dict:
    return results_files.read_json(EXPLORATION_RUN)["exploration_05"]


def _mapping(mapping: str, unroll: str, configuration: str) -> float:
    """TFLOP/s of a thread-to-output mapping (contiguous, colstrided, strided), its k-loop unrolled
    ('unroll_2', 'unroll_full') at a configuration of 05_2d_thread_tiling."""
    label = config("05_2d_thread_tiling", configuration).label()
    return next(r["tflops"] for r in _mappings()["rows"]
                if r["mapping"] == mapping and f"unroll_{r['unroll']}" == unroll and r["config"] == label)


def _targets_run(kernel: str) -> float:
    rows = results_files.read_json(TARGETS_RUN)["rows"]
    return next(r["tflops"] for r in rows if r["kernel"] == TARGETS_RUN_KERNELS[kernel])


FACTS = {
    "thread_mapping_tflops": fact(EXPLORATION_RUN, _mapping, lambda mapping, unroll, c: [
        (rf"\b{mapping}\b", label_pattern(config("05_2d_thread_tiling", c).label()))], TFLOPS_COLUMNS),
    "thread_mapping_best_tflops": fact(EXPLORATION_RUN, lambda: max(r["tflops"] for r in _mappings()["rows"])),
    "thread_mapping_cublas_tflops": fact(EXPLORATION_RUN, lambda: _mappings()["cublas_tflops"]),
    # how far apart the best of each mapping came, in %
    "thread_mapping_spread_pct": fact(EXPLORATION_RUN, lambda: 100.0 * (max(_mappings()["per_mapping_best"].values())
                                                                   / min(_mappings()["per_mapping_best"].values())
                                                                   - 1)),
    "targets_run_tflops": fact(TARGETS_RUN, _targets_run),
    # how much of the kernel's rate the course's timer of then lost to its launch checks, in %
    "targets_run_timer_cost_pct": fact(TARGETS_RUN, lambda: 100.0 * (1 - _targets_run("05_course_timer")
                                                                     / _targets_run("05_raw_launches"))),
}

"""Numbers notebooks 04 and 05 state from their tuning run (tools/tune_04_05.py on an H200): each configuration of
04_1d_thread_tiling and 05_2d_thread_tiling at 4096³, and cuBLAS before and after them. The run is the newest of the
kernels as they are now (2026-11-25, after their epilogue stopped reading C when beta = 0); the tables of notebooks 04
and 05 show the same file, and their prediction checkers read these facts."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import PCT_CUBLAS_COLUMNS, TFLOPS_COLUMNS, config, fact, label_pattern

TUNING_RUN = RESULTS_DIR / "stages_04_05_h200_2026-11-25.json"


def row(variant: str, configuration: str) -> dict:
    """The row of the variant's configuration ('BM64,BN64,BK16,TM16')."""
    args = list(config(variant, configuration).template_args())
    return next(r for r in results_files.read_json(TUNING_RUN)["rows"]
                if r["variant"] == variant and r["template_args"] == args)


def _behind_best(variant: str, configuration: str) -> float:
    """How much slower the configuration ran than the variant's fastest in the run, in %."""
    best = max(r["tflops"] for r in results_files.read_json(TUNING_RUN)["rows"] if r["variant"] == variant)
    return 100.0 * (1 - row(variant, configuration)["tflops"] / best)


def _shown(variant: str, configuration: str) -> list[tuple[str, ...]]:
    """A configuration's row in a table of the run: its label."""
    return [(label_pattern(config(variant, configuration).label()),)]


FACTS = {
    "tuning_run_tflops": fact(TUNING_RUN, lambda variant, c: row(variant, c)["tflops"], _shown, TFLOPS_COLUMNS),
    "tuning_run_pct_cublas": fact(TUNING_RUN, lambda variant, c: row(variant, c)["pct_cublas"], _shown,
                                  PCT_CUBLAS_COLUMNS),
    "tuning_run_behind_best_pct": fact(TUNING_RUN, _behind_best),
    # 'before' or 'after' the candidates
    "tuning_run_cublas_tflops": fact(TUNING_RUN, lambda when: results_files.read_json(TUNING_RUN)["cublas"][when][
        "tflops"], lambda when: [(rf"cuBLAS|cublas", rf"\b{when} the candidates")], TFLOPS_COLUMNS),
}

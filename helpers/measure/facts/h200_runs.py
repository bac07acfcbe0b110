"""The H200 runs of stages 07-09's defaults, which notebooks 07-10 and the predictions of exercises 08-10 cite:
every run at 4096³ with the registered defaults of 07, 08 and 09 and cuBLAS FP32 in the same run. Their spread is
part of the lesson (cuBLAS moved by 5% from machine to machine while the kernels held)."""

from __future__ import annotations

from helpers.core import results_files, stages
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import fact, median, pick

STAGES_06_09 = RESULTS_DIR / "stages_06_09_h200_2026-11-22"
# The two experiments (each kernel the median of three interleaved medians of 50, cuBLAS the median of its three)
# and the five ladders.
H200_RUNS_07_09 = (STAGES_06_09 / "exp_08_09.json", STAGES_06_09 / "exp_08_09_b.json",
                   RESULTS_DIR / "ladder_h200_2026-11-22_02-09.json",
                   *(RESULTS_DIR / f"gpu_h200_2026-11-{day}" / "ladder.json" for day in (22, 23, 24, 25)))
RUNS = "the H200 runs of helpers/measure/facts/h200_runs.py"
DEFAULTS = ("07_vectorized", "08_warp_tiling", "09_double_buffering", "09_async_copy")


def h200_runs_07_09() -> dict[str, dict]:
    """run -> {'cublas': TFLOP/s, variant: TFLOP/s of its registered default} for each file of H200_RUNS_07_09; a
    run is named by its file's stem, or its folder's name for a ladder.json."""
    runs = {}
    for path in H200_RUNS_07_09:
        data = results_files.read_json(path)
        with results_files.reading(path):
            if "rows" in data and "cublas_tflops_three_runs" in data:
                by_expr = {r["expr"]: median(r["tflops_three_runs"]) for r in data["rows"]
                           if not r.get("error") and not r.get("variant")}
                run = {"cublas": median(data["cublas_tflops_three_runs"])}
                for v in DEFAULTS:
                    run[v] = by_expr[stages.variant(v).name_expression()]
            else:
                run = {"cublas": data["cublas"]["tflops"], **{r["variant"]: r["tflops"] for r in data["rows"]}}
        runs[path.parent.name if path.name == "ladder.json" else path.stem] = run
    return runs


def _pct(variant: str, run: dict) -> float:
    return 100.0 * run[variant] / run["cublas"]


def _over_runs(variant: str, which: str, value) -> float:
    """WHICH: a run's name (gpu_h200_2026-11-23, exp_08_09, ...), or min or max over the runs."""
    runs = h200_runs_07_09()
    if which in runs:
        return value(variant, runs[which])
    return pick(which, (value(variant, r) for r in runs.values()))


def _gain(a: str, b: str, which: str) -> float:
    """How much faster A ran than B in the same run, in %: the least or most (min, max) over the runs."""
    return pick(which, (100.0 * (r[a] / r[b] - 1) for r in h200_runs_07_09().values()))


FACTS = {
    # VARIANT/WHICH: the variant's (or cublas's) TFLOP/s in one run, or the lowest or highest over them
    "h200_runs_tflops": fact(RUNS, lambda variant, which: _over_runs(variant, which, lambda v, r: r[v])),
    "h200_runs_pct_cublas": fact(RUNS, lambda variant, which: _over_runs(variant, which, _pct)),
    "h200_runs_gain_pct": fact(RUNS, _gain),
    "h200_runs_count": fact(RUNS, lambda: len(H200_RUNS_07_09)),
    # VARIANT/PCT: in how many runs the variant reached PCT % of cuBLAS
    "h200_runs_reaching_pct_cublas": fact(RUNS, lambda variant, pct: sum(
        _pct(variant, r) >= float(pct) for r in h200_runs_07_09().values())),
}

"""Numbers notebook 11 (autotuning and dispatch) states, and notebook 10 cites of 10_wgmma's search: the committed
searches of the autotuner (results/autotune_h200_*.json) and the newest sweep of the dispatcher."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure import autotune_results, dispatch_table
from helpers.measure.facts.common import fact

SEARCH_03_09 = RESULTS_DIR / "autotune_h200_2026-11-22.json"   # stages 03-09
SEARCH_WGMMA = RESULTS_DIR / "autotune_h200_2026-11-24.json"   # 10_wgmma
SEARCHES = "results/autotune_h200_2026-11-22.json (stages 03-09) and autotune_h200_2026-11-24.json (10_wgmma)"
SWEEP = "the newest results/sweep_*.json"
LIBRARY_SWEEP = RESULTS_DIR / "library_sweep_h100_2026-11-27" / "sweep.json"   # helpers.sgemm as called, on an H100
# the calls of a library sweep's row: FP32 and TF32, beta 0 and 1
_CALLS = {"fp32": lambda r: r["pct_cublas"], "fp32_beta1": lambda r: r["fp32_beta1"]["pct_cublas"],
          "tf32": lambda r: r["tf32"]["pct_cublas"], "tf32_beta1": lambda r: r["tf32"]["beta1"]["pct_cublas"]}
# its times in microseconds: the calls' (CUDA events around each) and the host's work inside them (TF32, beta = 0)
_TIMES_US = {"sgemm_tf32": lambda r: 1e3 * r["tf32"]["sgemm_ms"], "cublas_tf32": lambda r: 1e3 * r["tf32"]["cublas_ms"],
             "host_sgemm_tf32": lambda r: r["host_us_per_call"]["tf32_beta0_sgemm"],
             "host_cublas_tf32": lambda r: r["host_us_per_call"]["tf32_beta0_cublas"]}


def _search(variant: str) -> autotune_results.TuneResult:
    return autotune_results.load(variant, SEARCH_WGMMA if variant == "10_wgmma" else SEARCH_03_09)


def _default(variant: str) -> dict:
    """The row of the configuration the variant's search started from."""
    return autotune_results.default_row(_search(variant))


def _gain(variant: str) -> float:
    """How much faster the best candidate of the variant's search ran than its default, in %."""
    r = _search(variant)
    return 100.0 * (r.best["tflops"] / autotune_results.default_row(r)["tflops"] - 1)


def _local_memory() -> int:
    """How many candidates of the search of stages 03-09 used local memory (recorded, not timed)."""
    candidates = results_files.read_json(SEARCH_03_09)["candidates"]
    return sum(c["status"] == autotune_results.LOCAL_MEMORY for c in candidates)


def library_row(shape: str) -> dict:
    """The library sweep's row of a shape ('512x512x512')."""
    dims = [int(x) for x in shape.split("x")]
    return next(r for r in results_files.read_json(LIBRARY_SWEEP)["rows"] if [r["M"], r["N"], r["K"]] == dims)


def library_summary(which: str, key: str) -> float:
    """A summary of the library sweep over its held-out shapes ('held_out') or all of them ('all'): the key as
    library_sweep.summary writes it (geomean_pct_cublas, tf32_min_pct_cublas, tf32_max_error_ratio, ...)."""
    data = results_files.read_json(LIBRARY_SWEEP)
    return data[{"held_out": "held_out_summary", "all": "summary"}[which]][key]


FACTS = {
    "autotune_gain_pct": fact(SEARCHES, _gain),
    "autotune_default_tflops": fact(SEARCHES, lambda variant: _default(variant)["tflops"]),
    "autotune_default_pct_cublas": fact(SEARCHES, lambda variant: _default(variant)["pct_cublas"]),
    # how many candidates of the variant's search were timed
    "autotune_timed_count": fact(SEARCHES, lambda variant: sum(r["status"] == autotune_results.TIMED
                                                               for r in _search(variant).rows)),
    "autotune_local_memory_count": fact(SEARCH_03_09, _local_memory),
    # geomean, min or fixed_geomean (the fixed kernel's): the dispatcher's % of cuBLAS over the sweep's shapes
    "dispatch_sweep_pct_cublas": fact(SWEEP, lambda what: dispatch_table.load_sweep()["summary"][
        {"geomean": "geomean_pct_cublas", "min": "min_pct_cublas", "fixed_geomean": "fixed_geomean_pct_cublas"}[what]]),
    # helpers.sgemm as called on an H100, beside cuBLAS (LIBRARY_SWEEP): a call's % of cuBLAS at a shape (call: fp32,
    # fp32_beta1, tf32, tf32_beta1; shape: MxNxK), a summary (held_out or all, then the summary's key), a time in µs
    "library_sweep_pct_cublas": fact(LIBRARY_SWEEP, lambda call, shape: _CALLS[call](library_row(shape))),
    "library_sweep_summary": fact(LIBRARY_SWEEP, library_summary),
    "library_sweep_us": fact(LIBRARY_SWEEP, lambda what, shape: _TIMES_US[what](library_row(shape))),
}

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
}

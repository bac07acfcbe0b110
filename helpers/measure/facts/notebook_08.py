"""Numbers notebooks 08 and 09 state from their H200 run (stages 07-09 at 4096³, configurations and ablations,
raw launches, three interleaved medians of 50 per kernel; its sweep of sizes is notebook_09's), beside the H200
runs of 07-09's defaults they share with 07 and 10 (h200_runs)."""

from __future__ import annotations

from helpers.core import results_files, stages
from helpers.measure.facts.common import config, fact, median
from helpers.measure.facts.h200_runs import STAGES_06_09

RUN_08_09 = STAGES_06_09 / "exp_08_09.json"


def tflops(variant: str, configuration: str, ablation: str | None = None) -> float:
    """The median of three of a variant's configuration, or of an ablation of it (the row's 'variant' field)."""
    expr = stages.variant(variant).name_expression(config(variant, configuration))
    data = results_files.read_json(RUN_08_09)
    with results_files.reading(RUN_08_09):
        return next(median(r["tflops_three_runs"]) for r in data["rows"]
                    if r["expr"] == expr and r.get("variant") == ablation and not r.get("error"))


def _loss(variant: str, configuration: str, than: str, than_configuration: str) -> float:
    """How much slower the first configuration ran than the second, in %."""
    return 100.0 * (1 - tflops(variant, configuration) / tflops(than, than_configuration))


FACTS = {
    "run_08_09_tflops": fact(RUN_08_09, tflops),
    # VARIANT/CONFIGURATION/THAN/ITS_CONFIGURATION
    "run_08_09_loss_pct": fact(RUN_08_09, _loss),
}

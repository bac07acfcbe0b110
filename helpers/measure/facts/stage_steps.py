"""Numbers notebooks 07, 09 and 10 state of their stage's one-idea steps (tools/measure_steps.py, read by
helpers/measure/steps.py): `steps_gain_pct/07/07_runs_of_four` is that step's median gain over the one before it;
`steps_faster_pct/07/07_vectorized/parent` how much faster the chain's end ran than its start (medians)."""

from __future__ import annotations

import statistics

from helpers.measure import steps
from helpers.measure.facts.common import fact

STEPS_FILES = "the newest results/stage_SS_*/measure_SS_steps.json"


def _kernel(data: dict, name: str) -> str:
    """A kernel of the chain by its name in the file, or 'parent': the first step's parent at the steps'
    configuration, the last of the chain's leading entries of the first step's parent (which may be a kernel of
    the same stage: 10_tensor_cores before 10_mma_sync)."""
    if name != "parent":
        return name
    chain = data["chain"]
    return [c for c in chain if c["variant"] == chain[0]["variant"]][-1]["kernel"]


def _median(stage_id: str, kernel: str, what: str) -> float:
    """STAGE/KERNEL: the median over the rounds of its TFLOP/s ('tflops'), % of cuBLAS ('pct_cublas') or gain
    ('gain')."""
    data = steps.load(stage_id)
    kernel = _kernel(data, kernel)
    return statistics.median(steps.gains(data, kernel) if what == "gain" else steps.series(data, kernel, what))


FACTS = {
    "steps_tflops": fact(STEPS_FILES, lambda stage_id, kernel: _median(stage_id, kernel, "tflops")),
    "steps_pct_cublas": fact(STEPS_FILES, lambda stage_id, kernel: _median(stage_id, kernel, "pct_cublas")),
    "steps_gain_pct": fact(STEPS_FILES, lambda stage_id, kernel: _median(stage_id, kernel, "gain")),
    # STAGE/KERNEL/OTHER: how much faster KERNEL ran than OTHER, in %, from their median TFLOP/s
    "steps_faster_pct": fact(STEPS_FILES, lambda stage_id, kernel, other: 100.0 * (
        _median(stage_id, kernel, "tflops") / _median(stage_id, other, "tflops") - 1)),
}

"""Numbers notebook 00 (setup) states: the H200's ceilings, over every committed H200 ceilings file (notebooks 04
and 10 cite them too)."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import fact, pick

CEILINGS_FILES = "results/ceilings_h200_*.json and results/gpu_h200_*/ceilings.json"


def _ceilings(key: str) -> list[float]:
    found = [*RESULTS_DIR.glob("ceilings_h200_*.json"), *RESULTS_DIR.glob("gpu_h200_*/ceilings.json")]
    return [results_files.read_json(p)["ceilings"][key] for p in found]


FACTS = {
    # the highest FP32 peak any file gives
    "ceilings_h200_fp32_peak_tflops": fact(CEILINGS_FILES, lambda: max(_ceilings("fp32_peak_tflops"))),
    # 'min' or 'max': cuBLAS FP32 at 4096³, the lowest or highest over the files
    "ceilings_h200_cublas_tflops": fact(CEILINGS_FILES, lambda how: pick(how, _ceilings("cublas_tflops"))),
}

"""Numbers notebooks 06 and 07 state from their H200 run (stages 05-07 at 4096³, raw launches, three interleaved
medians of 50 per kernel, cuBLAS in the same run): what each bank-conflict fix did to stage 05's time, and what
07 gained over 06 with the same tiles."""

from __future__ import annotations

import re
import statistics

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import TFLOPS_COLUMNS, config, fact

RUN_06_07 = RESULTS_DIR / "stages_06_09_h200_2026-11-22" / "exp_06_07.json"
REFERENCES = {"cublas": "cuBLAS (cupy.matmul)", "seed_004_v2": "seed 004 V2 design (reference, no bounds checks)"}
KERNEL_FILES = ("05_2d_thread_tiling.cu", "06_padded.cu", "06_transposed_a.cu", "06_swizzled.cu")


def _key(variant: str, configuration: str) -> str:
    """The run's name of a kernel: '06 padded PAD=4 (128, 128, 8, 8, 8)' for 06_padded/BM128,BN128,BK8,TM8,TN8,PAD4."""
    c = config(variant, configuration)
    tile = "(" + ", ".join(str(getattr(c, f)) for f in ("BM", "BN", "BK", "TM", "TN")) + ")"
    name = "05 kept" if variant == "05_2d_thread_tiling" else variant.replace("_", " ", 1)
    return f"{name}{f' PAD={c.PAD}' if getattr(c, 'PAD', 1) != 1 else ''} {tile}"


def tflops(kernel: str, configuration: str = "") -> float:
    """A kernel's median of three: VARIANT/CONFIGURATION (05_2d_thread_tiling, 06_*, 07_vectorized), or cublas or
    seed_004_v2 (seed 004's V2 design, re-implemented as a reference)."""
    name = REFERENCES[kernel] if kernel in REFERENCES else _key(kernel, configuration)
    return statistics.median(results_files.read_json(RUN_06_07)["kernels"][name]["tflops_three_runs"])


def _shown(kernel: str, configuration: str = "") -> list[tuple[str, ...]]:
    """A kernel's row in a table of the run: the run's own name for it (notebook 07's table), or, in notebook 06's,
    its tile ('16 x 4, BK = 16') and its name with its padding ('06_padded PAD=1')."""
    if kernel in REFERENCES:
        return [(re.escape(REFERENCES[kernel]),)]
    c = config(kernel, configuration)
    name = kernel + (f" PAD={c.PAD}" if hasattr(c, "PAD") else "")
    return [(re.escape(_key(kernel, configuration)) + r"(?!\S)",),
            (rf"\b{c.TM} x {c.TN}, BK = {c.BK}\b", re.escape(name) + r"(?!\S)")]


def _change(variant: str, configuration: str) -> float:
    """How much a fix changed stage 05's time at the same tile, in % (its size: the prose writes the sign)."""
    c = config(variant, configuration)
    tile = ",".join(f"{f}{getattr(c, f)}" for f in ("BM", "BN", "BK", "TM", "TN"))
    return abs(100.0 * (tflops(variant, configuration) / tflops("05_2d_thread_tiling", tile) - 1))


def _spread() -> float:
    """The widest spread of a kernel's three runs (stages 05 and 06), % of its median."""
    kernels = results_files.read_json(RUN_06_07)["kernels"].values()
    runs = [k["tflops_three_runs"] for k in kernels if k.get("file") in KERNEL_FILES]
    return max(100.0 * (max(r) - min(r)) / statistics.median(r) for r in runs)


FACTS = {
    "run_06_07_tflops": fact(RUN_06_07, tflops, _shown, TFLOPS_COLUMNS),
    "run_06_07_change_pct": fact(RUN_06_07, _change, _shown, ("vs 05",)),
    "run_06_07_spread_pct": fact(RUN_06_07, _spread),
    # A/B/CONFIGURATION: how much faster A ran than B with the same tiles (BM, BN, BK, TM, TN), in %
    "run_06_07_gain_pct": fact(RUN_06_07, lambda a, b, c: 100.0 * (tflops(a, c) / tflops(b, c) - 1)),
}

"""Numbers notebook 02 (naive and coalescing) states: the stage's H200 run (both kernels and cuBLAS at several
sizes) and its block-shape sweep at 4096³."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import PCT_CUBLAS_COLUMNS, TFLOPS_COLUMNS, config, fact, size_row

NAIVE_RUN = RESULTS_DIR / "02_naive_h200_2026-11-22.json"


def _row(variant: str, size: str) -> dict:
    """The row of a variant (02_naive, 02_naive_coalesced or cublas_sgemm) at SIZE³."""
    rows = results_files.read_json(NAIVE_RUN)["rows"]
    return next(r for r in rows if r["variant"] == variant and r["M"] == int(size))


def _block_shape(variant: str, shape: str) -> float:
    """TFLOP/s of a block shape ('block_x32,block_y8') in the sweep at 4096³."""
    c = config(variant, shape)
    return next(r["gflops"] for r in results_files.read_json(NAIVE_RUN)["block_shape_sweep"]["rows"]
                if r["variant"] == variant and (r["block_x"], r["block_y"]) == (c.block_x, c.block_y)) / 1000


FACTS = {
    "coalescing_run_tflops": fact(NAIVE_RUN, lambda variant, size: _row(variant, size)["tflops"],
                                  lambda variant, size: [size_row(variant, size)], TFLOPS_COLUMNS),
    "coalescing_run_pct_cublas": fact(NAIVE_RUN, lambda variant, size: _row(variant, size)["pct_cublas"],
                                      lambda variant, size: [size_row(variant, size)], PCT_CUBLAS_COLUMNS),
    # A/B/SIZE: how many times faster A ran than B
    "coalescing_run_speedup": fact(NAIVE_RUN, lambda a, b, size: _row(a, size)["tflops"] / _row(b, size)["tflops"]),
    "coalescing_block_shape_tflops": fact(NAIVE_RUN, _block_shape),
}

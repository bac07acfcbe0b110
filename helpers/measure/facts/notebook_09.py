"""Numbers notebook 09 (double buffering) states from the run it shares with 08 (notebook_08.RUN_08_09): what
each idea of 09_double_buffering's default is worth (its ablations), and the sweep of sizes 512-8192."""

from __future__ import annotations

from helpers.core import results_files
from helpers.measure.facts.common import fact
from helpers.measure.facts.notebook_08 import RUN_08_09, tflops

DEFAULT_09 = "BM128,BN128,BK8,WM32,WN64,TM8,TN8,MIN_BLOCKS2"   # 09_double_buffering's default in the run
ABLATIONS = {"every_tile_checked": "variant: every tile checked", "one_tile_a_pass": "variant: one tile a pass",
             "one_step_in_registers": "variant: one step's values in registers"}
SWEEP_KERNELS = {"08_warp_tiling": "08", "09_double_buffering": "09db", "09_async_copy": "09async", "cublas": "cublas"}


def _ablation(name: str) -> float:
    """TFLOP/s of an ablation of the default (ABLATIONS), or 'one_block_per_sm': the default with MIN_BLOCKS = 1."""
    if name == "one_block_per_sm":
        return tflops("09_double_buffering", DEFAULT_09.replace("MIN_BLOCKS2", "MIN_BLOCKS1"))
    return tflops("09_double_buffering", DEFAULT_09, ABLATIONS[name])


def _sweep(kernel: str, size: str) -> float:
    """TFLOP/s of a kernel (SWEEP_KERNELS: the best configurations of 08 and 09, cuBLAS) at SIZE³ in the sweep."""
    row = next(r for r in results_files.read_json(RUN_08_09)["sweep"]["rows"] if r["size"] == int(size))
    return next(v for k, v in row["tflops"].items() if k.split()[0] == SWEEP_KERNELS[kernel])


FACTS = {
    "run_08_09_ablation_tflops": fact(RUN_08_09, _ablation),
    # how much slower the ablation ran than the default, in %
    "run_08_09_ablation_loss_pct": fact(RUN_08_09, lambda name: 100.0 * (
        1 - _ablation(name) / tflops("09_double_buffering", DEFAULT_09))),
    "run_08_09_sweep_tflops": fact(RUN_08_09, _sweep),
}

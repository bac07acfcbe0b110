"""Stage 12 under Nsight Compute at 4096^3: one launch each of 10_wgmma (its default), 12_warp_specialized (the
default, and with one block per tile), and cuBLAS TF32, so that ncu can say how busy each keeps the tensor pipe,
how much of the L2 and shared memory each uses, and where its warps stall.

    on an H100 or H200, from the repository root:  tools/experiments/ncu_10.sh OUT ncu_12

Made the ncu_12_*.csv of results/stage_12_h200_2026-11-25/.
"""

from __future__ import annotations

import sys

import cupy as cp

from helpers.core import stages
from helpers.core.configs_hopper import WarpSpecializedConfig as WS
from helpers.measure import bench
from helpers.run import backend, gemm

N = 4096


def launch_each_then_cublas(runs) -> None:
    """One N^3 launch of each (variant, configuration), all compiled before the first is profiled, then cuBLAS TF32."""
    A, B, C = bench.device_operands(N, N, N, seed=1)
    steps = [(v, c, gemm.launches(v, c, N, N, N, 1.0, A, B, 0.0, C)) for v, c in runs]  # compiled before profiling
    cp.cuda.Device().synchronize()
    for v, c, launches in steps:
        for launch in launches:
            launch()
        cp.cuda.Device().synchronize()
        print(f"launched {v.name_expression(c)} ({c.label()})", file=sys.stderr)
    with bench.cublas_tf32():
        cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS TF32", file=sys.stderr)


def main() -> None:
    backend.use("gpu")
    wgmma, ws = stages.variant("10_wgmma"), stages.variant("12_warp_specialized")
    launch_each_then_cublas([(wgmma, wgmma.default), (ws, ws.default), (ws, WS(PERSISTENT=0))])


if __name__ == "__main__":
    main()

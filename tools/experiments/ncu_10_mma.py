"""Stage 10's two warp-level steps under Nsight Compute at 4096^3: one launch each of 10_tensor_cores (wmma) and
10_mma_sync (mma.sync with the fragment layout in the kernel's hands), both at their shared default (ROUND = 1), so
that ncu says how busy each keeps the tensor pipe, how many shared loads each issues, and where its warps stall.

    on a GPU, from the repository root:  tools/experiments/ncu_10.sh OUT ncu_10_mma

Made the ncu_10_mma_*.csv of results/stage_10_h200_2026-11-27/.
"""

from __future__ import annotations

import sys

import cupy as cp

from helpers.core import stages
from helpers.measure import bench
from helpers.run import backend, gemm

N = 4096


def main() -> None:
    backend.use("gpu")
    A, B, C = bench.device_operands(N, N, N, seed=1)
    kernels = [(v, v.default) for v in map(stages.variant, ("10_tensor_cores", "10_mma_sync"))]
    compiled = [gemm.kernel_for(v, c) for v, c in kernels]  # compile before anything is profiled
    cp.cuda.Device().synchronize()
    for (v, c), k in zip(kernels, compiled):
        k(c.grid(N, N), c.block(), gemm.launch_args(N, N, N, 1.0, A, B, 0.0, C), shared_mem=c.shared_bytes())
        cp.cuda.Device().synchronize()
        print(f"launched {v.name_expression(c)}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Stage 12's steps past the stage under Nsight Compute at 4096³: one launch each of 12_warp_specialized at its
default and with EPILOGUE = 1, PINGPONG = 1 and CLUSTER = 2 (tools/measure_12_steps.py times them), and cuBLAS TF32,
so that ncu can say how busy each keeps the tensor pipe and where its warps stall.

    on an H100 or H200, from the repository root:  tools/experiments/ncu_10.sh OUT ncu_12_steps
"""

from __future__ import annotations

import dataclasses
import sys

import cupy as cp

from helpers.core import stages
from helpers.measure import bench
from helpers.run import backend, gemm

N = 4096


def main() -> None:
    backend.use("gpu")
    A, B, C = bench.device_operands(N, N, N, seed=1)
    ws = stages.variant("12_warp_specialized")
    configs = [ws.default] + [dataclasses.replace(ws.default, **{k: v}) for k, v in
                              (("EPILOGUE", 1), ("PINGPONG", 1), ("CLUSTER", 2))]
    steps = [(c, gemm.launches(ws, c, N, N, N, 1.0, A, B, 0.0, C)) for c in configs]  # compiled before profiling
    cp.cuda.Device().synchronize()
    for c, launches in steps:
        for launch in launches:
            launch()
        cp.cuda.Device().synchronize()
        print(f"launched {ws.name_expression(c)} ({c.label()})", file=sys.stderr)
    with bench.cublas_tf32():
        cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS TF32", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Stage 10 under Nsight Compute at 4096^3: one launch each of the tensor-core kernels (wmma with
ROUND = 1 and 0, wgmma with ROUND = 0 and 1), 09_double_buffering, and cuBLAS in FP32 and in TF32,
so that ncu can say which kernel cuBLAS runs (its name), how busy each keeps the tensor pipe, and
where its warps stall.

    on a GPU, from the repository root:  tools/experiments/ncu_10.sh OUT

Made the ncu_10_*.csv of results/stage_10_h200_2026-11-23/ and results/stage_10_h200_2026-11-24/.
"""

from __future__ import annotations

import sys

import cupy as cp

from helpers.core import stages
from helpers.core.configs import WgmmaConfig as W
from helpers.core.configs_tensor_cores import TensorCoreConfig as T
from helpers.measure import bench
from helpers.run import backend, gemm

N = 4096


def launch_once(kernels, A, B, C) -> None:
    """One N^3 launch of each (variant, configuration), all compiled before the first is profiled."""
    compiled = [gemm.kernel_for(v, c) for v, c in kernels]
    cp.cuda.Device().synchronize()
    for (v, c), k in zip(kernels, compiled):
        k(c.grid(N, N), c.block(), gemm.launch_args(N, N, N, 1.0, A, B, 0.0, C), shared_mem=c.shared_bytes())
        cp.cuda.Device().synchronize()
        print(f"launched {v.name_expression(c)}", file=sys.stderr)


def main() -> None:
    backend.use("gpu")
    A, B, C = bench.device_operands(N, N, N, seed=1)
    launches = [("10_tensor_cores", T(ROUND=1)), ("10_tensor_cores", T(ROUND=0)), ("09_double_buffering", None)]
    if stages.variant("10_wgmma").unsupported_on(backend.current().device_info().compute_capability) is None:
        launches += [("10_wgmma", W(ROUND=0)), ("10_wgmma", W(ROUND=1))]
    launch_once([(stages.variant(n), c or stages.variant(n).default) for n, c in launches], A, B, C)
    cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS FP32", file=sys.stderr)
    with bench.cublas_tf32():
        cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS TF32", file=sys.stderr)


if __name__ == "__main__":
    main()

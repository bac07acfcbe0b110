"""Stage 10 under Nsight Compute at 4096^3: one launch each of the tensor-core kernels (wmma with
ROUND = 1 and 0, wgmma with ROUND = 0 and 1), 09_double_buffering, and cuBLAS in FP32 and in TF32,
so that ncu can say which kernel cuBLAS runs (its name), how busy each keeps the tensor pipe, and
where its warps stall.

    on a GPU:  tools/experiments/ncu_10.sh OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cupy as cp  # noqa: E402

from helpers.run import backend
from helpers.measure import bench
from helpers.run import gemm
from helpers.core import stages  # noqa: E402
from helpers.core.configs import TensorCoreConfig as T, WgmmaConfig as W  # noqa: E402

N = 4096


def main() -> None:
    backend.use("gpu")
    A, B, C = bench.device_operands(N, N, N, seed=1)
    launches = [("10_tensor_cores", T(ROUND=1)), ("10_tensor_cores", T(ROUND=0)), ("09_double_buffering", None)]
    if stages.variant("10_wgmma").unsupported_on(backend.current().device_info().compute_capability) is None:
        launches += [("10_wgmma", W(ROUND=0)), ("10_wgmma", W(ROUND=1))]
    kernels = [(stages.variant(n), c or stages.variant(n).default) for n, c in launches]
    compiled = [gemm.kernel_for(v, c) for v, c in kernels]  # compile before anything is profiled
    cp.cuda.Device().synchronize()
    for (v, c), k in zip(kernels, compiled):
        k(c.grid(N, N), c.block(), gemm.launch_args(N, N, N, 1.0, A, B, 0.0, C), shared_mem=c.shared_bytes())
        cp.cuda.Device().synchronize()
        print(f"launched {v.name_expression(c)}", file=sys.stderr)
    cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS FP32", file=sys.stderr)
    with bench.cublas_tf32():
        cp.matmul(A, B, out=C)
    cp.cuda.Device().synchronize()
    print("launched cuBLAS TF32", file=sys.stderr)


if __name__ == "__main__":
    main()

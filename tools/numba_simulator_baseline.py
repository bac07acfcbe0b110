"""The usual way to run CUDA-style code without a GPU, for comparison: Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1) running a 16x16 shared-memory tiled SGEMM written in Python.

    NUMBA_ENABLE_CUDASIM=1 python tools/numba_simulator_baseline.py 128

Not a course dependency: install numba in a scratch environment to run it. The course never
runs kernels this way; this only measures the baseline the emulator is compared with.
"""

import os
import sys
import time

import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "set NUMBA_ENABLE_CUDASIM=1"
from numba import cuda, float32  # noqa: E402

TILE = 16


@cuda.jit
def sgemm_smem_tiled(M, N, K, alpha, A, B, beta, C):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for k0 in range(0, K, TILE):
        As[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else 0.0
        Bs[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = alpha * acc + beta * C[row, col]


def main(n: int) -> None:
    rng = np.random.default_rng()
    A, B, C = (rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(3))
    ref = 1.25 * (A.astype(np.float64) @ B) - 0.75 * C
    t = time.perf_counter()
    sgemm_smem_tiled[(n // TILE, n // TILE), (TILE, TILE)](n, n, n, 1.25, A, B, -0.75, C)
    elapsed = time.perf_counter() - t
    assert np.abs(C - ref).max() < 1e-3
    print(f"numba CUDA simulator, 16x16 tiled SGEMM {n}^3: {elapsed:.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 128)

"""The warp's mma.sync m16n8k8 (TF32) and to_tf32, kernels/mma_sync.cuh and the emulator's header of the same name:
a probe kernel puts each lane's elements where the header's comment says they are and gets D = A B + C, with the
low 13 bits of the inputs ignored. On the emulator always; on a GPU of sm_80 or later as well (marked gpu)."""

import numpy as np
import pytest

from helpers.run import backend
from helpers.run.kernel_loader import load_kernel

pytestmark = pytest.mark.emulator

PROBE = """
#include "mma_sync.cuh"
// One warp: lane 4g + t takes its elements of A (16 x 8), B (8 x 8) and C (16 x 8), row-major, in the
// documented layout, and writes its elements of D = A B + C back in the same places.
__global__ void mma_probe(const float* A, const float* B, const float* C, float* D) {
  const int g = threadIdx.x / 4, t = threadIdx.x % 4;
  const float a[4] = {A[g * 8 + t], A[(g + 8) * 8 + t], A[g * 8 + t + 4], A[(g + 8) * 8 + t + 4]};
  const float b[2] = {B[t * 8 + g], B[(t + 4) * 8 + g]};
  float d[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  mma_m16n8k8_tf32(d, a, b);
  D[g * 8 + 2 * t] = d[0], D[g * 8 + 2 * t + 1] = d[1], D[(g + 8) * 8 + 2 * t] = d[2], D[(g + 8) * 8 + 2 * t + 1] = d[3];
}
__global__ void round_probe(const float* x, float* y, int n) {
  if (threadIdx.x < n) y[threadIdx.x] = to_tf32(x[threadIdx.x]);
}
"""


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def probe(request, tmp_path):
    backend.use(request.param)
    try:
        if request.param == "gpu":
            cc = backend.current().device_info().compute_capability
            if int(cc.replace(".", "")) < 80:
                pytest.skip(f"mma.sync in TF32 needs sm_80; this GPU is {cc}")
        (tmp_path / "probe.cu").write_text(PROBE)
        yield lambda name: _on_device(load_kernel(tmp_path / "probe.cu", name))
    finally:
        backend.use(None)


def _on_device(kernel):
    """The kernel, called with host arrays: copied to the backend's memory and the results copied back in place."""
    def call(grid, block, args):
        be = backend.current()
        dev = [be.to_device(a) if isinstance(a, np.ndarray) and a.ndim else a for a in args]
        kernel(grid, block, tuple(dev))
        be.synchronize()
        for a, d in zip(args, dev):
            if d is not a:
                a[...] = be.to_host(d)
    return call


def test_each_lane_holds_the_documented_elements_and_the_low_bits_are_ignored(probe, rng):
    # small integers: exact in TF32 and in FP32 sums; the added 2^-12 of each is below TF32's precision (2^-10)
    A0, B0, C = (rng.integers(-4, 5, shape).astype(np.float32) for shape in ((16, 8), (8, 8), (16, 8)))
    A, B = (x * np.float32(1 + 2.0**-12) for x in (A0, B0))
    assert (A != A0).any() and (B != B0).any()
    D = np.full((16, 8), np.nan, np.float32)
    probe("mma_probe")((1, 1, 1), (32, 1, 1), (A, B, C, D))
    np.testing.assert_array_equal(D, A0.astype(np.float64) @ B0 + C)


def test_to_tf32_rounds_to_nearest_ties_away_from_zero(probe):
    one, half_ulp = 1.0, 2.0**-11   # TF32 keeps 10 mantissa bits: 1 + 2^-10 is the next value after 1
    x = np.array([one + half_ulp, one + half_ulp - 2.0**-23, -(one + half_ulp), one + 3 * half_ulp,
                  np.inf, -np.inf, np.nan, 0.0], np.float32)
    y = np.full(x.size, 7.0, np.float32)
    probe("round_probe")((1, 1, 1), (32, 1, 1), (x, y, np.int32(x.size)))
    want = np.array([one + 2 * half_ulp, one, -(one + 2 * half_ulp), one + 4 * half_ulp, np.inf, -np.inf, np.nan, 0.0],
                    np.float32)
    np.testing.assert_array_equal(y, want)

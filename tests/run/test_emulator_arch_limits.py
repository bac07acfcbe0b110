"""On the CPU emulator a launch is held to the shared-memory limit of the GPU it stands for (TBT_ARCH),
so that what would fail on an RTX 30 fails here too, with the architecture named."""

import numpy as np
import pytest

from helpers.core.arch import ARCHS
from helpers.core.errors import LaunchConfigError
from helpers.run import backend
from helpers.run.kernel_loader import load_kernel

pytestmark = pytest.mark.emulator

SOURCE = """
__global__ void fill(int n, float* out) {
  extern __shared__ float tile[];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x < n) out[threadIdx.x] = tile[threadIdx.x];
}
"""


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "cpu")
    backend.current.cache_clear()
    path = tmp_path / "fill.cu"
    path.write_text(SOURCE)
    yield load_kernel(path, "fill")
    backend.current.cache_clear()


def test_the_emulator_holds_a_launch_to_the_shared_memory_of_tbt_arch(kernel, monkeypatch):
    out = np.zeros(32, np.float32)
    bytes_ = 100 * 1024   # fits sm_90's 227 KiB, not sm_86's 99 KiB
    assert ARCHS["sm_86"].max_shared_per_block < bytes_ < ARCHS["sm_90"].max_shared_per_block
    monkeypatch.setenv(backend.ARCH_ENV_VAR, "sm_90")
    kernel((1, 1, 1), (32, 1, 1), (np.int32(32), out), shared_mem=bytes_)
    assert out[31] == 31
    monkeypatch.setenv(backend.ARCH_ENV_VAR, "sm_86")
    with pytest.raises(LaunchConfigError, match=r"bytes a block may have on sm_86, the GPU the emulator stands for"):
        kernel((1, 1, 1), (32, 1, 1), (np.int32(32), out), shared_mem=bytes_)

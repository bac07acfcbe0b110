"""Thread block clusters on the emulator (helpers/emulator/runtime/runtime_cluster.cpp, the cluster section of
runtime/include/tma.cuh): a kernel declared __cluster_dims__ runs its clusters' blocks together, each with its own
shared memory; a multicast copy lands in every block of its mask and counts its bytes off each one's barrier; a
thread arrives on a peer's barrier; and the rules of distributed shared memory stop a kernel with their line."""

import numpy as np
import pytest

from helpers.core.errors import BarrierError, KernelCrashError, LaunchConfigError
from helpers.core.paths import KERNELS
from helpers.emulator.tensor_map import TensorMapArg
from helpers.run.kernel_loader import load_kernel
from helpers.run.toolchain import ptx_cluster_dims

pytestmark = pytest.mark.emulator

# Each block of a cluster of two copies one 8 x 32 box of A (box `rank`) to both blocks; each thread then reads the
# two boxes, and tells the peer block so on its barrier `peer_read`. MODE breaks one rule a line at a time.
KERNEL = r"""
#include "tma.cuh"
template <int MODE>
__global__ void __cluster_dims__(2, 1, 1) multicast(const __grid_constant__ TensorMap map, unsigned* ranks,
                                                    float* out) {
  __shared__ unsigned long long full[1];
  __shared__ unsigned long long peer_read[1];
  extern __shared__ __align__(1024) float tile[];
  const unsigned rank = cluster_ctarank();
  if (threadIdx.x == 0) {
    mbarrier_init(full, 1);
    mbarrier_init(peer_read, 32);
    fence_mbarrier_init();
  }
  if (MODE == 1) __syncthreads(); else cluster_sync();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(full, MODE == 2 ? 8 * 32 * 4 : 2 * 8 * 32 * 4);
    tma_load_2d_multicast(tile + rank * 8 * 32, &map, full, 8 * rank, 0, 0x3);
  }
  mbarrier_wait(full, 0);
  for (int i = threadIdx.x; i < 2 * 8 * 32; i += 32) out[blockIdx.x * 2 * 8 * 32 + i] = tile[i];
  if (threadIdx.x == 0) ranks[blockIdx.x] = rank;
  mbarrier_arrive_cluster(peer_read, rank ^ 1);
  if (MODE != 3) mbarrier_wait(peer_read, 0);
  if (MODE != 3) cluster_sync();
}
"""


def line_of(text: str) -> int:
    return next(i for i, ln in enumerate(KERNEL.splitlines(), 1) if text in ln)


@pytest.fixture
def cluster_kernel(tmp_path):
    (tmp_path / "tma.cuh").write_text((KERNELS / "tma.cuh").read_text())
    path = tmp_path / "cluster.cu"
    path.write_text(KERNEL)
    return lambda mode: load_kernel(path, f"multicast<{mode}>")


def swizzled(box_rows: np.ndarray) -> np.ndarray:
    """Rows of 32 floats as the 128-byte swizzle lays them in a 1024-byte aligned tile: chunk c of row r at c ^ r % 8."""
    out = np.empty_like(box_rows)
    for r in range(box_rows.shape[0]):
        for c in range(8):
            out[r, 4 * (c ^ r % 8):4 * (c ^ r % 8) + 4] = box_rows[r, 4 * c:4 * c + 4]
    return out


def run(kernel, blocks: int, rng):
    A = rng.standard_normal((16, 32)).astype(np.float32)
    ranks = np.full(blocks, 99, np.uint32)
    out = np.full((blocks, 16, 32), np.nan, np.float32)
    kernel((blocks, 1, 1), (32, 1, 1), (TensorMapArg(A, 16, 32, 32, 8, 32), ranks, out), shared_mem=2048 + 1024)
    return A, ranks, out


def test_nvrtc_compiles_cluster_dims_into_the_ptx_the_launch_reads():
    ptx = ".entry _Z1kILi2EEvPf(\n\t.param .u64 p\n)\n.maxntid 128, 1, 1\n.explicitcluster\n.reqnctapercluster 2, 1, 1\n{"
    assert ptx_cluster_dims(ptx, "_Z1kILi2EEvPf") == (2, 1, 1)
    assert ptx_cluster_dims(ptx.replace(".reqnctapercluster 2, 1, 1", ""), "_Z1kILi2EEvPf") is None


def test_a_multicast_box_lands_in_both_blocks_of_each_cluster(cpu_backend, cluster_kernel, rng):
    A, ranks, out = run(cluster_kernel(0), 4, rng)
    assert list(ranks) == [0, 1, 0, 1]
    for b in range(4):  # each block holds both boxes: its own copy and its peer's
        np.testing.assert_array_equal(out[b], swizzled(A))


def test_a_grid_of_part_of_a_cluster_is_refused_as_a_gpu_does(cpu_backend, cluster_kernel, rng):
    with pytest.raises(LaunchConfigError, match="whole clusters"):
        run(cluster_kernel(0), 3, rng)


def test_a_peer_barrier_used_before_a_cluster_barrier_follows_its_init_is_named(cpu_backend, cluster_kernel, rng):
    with pytest.raises(KernelCrashError, match=rf"(?s)barrier of block rank 1 of the cluster.*"
                                               rf"cluster.cu:{line_of('tma_load_2d_multicast(')}.*cluster_sync"):
        run(cluster_kernel(1), 2, rng)


def test_bytes_announced_for_the_own_copy_only_are_named_with_the_peers_multicast(cpu_backend, cluster_kernel, rng):
    with pytest.raises(KernelCrashError, match=r"(?s)announced 1024 bytes.*deliver 2048.*peers' multicast"):
        run(cluster_kernel(2), 2, rng)


def test_a_block_that_exits_while_its_peer_may_still_arrive_is_named(cpu_backend, cluster_kernel, rng):
    # block 0 runs first and finishes before block 1's arrivals: the last use of its memory is block 1's multicast
    with pytest.raises(KernelCrashError, match=rf"(?s)this block \(rank 0 of the cluster\) finished while the "
                                               rf"tma_load_2d_multicast of block \(1,0,0\), rank 1.*cluster.cu:"
                                               rf"{line_of('tma_load_2d_multicast(')}.*cluster_sync"):
        run(cluster_kernel(3), 2, rng)


DIVERGENT = r"""
#include "tma.cuh"
__global__ void __cluster_dims__(2, 1, 1) divergent(float* out) {
  if (cluster_ctarank() == 0) cluster_sync();
  out[blockIdx.x] = 1.0f;
}
"""


def test_a_cluster_barrier_one_block_never_reaches_is_named(cpu_backend, tmp_path):
    (tmp_path / "tma.cuh").write_text((KERNELS / "tma.cuh").read_text())
    (tmp_path / "divergent.cu").write_text(DIVERGENT)
    with pytest.raises(BarrierError, match="cluster barrier"):
        load_kernel(tmp_path / "divergent.cu", "divergent")((2, 1, 1), (32, 1, 1), (np.zeros(2, np.float32),))

// One wgmma_m64k8_tf32<64> on known operands, to read the instruction's register layouts and the
// 128-byte swizzle off the GPU (tools/experiments/exp_10_wgmma.py compares them with wgmma.cuh's
// comments, which the CPU emulator implements). One warpgroup.
//   a: A (64 x 8), row-major; each thread loads its 4 elements in wgmma.cuh's documented layout
//   b: B^T (64 x 8): row n holds column n of B, stored at floats 8s .. 8s+7 of row n of a tile of
//      64 rows of 32 floats in the 128-byte swizzle; the descriptor points at float 8s
//   d: the 32 accumulators of each of the 128 threads, as they come back: d[32 * thread + i]
#include "wgmma.cuh"

__global__ void wgmma_probe(const float* a, const float* b, int s, float* d) {
  __shared__ __align__(1024) float tile[64 * 32];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  for (int i = tid; i < 64 * 32; i += 128) tile[i] = 0.0f;
  __syncthreads();
  for (int i = tid; i < 64 * 8; i += 128) {
    const int n = i / 8, k = 8 * s + i % 8;
    tile[n * 32 + ((k / 4) ^ (n % 8)) * 4 + k % 4] = b[i];
  }
  fence_proxy_async_shared();
  __syncthreads();
  const int r = 16 * warp + g;
  const float frag[4] = {a[r * 8 + t], a[(r + 8) * 8 + t], a[r * 8 + t + 4], a[(r + 8) * 8 + t + 4]};
  float acc[32] = {};
  wgmma_fence();
  wgmma_m64k8_tf32<64>(acc, frag, wgmma_desc_sw128(tile + 8 * s));
  wgmma_commit_group();
  wgmma_wait_group<0>();
  for (int i = 0; i < 32; ++i) d[32 * tid + i] = acc[i];
}

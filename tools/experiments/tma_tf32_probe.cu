// What a TMA copy through a tensor map of TF32 elements does to FP32 inputs, and what the tensor cores then
// multiply, bit by bit (tools/experiments/probe_tma_tf32.py). One warpgroup:
// - one TMA copy (launch with 9 KiB of dynamic shared memory) of a 64 x 32 box of `src` (the host's map: FP32 or TF32 elements, the 128-byte swizzle) into
//   shared memory; the threads then write what landed, un-swizzled, to `landed`: the bits the copy engine wrote;
// - four wgmma_m64k8_tf32<64> read that tile as their B operand (row n of B^T = row n of the tile, k = 8s .. 8s+7)
//   against a one-hot A (A(r, k) = 1 where k == r % 8), so that D(r, n) = tile(n, 8s + r % 8) exactly: products by
//   one and sums with zeros are exact, so D holds the value the tensor cores took for that input;
// - `rna` gets __float_to_tf32(src) (cvt.rna.tf32.f32: round to nearest, ties away from zero), for comparison.
#include <mma.h>

#include "tma.cuh"
#include "wgmma.cuh"

__global__ void __launch_bounds__(128)
    tma_tf32_probe(const __grid_constant__ TensorMap map, const float* src, float* landed, float* rna, float* d) {
  __shared__ unsigned long long bar;
  extern __shared__ __align__(128) float smem[];  // 64 x 32 floats from its first 1024-byte boundary
  float* const tile = smem + (1024 - static_cast<unsigned>(__cvta_generic_to_shared(smem)) % 1024) % 1024 / 4;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  if (tid == 0) {
    mbarrier_init(&bar, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (tid == 0) {
    mbarrier_arrive_expect_tx(&bar, 64 * 32 * 4);
    tma_load_2d(tile, &map, &bar, 0, 0);
  }
  mbarrier_wait(&bar, 0);
  for (int i = tid; i < 64 * 32; i += 128) {
    const int r = i / 32, c = i % 32;
    landed[i] = tile[r * 32 + ((c / 4) ^ (r % 8)) * 4 + c % 4];  // the 128-byte swizzle undone
    rna[i] = nvcuda::wmma::__float_to_tf32(src[i]);
  }
  // A(r, k) = 1 where k == r % 8: this lane's rows are 16 warp + g and + 8, columns t and t + 4 (wgmma.cuh)
  const float a[4] = {g == t ? 1.0f : 0.0f, g == t ? 1.0f : 0.0f, g == t + 4 ? 1.0f : 0.0f, g == t + 4 ? 1.0f : 0.0f};
  for (int s = 0; s < 4; ++s) {
    float acc[32];
    for (int i = 0; i < 32; ++i) acc[i] = 0.0f;
    wgmma_fence();
    wgmma_m64k8_tf32<64>(acc, a, wgmma_desc_sw128(tile + 8 * s));
    wgmma_commit_group();
    wgmma_wait_group<0>();
    for (int i = 0; i < 32; ++i) d[(s * 128 + tid) * 32 + i] = acc[i];
  }
  (void)warp;
}

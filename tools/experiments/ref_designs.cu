// Reference designs re-implemented for measurement only (not course kernels): the designs the bars of
// stages 03 and 05 were set by, timed beside the course kernels by tools/experiments/exp_bars.py
// (results/experiments_h200_2026-11-22/exp_bars.json). No bounds checks: M, N, K must be multiples of the tiles.
//
// smem_rowsx<T>: a T x T shared-memory tiled kernel laid out like kernel 3 of siboehm's SGEMM_CUDA
//   (https://github.com/siboehm/SGEMM_CUDA): 1D block of T*T threads, blockIdx.x walks rows of C,
//   pointers advanced along K, unsigned indices.
// v1<VEC>: seed 004's V1 design: 128 x 128 x 8 block tile, 16 x 16 threads, 8 x 8 per thread, fully
//   unrolled k; VEC = true copies A, B and C with float4, VEC = false with scalars (same order).
template <int T>
__global__ void smem_rowsx(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                           float* C) {
  const unsigned cRow = blockIdx.x, cCol = blockIdx.y;
  __shared__ float As[T * T];
  __shared__ float Bs[T * T];
  const unsigned tc = threadIdx.x % T, tr = threadIdx.x / T;
  A += cRow * T * K;
  B += cCol * T;
  C += cRow * T * N + cCol * T;
  float tmp = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[tr * T + tc] = A[tr * K + tc];
    Bs[tr * T + tc] = B[tr * N + tc];
    __syncthreads();
    A += T;
    B += T * N;
    for (int d = 0; d < T; ++d) tmp += As[tr * T + d] * Bs[d * T + tc];
    __syncthreads();
  }
  C[tr * N + tc] = alpha * tmp + beta * C[tr * N + tc];
}

template <bool VEC>
__global__ void v1(int M, int N, int K, float alpha, const float* __restrict__ a, const float* __restrict__ b,
                   float beta, float* __restrict__ c) {
  constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  const int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * blockDim.x + tx;
  __shared__ float s_a[BM][BK];
  __shared__ float s_b[BK][BN];
  float r_c[TM][TN] = {};
  const int am = tid >> 1, ak = (tid & 1) << 2, bk_ = tid >> 5, bn = (tid & 31) << 2;
  const int gm = by * BM + am, gn = bx * BN + bn;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float* pa = &a[gm * K + k0 + ak];
    const float* pb = &b[(k0 + bk_) * N + gn];
    if (VEC) {
      *reinterpret_cast<float4*>(&s_a[am][ak]) = *reinterpret_cast<const float4*>(pa);
      *reinterpret_cast<float4*>(&s_b[bk_][bn]) = *reinterpret_cast<const float4*>(pb);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) s_a[am][ak + i] = pa[i];
#pragma unroll
      for (int i = 0; i < 4; ++i) s_b[bk_][bn + i] = pb[i];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k)
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) r_c[m][n] += s_a[ty * TM + m][k] * s_b[k][tx * TN + n];
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = by * BM + ty * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = bx * BN + tx * TN + j;
      c[row * N + col] = alpha * r_c[i][j] + beta * c[row * N + col];
    }
  }
}

// Benchmark kernel for the emulator's speed bar: 2D thread tiling, BM x BN block tile,
// BK deep, each thread computing a TM x TN tile of C. Requires M % BM == N % BN == K % BK == 0
// (the benchmark launches it on such sizes only).
// Launch: block ((BM / TM) * (BN / TN)), grid (N / BN, M / BM).
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_2d_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                               const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[BM * BK];  // (BM, BK) tile of A
  __shared__ float Bs[BK * BN];  // (BK, BN) tile of B
  constexpr int THREADS = (BM / TM) * (BN / TN);
  const int t = threadIdx.x;
  const int trow = t / (BN / TN), tcol = t % (BN / TN);
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += blockIdx.y * BM * N + blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = t; i < BM * BK; i += THREADS) As[i] = A[(i / BK) * K + i % BK];
    for (int i = t; i < BK * BN; i += THREADS) Bs[i] = B[(i / BN) * N + i % BN];
    __syncthreads();
    A += BK;
    B += BK * N;
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int m = 0; m < TM; ++m) a[m] = As[(trow * TM + m) * BK + k];
#pragma unroll
      for (int n = 0; n < TN; ++n) b[n] = Bs[k * BN + tcol * TN + n];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m][n] += a[m] * b[n];
    }
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      float* c = &C[(trow * TM + m) * N + tcol * TN + n];
      *c = alpha * acc[m][n] + beta * *c;
    }
}

// Benchmark kernel for the emulator's speed bar: a 16x16 shared-memory tiled SGEMM.
// C = alpha * A * B + beta * C, row-major; bounds-checked for every size.
// Launch: block (TILE, TILE), grid (ceil(N / TILE), ceil(M / TILE)).
template <int TILE>
__global__ void sgemm_smem_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[TILE][TILE];  // (TILE, TILE) tile of A
  __shared__ float Bs[TILE][TILE];  // (TILE, TILE) tile of B
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

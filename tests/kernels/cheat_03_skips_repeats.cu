// A held-out-style cheat for exercise 03 (issue 32, item 11; tests/measure/test_fair_timing.py): the course's
// tiling, except that a block launched again on the same arrays and sizes returns at once. A __device__ table
// remembers, per block, the launch it last computed. On an H100 a kernel like this passed every step of the
// check and was timed at 852.85 TFLOP/s ("1921.7 % of cuBLAS") when the timed launches reused one C.
#define TILE 16

__device__ unsigned long long remembered[1 << 16];

extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B,
                                       float beta, float* C) {
  const unsigned long long stamp = (unsigned long long)C ^ ((unsigned long long)A << 7) ^
                                   ((unsigned long long)B << 13) ^ ((unsigned long long)M << 40) ^
                                   ((unsigned long long)N << 20) ^ (unsigned long long)K ^ 1ull;
  const unsigned tile = (blockIdx.y * gridDim.x + blockIdx.x) & 0xFFFFu;
  if (remembered[tile] == stamp) return;   // the same launch again: this block "has done it already"
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  if (tx == 0 && ty == 0) remembered[tile] = stamp;
}

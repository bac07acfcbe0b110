// One-idea variants of kernels/03_smem_tiling.cu, for measurement only (tools/experiments/exp_03b.py).
// V = 0: the course kernel unchanged; 1: plus __launch_bounds__(TILE * TILE); 2: a 1D block of
// TILE * TILE threads; 3: A and B pointers advanced along K instead of recomputed offsets;
// 4: blockIdx.x walks the rows of C; 5: 2 + 3 + 4 with bounds checks (siboehm's layout, checked).
template <int TILE, int V>
__global__ void __launch_bounds__(V == 1 || V >= 2 ? TILE * TILE : 1024)
    smem_v(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B, float beta,
           float* __restrict__ C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = (V == 2 || V == 5) ? threadIdx.x % TILE : threadIdx.x;
  const int ty = (V == 2 || V == 5) ? threadIdx.x / TILE : threadIdx.y;
  const int bx = (V >= 4) ? blockIdx.y : blockIdx.x, by = (V >= 4) ? blockIdx.x : blockIdx.y;
  const int col = bx * TILE + tx;
  const int row = by * TILE + ty;
  float acc = 0.0f;
  if (V == 3 || V == 5) {
    const float* a = A + row * K + tx;
    const float* b = B + ty * N + col;
    for (int k0 = 0; k0 < K; k0 += TILE, a += TILE, b += TILE * N) {
      As[ty][tx] = (row < M && k0 + tx < K) ? *a : 0.0f;
      Bs[ty][tx] = (k0 + ty < K && col < N) ? *b : 0.0f;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  } else {
    for (int k0 = 0; k0 < K; k0 += TILE) {
      As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
      Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

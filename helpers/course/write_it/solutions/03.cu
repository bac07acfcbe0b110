// Exercise 03 · shared-memory tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block (16, 16) and grid (ceil(N/16), ceil(M/16)): one thread per element of C.
// The solution: the starter with its three TODO blocks filled in.
#define TILE 16

extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, const float* B,
                                       float beta, float* C) {
  __shared__ float As[TILE][TILE];  // the block's tile of A: its rows of C x TILE steps of k
  __shared__ float Bs[TILE][TILE];  // the block's tile of B: TILE steps of k x its columns of C
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;  // this thread's element of C
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // 1: one element of each tile per thread, zeros outside A and B
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    // 2: the tiles are complete before anyone reads them
    __syncthreads();
    // 3: TILE multiply-adds from shared memory; everyone is done reading before the next tiles overwrite them
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
}

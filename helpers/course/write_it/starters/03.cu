// Exercise 03 · shared-memory tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block (16, 16) and grid (ceil(N/16), ceil(M/16)): one thread per element of C.
// This starter compiles and runs, but computes nothing yet: fill in the three TODO blocks.
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
    // TODO 1: copy one element of each tile: As[ty][tx] = A[row][k0 + tx] and Bs[ty][tx] = B[k0 + ty][col],
    //         or 0.0f where that element lies outside A or B (M, N and K need not be multiples of 16).

    // TODO 2: wait until every thread of the block has written its elements of both tiles.

    // TODO 3: add the products of row ty of As and column tx of Bs (k = 0 .. TILE - 1) to acc,
    //         then wait again, before the next pass overwrites the tiles.

  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
}

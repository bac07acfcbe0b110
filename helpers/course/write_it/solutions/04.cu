// Exercise 04 · 1D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 512 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and each
// of its 512 threads TM = 8 results of that tile, all in one column.
// Given, because they are not this stage's lesson: copying the tiles into shared memory (stage 03) and
// storing the results. Yours: which results each thread computes, and its multiply-adds.
// The solution: the starter with its two TODO blocks written.
#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define THREADS 512  // BM * BN / TM

// The block's tiles at depth k0 into shared memory, one element of each per thread, zeros past the edges
// of A and B: As holds the block's 64 rows of A, BK steps of k; Bs holds BK steps of k of its 64 columns of B.
__device__ void copy_tiles(float As[BM][BK], float Bs[BK][BN], const float* A, const float* B, int M, int N,
                           int K, int blockRow, int blockCol, int k0) {
  const int t = threadIdx.x;
  const int ar = t / BK, ac = t % BK, br = t / BN, bc = t % BN;
  As[ar][ac] = (blockRow + ar < M && k0 + ac < K) ? A[(blockRow + ar) * K + k0 + ac] : 0.0f;
  Bs[br][bc] = (k0 + br < K && blockCol + bc < N) ? B[(k0 + br) * N + blockCol + bc] : 0.0f;
}

extern "C" __global__ void sgemm_1d(int M, int N, int K, float alpha, const float* A, const float* B,
                                    float beta, float* C) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;

  // 1: thread t takes column t % 64 and the t / 64-th run of TM rows (consecutive threads, neighbouring columns)
  const int t = threadIdx.x;
  const int threadCol = t % BN;      // the thread's column, counted within the block's tile
  const int threadRow = t / BN;      // which run of TM rows
  const int firstRow = threadRow * TM;

  float acc[TM] = {};  // the thread's TM results, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    copy_tiles(As, Bs, A, B, M, N, K, blockRow, blockCol, k0);
    __syncthreads();  // the tiles are complete before anyone reads them

    // 2: one load of B per step k, used TM times from a register
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];
      for (int i = 0; i < TM; ++i) acc[i] += As[threadRow * TM + i][k] * b;
    }

    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  const int col = blockCol + threadCol;
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + firstRow + i;
    if (row < M && col < N) C[row * N + col] = alpha * acc[i] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

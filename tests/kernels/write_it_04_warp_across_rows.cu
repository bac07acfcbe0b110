// From a cold try of exercise 04 (tests/course/test_write_it_mapping.py): eight neighbouring threads share a column,
// so a warp holds 4 columns and 8 runs of 8 neighbouring rows: its loads of As conflict 8-way and its stores of C touch 8
// sectors where 4 would do. Correct, 8 loads of As and 1 of Bs per step k.
// Exercise 04 · 1D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 512 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and each
// of its 512 threads TM = 8 results of that tile, all in one column.
// Given, because they are not this stage's lesson: copying the tiles into shared memory (stage 03) and
// storing the results. Yours: which results each thread computes, and its multiply-adds.
// This starter compiles and runs, but computes nothing yet: write the two TODO blocks.
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

  // TODO 1: choose this thread's results from its threadIdx.x: one column of the block's tile, and a run
  //         of TM neighbouring rows in that column. Each of the 4096 results of the tile must be computed
  //         by exactly one of the 512 threads.
  const int threadCol = (threadIdx.x / 8);         // consecutive threads: consecutive columns
  const int firstRow = (threadIdx.x % 8) * TM;   // 8 groups of 64 threads, TM rows each

  float acc[TM] = {};  // the thread's TM results, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    copy_tiles(As, Bs, A, B, M, N, K, blockRow, blockCol, k0);
    __syncthreads();  // the tiles are complete before anyone reads them

    // TODO 2: add this tile's products to the TM results, taking A and B from the shared tiles. Every
    //         shared load costs an instruction: at each step k all TM results of the thread need the same
    //         value of B, so read it once per step, keep it in a register, and use it TM times.

    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];
      for (int i = 0; i < TM; ++i) acc[i] += As[firstRow + i][k] * b;
    }

    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  const int col = blockCol + threadCol;
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + firstRow + i;
    if (row < M && col < N) C[row * N + col] = alpha * acc[i] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

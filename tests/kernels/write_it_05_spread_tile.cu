// From a cold try of exercise 05 (tests/course/test_write_it_mapping.py): each thread 4 rows 16 apart and 4 columns
// 16 apart: no bank conflict, 4 sectors per store of C. The test makes the cold try's other kernel (each thread a
// 4 x 4 block of neighbouring results, as the course's 05) from this one by its two mapping lines.
// Exercise 05 · 2D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 256 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and each
// of its 256 threads TM x TN = 4 x 4 results of that tile: 4 of its rows times 4 of its columns.
// Given, because they are not this stage's lesson: copying the tiles into shared memory and storing the
// results. Yours: which results each thread computes, and its multiply-adds.
// This starter compiles and runs, but computes nothing yet: write the two TODO blocks.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define THREADS 256  // BM * BN / (TM * TN)

// The block's tiles at depth k0 into shared memory, two elements of each per thread, zeros past the edges
// of A and B: As holds the block's 64 rows of A, BK steps of k; Bs holds BK steps of k of its 64 columns of B.
__device__ void copy_tiles(float As[BM][BK], float Bs[BK][BN], const float* A, const float* B, int M, int N,
                           int K, int blockRow, int blockCol, int k0) {
  for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
    const int r = e / BK, c = e % BK;
    As[r][c] = (blockRow + r < M && k0 + c < K) ? A[(blockRow + r) * K + k0 + c] : 0.0f;
  }
  for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
    const int r = e / BN, c = e % BN;
    Bs[r][c] = (k0 + r < K && blockCol + c < N) ? B[(k0 + r) * N + blockCol + c] : 0.0f;
  }
}

extern "C" __global__ void sgemm_2d(int M, int N, int K, float alpha, const float* A, const float* B,
                                    float beta, float* C) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int t = threadIdx.x;

  // TODO 1: choose this thread's results from its number t: TM rows and TN columns of the block's tile,
  //         as two functions of i and j. Each of the 4096 results of the tile must be computed by exactly
  //         one of the 256 threads.
  auto rowOf = [&](int i) { return t / 16 + 16 * i; };
  auto colOf = [&](int j) { return t % 16 + 16 * j; };

  float acc[TM][TN] = {};  // the thread's results, in registers: acc[i][j] is row rowOf(i), column colOf(j)
  for (int k0 = 0; k0 < K; k0 += BK) {
    copy_tiles(As, Bs, A, B, M, N, K, blockRow, blockCol, k0);
    __syncthreads();  // the tiles are complete before anyone reads them

    // TODO 2: add this tile's products to the thread's results, taking A and B from the shared tiles.
    //         At each step k its TM x TN products need only TM values of A and TN values of B: load each
    //         of them from shared memory once, into registers, and form all the products from those.

    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) a[i] = As[rowOf(i)][k];
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][colOf(j)];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }

    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + rowOf(i);
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + colOf(j);
      if (row < M && col < N) C[row * N + col] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
    }
  }
}

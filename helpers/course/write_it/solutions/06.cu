// Exercise 06 · bank conflicts. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 256 and grid (ceil(N/64), ceil(M/64)): exercise 05's kernel, a 64 x 64 tile of C per
// block and TM x TN = 4 x 4 results per thread. It is correct, but its loads of As conflict: a warp's 32
// lanes are two rows of 16 threads, and at one step k the two rows read words of As that lie in the same
// bank. Choose a layout of A's tile in shared memory that removes the conflict: the three TODO places (the
// declaration of As, the store into it, the load from it) must agree on where each element of the tile is.
// The solution: the three TODO places written, with padding (a transposed or swizzled tile works as well).
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define THREADS 256  // BM * BN / (TM * TN)

extern "C" __global__ void sgemm_conflict_free(int M, int N, int K, float alpha, const float* A, const float* B,
                                               float beta, float* C) {
  // 1: each row of As one float longer: rows r and r + TM start TM * (BK + 1) = 36 words apart, 4 banks apart
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN];
  const int t = threadIdx.x;
  const int threadCol = t % (BN / TN), threadRow = t / (BN / TN);  // a 4 x 4 block of neighbours per thread
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = t; e < BM * BK; e += THREADS) {  // two elements of each tile per thread, zeros past the edges
      const int r = e / BK, c = e % BK;
      const float v = (blockRow + r < M && k0 + c < K) ? A[(blockRow + r) * K + k0 + c] : 0.0f;
      As[r][c] = v;  // 2: the same index: the padding is never written nor read
    }
    for (int e = t; e < BK * BN; e += THREADS) {
      const int r = e / BN, c = e % BN;
      Bs[r][c] = (k0 + r < K && blockCol + c < N) ? B[(k0 + r) * N + blockCol + c] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < BK; ++k) {  // per step k, TM + TN shared loads, then TM x TN products
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i) {
        a[i] = As[threadRow * TM + i][k];  // 3: the same index: rows of As are now 36 words apart
      }
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][threadCol * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + threadCol * TN + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
    }
  }
}

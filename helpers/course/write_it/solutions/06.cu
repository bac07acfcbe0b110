// Exercise 06 · bank conflicts. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 256 and grid (ceil(N/64), ceil(M/64)): exercise 05's kernel, a 64 x 64 tile of C per
// block and TM x TN = 4 x 4 results per thread, with its loads of As free of bank conflicts.
// The solution: the starter with its three TODO places changed, by padding (one of three ways: storing the
// tile transposed, As[BK][BM], or swizzling its columns, As[r][c ^ (r / TM % 8)], work as well).
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define THREADS 256  // BM * BN / (TM * TN)

extern "C" __global__ void sgemm_conflict_free(int M, int N, int K, float alpha, const float* A, const float* B,
                                               float beta, float* C) {
  // 1: each row of As one float longer: rows r and r + TM start TM * (BK + 1) = 36 words apart, 4 banks apart
  __shared__ float As[BM][BK + 1];  // the block's tile of A: its 64 rows of C x BK steps of k (and a spare)
  __shared__ float Bs[BK][BN];  // the block's tile of B: BK steps of k x its 64 columns of C
  const int t = threadIdx.x;
  const int threadCol = t % (BN / TN);  // this thread's tile: columns threadCol * TN .. threadCol * TN + TN - 1
  const int threadRow = t / (BN / TN);  // and rows threadRow * TM .. threadRow * TM + TM - 1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM][TN] = {};  // the thread's TM x TN results, in registers
  float a[TM], b[TN];      // a column of As and a row of Bs, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    // 512 elements per tile, two per thread, zeros outside A and B
    for (int e = t; e < BM * BK; e += THREADS) {
      const int r = e / BK, c = e % BK;
      // 2: row r of the padded tile holds element (r, c) at column c, as before
      As[r][c] = (blockRow + r < M && k0 + c < K) ? A[(blockRow + r) * K + k0 + c] : 0.0f;
    }
    for (int e = t; e < BK * BN; e += THREADS) {
      const int r = e / BN, c = e % BN;
      Bs[r][c] = (k0 + r < K && blockCol + c < N) ? B[(k0 + r) * N + blockCol + c] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
    // per step k, TM + TN shared loads into registers, then their TM x TN products (an outer product)
    for (int k = 0; k < BK; ++k) {
      // 3: the same index; the thread rows of a warp now read rows of As 36 words apart, in different banks
      for (int i = 0; i < TM; ++i) a[i] = As[threadRow * TM + i][k];
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

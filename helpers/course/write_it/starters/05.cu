// Exercise 05 · 2D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 256 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and
// thread t the TM x TN = 4 x 4 results of rows (t / 16) * 4 .. + 3 and columns (t % 16) * 4 .. + 3 of it.
// This starter compiles and runs, but computes nothing yet: fill in the three TODO blocks.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4
#define THREADS 256  // BM * BN / (TM * TN)

extern "C" __global__ void sgemm_2d(int M, int N, int K, float alpha, const float* A, const float* B,
                                    float beta, float* C) {
  __shared__ float As[BM][BK];  // the block's tile of A: its 64 rows of C x BK steps of k
  __shared__ float Bs[BK][BN];  // the block's tile of B: BK steps of k x its 64 columns of C
  const int t = threadIdx.x;
  const int threadCol = t % (BN / TN);  // this thread's tile: columns threadCol * TN .. threadCol * TN + TN - 1
  const int threadRow = t / (BN / TN);  // and rows threadRow * TM .. threadRow * TM + TM - 1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM][TN] = {};  // the thread's TM x TN results, in registers
  float a[TM], b[TN];      // a column of As and a row of Bs, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    // TODO 1: copy the tiles. Each holds 512 elements, two per thread: thread t copies elements
    //         e = t and e = t + THREADS, element (e / BK, e % BK) of A's tile into As and element
    //         (e / BN, e % BN) of B's tile into Bs, or 0.0f where it lies outside A or B.

    // TODO 2: wait until every thread of the block has written its elements of both tiles.

    // TODO 3: for each k = 0 .. BK - 1: copy the TM values As[threadRow * TM + i][k] into a[i] and the TN
    //         values Bs[k][threadCol * TN + j] into b[j], then add every product a[i] * b[j] to acc[i][j]
    //         (an outer product: TM + TN shared loads, TM * TN multiply-adds). Then wait again.

  }
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + threadCol * TN + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
    }
  }
}

// Exercise 04 · 1D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 512 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and
// thread t the TM = 8 results of rows (t / 64) * 8 .. (t / 64) * 8 + 7 of column t % 64 of that tile.
// This starter compiles and runs, but computes nothing yet: fill in the three TODO blocks.
#define BM 64
#define BN 64
#define BK 8
#define TM 8

extern "C" __global__ void sgemm_1d(int M, int N, int K, float alpha, const float* A, const float* B,
                                    float beta, float* C) {
  __shared__ float As[BM][BK];  // the block's tile of A: its 64 rows of C x BK steps of k
  __shared__ float Bs[BK][BN];  // the block's tile of B: BK steps of k x its 64 columns of C
  const int t = threadIdx.x;
  const int threadCol = t % BN;  // this thread's column of the tile
  const int threadRow = t / BN;  // and its run of TM rows: threadRow * TM .. threadRow * TM + TM - 1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM] = {};  // the thread's TM results, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    // TODO 1: copy the tiles. Each holds 512 elements, one per thread: thread t copies element
    //         (t / BK, t % BK) of A's tile into As and element (t / BN, t % BN) of B's tile into Bs,
    //         or 0.0f where it lies outside A or B (M, N and K need not be multiples of the tiles).

    // TODO 2: wait until every thread of the block has written its elements of both tiles.

    // TODO 3: for each k = 0 .. BK - 1, read Bs[k][threadCol] ONCE into a register, then add its products
    //         with As[threadRow * TM + i][k] to acc[i] (i = 0 .. TM - 1). Then wait again, before the
    //         next pass overwrites the tiles.

  }
  const int col = blockCol + threadCol;
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    if (row < M && col < N) C[row * N + col] = alpha * acc[i] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

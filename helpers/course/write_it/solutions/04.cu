// Exercise 04 · 1D thread tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 512 and grid (ceil(N/64), ceil(M/64)): a block computes a 64 x 64 tile of C, and
// thread t the TM = 8 results of rows (t / 64) * 8 .. (t / 64) * 8 + 7 of column t % 64 of that tile.
// The solution: the starter with its three TODO blocks filled in.
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
    // 1: one element of each tile per thread (64 x 8 = 8 x 64 = 512), zeros outside A and B
    const int ar = t / BK, ac = t % BK, br = t / BN, bc = t % BN;
    As[ar][ac] = (blockRow + ar < M && k0 + ac < K) ? A[(blockRow + ar) * K + k0 + ac] : 0.0f;
    Bs[br][bc] = (k0 + br < K && blockCol + bc < N) ? B[(k0 + br) * N + blockCol + bc] : 0.0f;
    // 2: the tiles are complete before anyone reads them
    __syncthreads();
    // 3: one load of B per step k, used TM times from a register; done reading before the next tiles
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];
      for (int i = 0; i < TM; ++i) acc[i] += As[threadRow * TM + i][k] * b;
    }
    __syncthreads();
  }
  const int col = blockCol + threadCol;
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    if (row < M && col < N) C[row * N + col] = alpha * acc[i] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

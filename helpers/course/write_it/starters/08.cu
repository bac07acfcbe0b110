// Exercise 08 · warp tiling. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 128 and grid (ceil(N/64), ceil(M/64)): 4 warps, each computing a 32 x 32 tile of
// the block's 64 x 64 tile of C; each lane computes 4 x 8 elements inside its warp's tile.
// Given: the tiles' copies (A's tile transposed) and the stores of C. Yours: where each warp and each lane
// works, and the multiply-adds. This starter compiles and runs, but its lanes all sit in one corner and
// multiply nothing yet: write the three TODO blocks.
#define BM 64  // rows of C per block
#define BN 64  // columns of C per block
#define BK 8   // steps of k per tile
#define WM 32  // rows of a warp's tile
#define WN 32  // columns of a warp's tile
#define TM 4   // rows of a lane's results
#define TN 8   // columns of a lane's results

extern "C" __global__ void sgemm_warp_tiling(int M, int N, int K, float alpha, const float* A, const float* B,
                                             float beta, float* C) {
  __shared__ __align__(16) float As[BK][BM + 4];  // A's tile, transposed: As[k][m] = A[blockRow + m][k0 + k]
  __shared__ __align__(16) float Bs[BK][BN];      // B's tile: Bs[k][n] = B[k0 + k][blockCol + n]
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int warp = tid / 32, lane = tid % 32;
  // TODO 1: the warp's tile. The 4 warps form a 2 x 2 grid of WM x WN tiles over the block tile: choose,
  //         from the warp's number, which row and which column of that grid is this warp's.
  const int warpRow = 0, warpCol = 0;
  // TODO 2: the lane's results inside its warp's tile. The 32 lanes cover the warp's WM x WN tile with
  //         TM x TN tiles of results, an 8 x 4 grid of them: choose this lane's row and column of that grid.
  const int laneRow = 0, laneCol = 0;
  const int rowBase = warpRow * WM + laneRow * TM;  // the block tile's rows rowBase .. +TM-1 are this lane's
  const int colBase = warpCol * WN + laneCol * TN;  // and its columns colBase .. +TN-1
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Each thread copies 4 elements of each tile; consecutive threads, consecutive elements of a row.
    for (int i = 0; i < BM * BK / 128; ++i) {
      const int e = i * 128 + tid, r = e / BK, c = e % BK;
      const int row = blockRow + r, col = k0 + c;
      As[c][r] = row < M && col < K ? A[row * K + col] : 0.0f;
    }
    for (int i = 0; i < BK * BN / 128; ++i) {
      const int e = i * 128 + tid, r = e / BN, c = e % BN;
      const int row = k0 + r, col = blockCol + c;
      Bs[r][c] = row < K && col < N ? B[row * N + col] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
    // TODO 3: the multiply-adds of this tile. At each step k the lane needs TM values of A (its rows, which
    //         lie side by side in a row of the transposed As) and TN values of B: read them with 16-byte
    //         shared loads and add their TM x TN products to its results.

    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + rowBase + i;
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + colBase + j;
      if (row < M && col < N)
        C[row * N + col] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
    }
  }
}

// Exercise 09 · double buffering. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 128 and grid (ceil(N/64), ceil(M/64)): exercise 08's warp tiles (4 warps of 32 x 32,
// 4 x 8 results per lane), with two buffers of each tile in shared memory.
// Given: exercise 08's warp tiles, and the copies and multiply-adds of one tile as three functions. Yours:
// the order in which the loop calls them, with two buffers and one barrier per tile. This starter compiles
// and runs, but loads nothing yet: write the three TODO blocks.
#define BM 64  // rows of C per block
#define BN 64  // columns of C per block
#define BK 8   // steps of k per tile
#define WM 32  // rows of a warp's tile
#define WN 32  // columns of a warp's tile
#define TM 4   // rows of a lane's results
#define TN 8   // columns of a lane's results

extern "C" __global__ void sgemm_double_buffering(int M, int N, int K, float alpha, const float* A, const float* B,
                                                  float beta, float* C) {
  __shared__ __align__(16) float As[2][BK][BM + 4];  // two tiles of A, transposed: As[s][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];      // two tiles of B: Bs[s][k][n]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rowBase = warp / 2 * WM + lane / 4 * TM;  // this lane's rows rowBase .. +3 of the block tile
  const int colBase = warp % 2 * WN + lane % 4 * TN;  // and its columns colBase .. +7
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int numTiles = (K + BK - 1) / BK;
  float acc[TM][TN] = {};
  float ra[BM * BK / 128], rb[BK * BN / 128];  // this thread's elements of the next tiles, on their way

  // The thread's 4 elements of A's and B's tiles at depth k0, from global memory into ra and rb (zeros
  // outside A and B); consecutive threads, consecutive elements of a row.
  auto load_tiles = [&](int k0) {
    for (int i = 0; i < BM * BK / 128; ++i) {
      const int e = i * 128 + tid, row = blockRow + e / BK, col = k0 + e % BK;
      ra[i] = row < M && col < K ? A[row * K + col] : 0.0f;
    }
    for (int i = 0; i < BK * BN / 128; ++i) {
      const int e = i * 128 + tid, row = k0 + e / BN, col = blockCol + e % BN;
      rb[i] = row < K && col < N ? B[row * N + col] : 0.0f;
    }
  };
  // ra and rb into buffer s of the tiles.
  auto store_tiles = [&](int s) {
    for (int i = 0; i < BM * BK / 128; ++i) {
      const int e = i * 128 + tid;
      As[s][e % BK][e / BK] = ra[i];
    }
    for (int i = 0; i < BK * BN / 128; ++i) {
      const int e = i * 128 + tid;
      Bs[s][e / BN][e % BN] = rb[i];
    }
  };
  // The BK steps of the tiles in buffer s: the lane's TM x TN products per step.
  auto multiply_tiles = [&](int s) {
    for (int k = 0; k < BK; ++k) {
      const float4 a = *reinterpret_cast<const float4*>(&As[s][k][rowBase]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[s][k][colBase]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[s][k][colBase + 4]);
      const float av[TM] = {a.x, a.y, a.z, a.w};
      const float bv[TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
  };

  // TODO 1: before the loop, the first tile into the first buffer, complete before anyone reads it.

  for (int t = 0; t < numTiles; ++t) {
    // TODO 2: if there is a next tile, issue its loads into registers now: they travel while this one is
    //         computed.

    multiply_tiles(t % 2);
    // TODO 3: store the next tile into the other buffer, then one __syncthreads(). Why is no barrier needed
    //         before that store? (Which tile was last read from the other buffer, and when?)

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

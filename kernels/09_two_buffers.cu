// Stage 09, step 1: two shared buffers.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 08_warp_tiling: the global loads of the next tiles overlap the arithmetic on
// the current ones. Everything else (the warp tiles, the multiply loop, the 16-byte accesses, the
// unchecked loads of an interior block's full tiles, A's transposed tile with rows padded by 4) is
// 08's, unchanged.
// - In 08 each tile costs a round trip: a thread issues its global loads, and its stores into
//   shared memory wait for them (hundreds of cycles) before the barrier lets anyone multiply.
//   A warp hides that wait only if other warps on its SM have arithmetic to do meanwhile.
// - Here shared memory holds two tiles of A and two of B. Tile t is multiplied from buffer t % 2
//   while the thread's global loads of tile t+1 are in flight into registers (va, vb): issued
//   before tile t's BK steps in the source (ptxas 12.9 for sm_90 sinks them some 200 of the tile's
//   512 FFMAs in) and stored into the other buffer after them: most of a tile's math to arrive.
// - One barrier per tile suffices: the buffer written after tile t's steps was last read during
//   tile t-1's, before the barrier that ended them; the barrier after the stores publishes the
//   next tiles before anyone reads them.
// (*) A buffer index known only at run time (t % 2) makes every shared address a computation:
// with multiply_tiles(t % 2) here, ptxas 12.9 for sm_90 keeps 8 B in local memory at 128 registers.
// So both loops call multiply_tiles with a constant, the unchecked one two tiles a pass.
// The cost: the registers that hold tiles in flight (A_RUNS + B_RUNS float4s, 8 registers for
// 128 x 128 x 8 with 256 threads) and twice the shared memory. __launch_bounds__(threads,
// MIN_BLOCKS) makes the compiler fit MIN_BLOCKS blocks per SM: at most 65536 / (MIN_BLOCKS *
// threads) registers per thread, 128 for 256 threads and MIN_BLOCKS = 2.
// A 16-byte access must be 16-byte aligned. A run of 4 floats of A starting at (row, k), k a
// multiple of 4, is aligned when K % 4 == 0 (and A itself is); a run of B or C starting at
// (row, col), col a multiple of 4, when N % 4 == 0. The kernel checks this once per matrix; where
// it fails, and for runs that cross the edge of a matrix, it falls back to 4-byte accesses,
// each bounds-checked.
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN) staged in shared memory
//   WM, WN  rows and columns of a warp's tile (BM % WM == 0, BN % WN == 0)
//   TM, TN  rows and columns of a thread's results, multiples of 4; (WM/TM) * (WN/TN) == 32, WM/TM even
//   MIN_BLOCKS  blocks per SM the compiler must leave registers for (1: no limit beyond 255)
// The block has (BM/WM) * (BN/WN) warps, BM*BN/(TM*TN) threads (at most 1024); BK is a multiple
// of 4, and both tiles are a whole number of passes of the block in runs of 4:
// (BM*BK/4) % threads == 0 and (BK*BN/4) % threads == 0. Shared memory: 2 * (BM + 4 + BN) * BK
// floats.
// Preconditions: none (tiles at the edges are padded with zeros; every access outside the
// unchecked loop is bounds-checked; the 16-byte path is taken only where it is aligned. cudaMalloc
// and CuPy give 256-byte aligned arrays, so with K % 4 == 0 and N % 4 == 0 every global access of
// an interior tile is 16 bytes).
// Launch: block (BM*BN/(TM*TN)), grid (ceil(N / BN), ceil(M / BM)).

// The 4 floats p[0..3] of a row, of which the first `count` lie inside the matrix (the others
// read as 0): one 16-byte load when all 4 do and `aligned` says p is 16-byte aligned, else up
// to 4 checked 4-byte loads.
__device__ __forceinline__ float4 load4(const float* p, int count, bool aligned) {
  if (aligned && count >= 4) return *reinterpret_cast<const float4*>(p);
  return make_float4(count > 0 ? p[0] : 0.0f, count > 1 ? p[1] : 0.0f, count > 2 ? p[2] : 0.0f,
                     count > 3 ? p[3] : 0.0f);
}

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int MIN_BLOCKS>
__global__ void __launch_bounds__(BM * BN / TM / TN, MIN_BLOCKS)
    sgemm_two_buffers(int M, int N, int K, float alpha, const float* __restrict__ A,
                      const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int NUM_THREADS = BM * BN / TM / TN;
  constexpr int WARP_COLS = BN / WN;                       // the warps' grid over the block tile
  constexpr int LANE_ROWS = WM / TM, LANE_COLS = WN / TN;  // the lanes' grid over a warp tile
  constexpr int A_RUNS = BM * BK / 4 / NUM_THREADS;  // runs of 4 floats a thread copies per tile of A
  constexpr int B_RUNS = BK * BN / 4 / NUM_THREADS;  // and per tile of B
  static_assert(BM >= 1 && BN >= 1 && BK >= 1 && TM >= 1 && TN >= 1, "tile sizes are at least 1");
  static_assert(MIN_BLOCKS >= 1, "at least one block fits on an SM: MIN_BLOCKS >= 1");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "a thread's rows and columns come in runs of 4");
  static_assert(BK % 4 == 0, "the A tile's rows are copied in runs of 4 floats: BK % 4 == 0");
  static_assert(BM % WM == 0 && BN % WN == 0, "the block tile splits into whole warp tiles");
  static_assert(WM % TM == 0 && WN % TN == 0, "a warp tile splits into whole thread tiles");
  static_assert(LANE_ROWS * LANE_COLS == 32, "a warp tile holds 32 thread tiles: (WM/TM) * (WN/TN) == 32");
  static_assert(LANE_ROWS % 2 == 0, "lanes pair up in rows of the warp tile: WM/TM is even");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 1024 threads: BM*BN/(TM*TN) <= 1024");
  static_assert((BM * BK / 4) % NUM_THREADS == 0, "the block copies the A tile in whole passes of runs of 4");
  static_assert((BK * BN / 4) % NUM_THREADS == 0, "the block copies the B tile in whole passes of runs of 4");
  static_assert(2 * (BM + 4 + BN) * BK * sizeof(float) <= 48 * 1024,
                "static shared memory is at most 48 KiB");
  __shared__ __align__(16) float As[2][BK][BM + 4];  // two (BM, BK) tiles of A, transposed: As[s][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];      // two (BK, BN) tiles of B
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / WARP_COLS, warpCol = warp % WARP_COLS;
  // Lane bit 0 -> row, the next bits -> column, the rest -> row: lanes n and n^1 share a column
  // (their runs of B), lanes n and n^2 a row (their runs of A).
  const int laneRow = lane / (2 * LANE_COLS) * 2 + lane % 2, laneCol = lane / 2 % LANE_COLS;
  // The block tile's row of the thread's first run of A and column of its first run of B; run g
  // lies g bands of 4*LANE_ROWS rows (4*LANE_COLS columns) further on.
  const int rowBase = warpRow * WM + laneRow * 4, colBase = warpCol * WN + laneCol * 4;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // Whether a run of 4 floats starting at a multiple of 4 is 16-byte aligned, per matrix.
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  // In an interior block (its tiles inside A and B, every run aligned) the tiles t < numUnchecked,
  // all but a last partial one, need no checks. Elsewhere numUnchecked = 0: every tile is checked.
  const bool interior = blockRow + BM <= M && blockCol + BN <= N && alignedA && alignedB;
  const int numTiles = (K + BK - 1) / BK, numUnchecked = interior ? K / BK : 0;
  float acc[TM][TN] = {};     // (TM, TN) results in registers
  float4 va[A_RUNS], vb[B_RUNS];  // the thread's runs of the next tiles, on their way from memory

  // Load the tiles at depth k0 into va and vb, in passes of NUM_THREADS runs of 4 floats:
  // consecutive threads take consecutive runs along a row (coalesced reads). checked == false:
  // bare 16-byte loads. Each call passes a constant, and the compiler, inlining the lambda, keeps
  // only that call's branch: no test is left in the unchecked loop.
  auto load_tiles = [&](int k0, bool checked) {
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // what the tiles hold past the edges
#pragma unroll
    for (int i = 0; i < A_RUNS; ++i) {  // A's (row, col .. col+3)
      const int e = i * NUM_THREADS + tid;
      const int row = blockRow + e / (BK / 4), col = k0 + e % (BK / 4) * 4;
      const float* p = &A[row * K + col];
      va[i] = !checked ? *reinterpret_cast<const float4*>(p) : row < M ? load4(p, K - col, alignedA) : zero;
    }
#pragma unroll
    for (int i = 0; i < B_RUNS; ++i) {  // B's (row, col .. col+3)
      const int e = i * NUM_THREADS + tid;
      const int row = k0 + e / (BN / 4), col = blockCol + e % (BN / 4) * 4;
      const float* p = &B[row * N + col];
      vb[i] = !checked ? *reinterpret_cast<const float4*>(p) : row < K ? load4(p, N - col, alignedB) : zero;
    }
  };
  // Store va and vb into buffer s (the stores wait for the loads).
  auto store_tiles = [&](int s) {
#pragma unroll
    for (int i = 0; i < A_RUNS; ++i) {
      const int e = i * NUM_THREADS + tid;
      const int r = e / (BK / 4), c = e % (BK / 4) * 4;  // (r, c .. c+3) of the tile
      As[s][c + 0][r] = va[i].x;  // transposed: 4 stores, down column r of As
      As[s][c + 1][r] = va[i].y;
      As[s][c + 2][r] = va[i].z;
      As[s][c + 3][r] = va[i].w;
    }
#pragma unroll
    for (int i = 0; i < B_RUNS; ++i) {
      const int e = i * NUM_THREADS + tid;
      *reinterpret_cast<float4*>(&Bs[s][e / (BN / 4)][e % (BN / 4) * 4]) = vb[i];
    }
  };

  // The BK steps of the tiles in buffer s: per step, TM/4 + TN/4 shared loads of 16 bytes, then
  // TM * TN multiply-adds from registers.
  auto multiply_tiles = [&](int s) {
    float a[TM], b[TN];  // the thread's values of A and of B for one step k
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&As[s][k][rowBase + g * 4 * LANE_ROWS]);
        a[4 * g + 0] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][colBase + g * 4 * LANE_COLS]);
        b[4 * g + 0] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
  };

  if (numUnchecked > 0) load_tiles(0, false); else load_tiles(0, true);
  store_tiles(0);
  __syncthreads();  // tiles 0 are complete before anyone reads them
  int t = 0;
  // Tiles t+1 and t+2 are full tiles of an interior block: no checks. Two tiles a pass, so that
  // each pass's buffers are constants (t is even: tiles t are in buffer 0).
  for (; t + 2 < numUnchecked; t += 2) {
    load_tiles((t + 1) * BK, false);  // in flight during the BK steps of tiles t
    multiply_tiles(0);
    store_tiles(1);  // last read during tiles t-1, before the barrier that ended them
    __syncthreads();  // tiles t+1 are complete, and tiles t read, before anyone goes on
    load_tiles((t + 2) * BK, false);
    multiply_tiles(1);
    store_tiles(0);
    __syncthreads();
  }
  for (; t < numTiles; ++t) {  // the rest: edge blocks, a last partial tile, misaligned operands
    const bool more = t + 1 < numTiles;
    if (more) load_tiles((t + 1) * BK, true);
    if (t % 2 == 0) multiply_tiles(0); else multiply_tiles(1);  // constant buffers here too (*)
    if (more) {  // (the same for every thread: the barrier is reached by all or none)
      store_tiles(1 - t % 2);
      __syncthreads();
    }
  }
  // acc[i][j] belongs to row rowBase + (i/4)*4*LANE_ROWS + i%4 of the block tile and to column
  // colBase + (j/4)*4*LANE_COLS + j%4; C is updated 4 columns at a time.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + rowBase + (i / 4) * 4 * LANE_ROWS + i % 4;
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const int col = blockCol + colBase + g * 4 * LANE_COLS;
      float* p = &C[row * N + col];
      if (alignedC && col + 4 <= N) {
        float4 v = beta == 0.0f ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : *reinterpret_cast<const float4*>(p);
        v.x = alpha * acc[i][4 * g + 0] + beta * v.x;
        v.y = alpha * acc[i][4 * g + 1] + beta * v.y;
        v.z = alpha * acc[i][4 * g + 2] + beta * v.z;
        v.w = alpha * acc[i][4 * g + 3] + beta * v.w;
        *reinterpret_cast<float4*>(p) = v;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < N) p[j] = alpha * acc[i][4 * g + j] + beta * (beta == 0.0f ? 0.0f : p[j]);
      }
    }
  }
}

// Stage 09, variant: a multi-stage pipeline of asynchronous copies.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 09_double_buffering: the tiles travel from global to shared memory by
// asynchronous copies (cp.async, sm_80 and later, through <cuda_pipeline.h>), and shared memory
// holds STAGES tiles of A and of B instead of 2.
// - __pipeline_memcpy_async(dst, src, bytes, zfill) starts a copy of 4, 8 or 16 bytes and
//   returns at once: no registers hold the tiles in flight, and nothing waits for global memory
//   until __pipeline_wait_prior(n), which returns when all but the n most recent groups of copies
//   (one __pipeline_commit each) have landed. Its zfill bytes are written as zeros and not read:
//   that pads the edge tiles.
// - So several tiles can be on their way at once: while the block computes on tile t, the copies
//   of tiles t+1 .. t+STAGES-1 are in flight, STAGES-1 tiles of memory latency to hide instead of
//   one. The loop keeps 09_double_buffering's shape and its one barrier per tile: at the last
//   step of tile t each thread waits for its copies of tile t+1, the barrier makes them everyone's,
//   and the stage of tile t, whose last values are already in registers, is refilled with tile
//   t+STAGES.
// - A copy moves bytes unchanged, so A can no longer be transposed in registers on the way. It is
//   copied 4 bytes at a time, each float to its transposed place: a warp's 32 copies read 4 rows
//   of 8 floats (BK = 8), 32-byte pieces of A, and write As[c][r] for 8 values of c and 4 of r.
//   With rows of BM floats those 32 words would fall in 4 banks; rows of BM+4 (PAD) put word
//   (c, r) in bank 4c + r, all different. The pad keeps rows 16-byte aligned for the reads.
//   B is copied 16 bytes at a time where its rows allow it (N % 4 == 0), else 4.
// - As in 07 to 09_double_buffering, an interior block's full tiles need no checks: their copies
//   are bare __pipeline_memcpy_async calls (one instruction each, LDGSTS), where a checked copy
//   tests its row and column and chooses between a copy and a zero fill. The loop that starts the
//   copies of tile t+STAGES without checks runs while that tile is a full tile of an interior
//   block; edge blocks, the last tiles and rows of B that are not 16-byte aligned take the
//   checked copies. (A is copied 4 bytes at a time: its alignment does not matter.) Like
//   09_double_buffering's, the unchecked loop does STAGES tiles a pass, so that each tile's stage
//   is a constant: for 128 x 128 x 8 with 8 x 8 results, 581 instructions a tile, 512 of them
//   FFMAs (604 with the stage computed per tile; 709 with every copy checked; NVRTC 12.9, sm_90).
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN) staged in shared memory
//   WM, WN  rows and columns of a warp's tile (BM % WM == 0, BN % WN == 0)
//   TM, TN  rows and columns of a thread's results, multiples of 4; (WM/TM) * (WN/TN) == 32, WM/TM even
//   STAGES  tiles of A and of B in shared memory, at least 2 (STAGES-1 in flight while one is used)
//   MIN_BLOCKS  blocks per SM the compiler must leave registers for (1: no limit beyond 255)
// The block has (BM/WM) * (BN/WN) warps, BM*BN/(TM*TN) threads (at most 1024); BK is even, and
// both tiles are a whole number of passes of the block: (BM*BK) % threads == 0 (floats of A) and
// (BK*BN/4) % threads == 0 (runs of 4 of B). Shared memory: STAGES*(BM+PAD+BN)*BK floats.
// Preconditions: sm_80 or later. Otherwise none (edge tiles are zero-filled; every copy and
// access outside the unchecked loop is bounds-checked; the 16-byte copies and accesses are taken
// only where aligned: with CuPy's 256-byte aligned arrays, wherever N % 4 == 0).
// Launch: block (BM*BN/(TM*TN)), grid (ceil(N / BN), ceil(M / BM)).

#include <cuda_pipeline.h>

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int STAGES, int MIN_BLOCKS>
__global__ void __launch_bounds__(BM * BN / TM / TN, MIN_BLOCKS)
    sgemm_async_copy(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int NUM_THREADS = BM * BN / TM / TN;
  constexpr int PAD = 4;  // floats after each row of As: conflict-free transposing copies
  constexpr int WARP_COLS = BN / WN;                       // the warps' grid over the block tile
  constexpr int LANE_ROWS = WM / TM, LANE_COLS = WN / TN;  // the lanes' grid over a warp tile
  static_assert(BM >= 1 && BN >= 1 && BK >= 1 && TM >= 1 && TN >= 1, "tile sizes are at least 1");
  static_assert(MIN_BLOCKS >= 1, "at least one block fits on an SM: MIN_BLOCKS >= 1");
  static_assert(STAGES >= 2, "one stage is computed on while the next ones load: STAGES >= 2");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "a thread's rows and columns come in runs of 4");
  static_assert(BK % 2 == 0, "the values of steps k and k+1 alternate, tile after tile: BK is even");
  static_assert(BM % WM == 0 && BN % WN == 0, "the block tile splits into whole warp tiles");
  static_assert(WM % TM == 0 && WN % TN == 0, "a warp tile splits into whole thread tiles");
  static_assert(LANE_ROWS * LANE_COLS == 32, "a warp tile holds 32 thread tiles: (WM/TM) * (WN/TN) == 32");
  static_assert(LANE_ROWS % 2 == 0, "lanes pair up in rows of the warp tile: WM/TM is even");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 1024 threads: BM*BN/(TM*TN) <= 1024");
  static_assert((BM * BK) % NUM_THREADS == 0, "the block copies the A tile in whole passes of floats");
  static_assert((BK * BN / 4) % NUM_THREADS == 0, "the block copies the B tile in whole passes of runs of 4");
  static_assert(STAGES * (BM + PAD + BN) * BK * sizeof(float) <= 48 * 1024,
                "static shared memory is at most 48 KiB");
  __shared__ __align__(16) float As[STAGES][BK][BM + PAD];  // (BM, BK) tiles of A, transposed: As[s][k][m]
  __shared__ __align__(16) float Bs[STAGES][BK][BN];        // (BK, BN) tiles of B
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
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  // In an interior block (its tiles inside A and B, B's runs aligned) the tiles t < numUnchecked,
  // all but a last partial one, need no checks. Elsewhere numUnchecked = 0: every tile is checked.
  const bool interior = blockRow + BM <= M && blockCol + BN <= N && alignedB;
  const int numTiles = (K + BK - 1) / BK, numUnchecked = interior ? K / BK : 0;
  float acc[TM][TN] = {};    // (TM, TN) results in registers
  float a[2][TM], b[2][TN];  // the thread's values of A and of B for steps k and k+1

  // Starts this thread's copies of the tiles at depth k0 into stage s, in passes of NUM_THREADS
  // (consecutive threads take consecutive elements or runs along a row: coalesced reads).
  // checked == false: bare copies. Otherwise a copy past an edge reads nothing (zfill = its size)
  // from a valid address, and writes zeros. Each call passes a constant, and the compiler,
  // inlining the lambda, keeps only that call's branch: no test is left in the unchecked loop.
  auto copy_tiles = [&](int s, int k0, bool checked) {
#pragma unroll
    for (int pass = 0; pass < BM * BK / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / BK, c = e % BK;  // A's (r, c) of the tile, to As[s][c][r]
      const int row = blockRow + r, col = k0 + c;
      if (!checked) {
        __pipeline_memcpy_async(&As[s][c][r], &A[row * K + col], 4);
      } else {
        const bool in = row < M && col < K;
        __pipeline_memcpy_async(&As[s][c][r], in ? &A[row * K + col] : A, 4, in ? 0 : 4);
      }
    }
#pragma unroll
    for (int pass = 0; pass < BK * BN / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / (BN / 4), c = e % (BN / 4) * 4;  // B's (r, c .. c+3) of the tile
      const int row = k0 + r, col = blockCol + c;
      if (!checked) {
        __pipeline_memcpy_async(&Bs[s][r][c], &B[row * N + col], 16);
      } else if (alignedB) {  // col < N implies col + 3 < N
        const bool in = row < K && col < N;
        __pipeline_memcpy_async(&Bs[s][r][c], in ? &B[row * N + col] : B, 16, in ? 0 : 16);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = row < K && col + j < N;
          __pipeline_memcpy_async(&Bs[s][r][c + j], in ? &B[row * N + col + j] : B, 4, in ? 0 : 4);
        }
      }
    }
  };
  // Stage s, step k -> the values a[f], b[f]: TM/4 + TN/4 shared loads of 16 bytes.
  auto load_values = [&](int s, int k, int f) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&As[s][k][rowBase + g * 4 * LANE_ROWS]);
      a[f][4 * g + 0] = v.x; a[f][4 * g + 1] = v.y; a[f][4 * g + 2] = v.z; a[f][4 * g + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][colBase + g * 4 * LANE_COLS]);
      b[f][4 * g + 0] = v.x; b[f][4 * g + 1] = v.y; b[f][4 * g + 2] = v.z; b[f][4 * g + 3] = v.w;
    }
  };

  // The BK steps of tile t, in stage s (t % STAGES), whose step 0 values are in a[0], b[0]. With
  // `more`, tile t+1 is then made everyone's and its step 0 values read into a[0], b[0], and the
  // copies of tile t+STAGES (if any) are started into stage s, tile t's.
  auto multiply_tiles = [&](int t, int s, bool more, bool checked) {
    const int sNext = s + 1 < STAGES ? s + 1 : 0;  // the stage of tile t+1
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_values(s, k + 1, (k + 1) % 2);
      } else if (more) {
        // STAGES + t groups are committed, tile t+1 is group t+1: all but the last STAGES-2.
        __pipeline_wait_prior(STAGES - 2);
        __syncthreads();  // tile t+1 is everyone's, and everyone has read stage s for the last time
        if (!checked) copy_tiles(s, (t + STAGES) * BK, false);
        else if (t + STAGES < numTiles) copy_tiles(s, (t + STAGES) * BK, true);
        __pipeline_commit();
        load_values(sNext, 0, 0);  // step 0 of tile t+1 (BK is even: slot (k+1)%2 == 0)
      }
      // TM * TN multiply-adds from registers, while the loads above are in flight.
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[k % 2][i] * b[k % 2][j];
    }
  };

  // Tiles 0 .. STAGES-1 go to stages 0 .. STAGES-1, one group of copies each. Every group is
  // committed, empty or not, so that "the n most recent groups" always means the same tiles.
  for (int p = 0; p < STAGES; ++p) {
    if (p < numUnchecked) copy_tiles(p, p * BK, false);
    else if (p < numTiles) copy_tiles(p, p * BK, true);
    __pipeline_commit();
  }
  __pipeline_wait_prior(STAGES - 1);  // this thread's copies of tile 0 have landed
  __syncthreads();                    // and everyone's
  load_values(0, 0, 0);
  int t = 0;
  // STAGES tiles a pass, t a multiple of STAGES, so that the stage of tile t+j is the constant j.
  // The tiles whose copies the pass starts, t+STAGES .. t+2*STAGES-1, are full tiles of an
  // interior block: no checks.
  for (; t + 2 * STAGES <= numUnchecked; t += STAGES) {
#pragma unroll
    for (int j = 0; j < STAGES; ++j) multiply_tiles(t + j, j, true, false);
  }
  for (; t < numTiles; ++t)  // the rest: edge blocks, the last tiles, B's rows not 16-byte aligned
    multiply_tiles(t, t % STAGES, t + 1 < numTiles, true);
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

// Stage 10, second step: the tensor cores' warp instruction itself, mma.sync (TF32).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 10_tensor_cores: in place of wmma, the kernel issues the tensor cores' warp
// instruction of PTX, mma.sync.aligned.m16n8k8 (kernels/mma_sync.cuh), whose fragment layout PTX
// documents, so the kernel moves the fragments itself. (On sm_90, NVRTC 12.9 compiles wmma's TF32
// mma_sync to HMMA.1684 instructions and m16n8k8 to HMMA.1688: the same products in half as many
// tensor-core instructions. The SASS is in results/ncu_h200_2026-11-27_steps_09_10/.)
// - wmma leaves unspecified which lane holds which element of a fragment, so its loads and
//   stores are warp-collective calls. For mma.sync's 16 x 8 x 8 TF32 product PTX specifies it:
//   lane 4g + t (g = lane / 4, t = lane % 4) holds A (g, t), (g+8, t), (g, t+4), (g+8, t+4);
//   B (t, g), (t+4, g); C and D (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1). A warp holds its
//   WM x WN tile as (WM/16) x (WN/8) accumulators of 16 x 8, 4 floats per lane each (as many
//   registers as wmma's 16 x 16 fragments), and per step of 8 along K issues one mma.sync per
//   pair of WM/16 fragments of A and WN/8 of B.
// - Each lane reads its own fragment elements from the shared tiles with plain 4-byte loads, 4
//   per fragment of A and 2 per fragment of B. The pads of 10_tensor_cores keep every such load
//   free of bank conflicts, one wavefront each (the fewest a warp's 4-byte load takes): lane
//   4g + t reads A's word g * (BK+4) + t (plus the fragment's corner), and BK + 4 = 4 (mod 8)
//   puts the 8 rows g on 8 different runs of 4 banks; it reads B's word t * (BN+8) + g, and
//   BN + 8 = 8 or 24 (mod 32) puts the 4 rows t on 4 different runs of 8 banks.
// - The results go from the accumulators straight to C: each lane applies alpha and beta to its
//   pairs of elements (g, 2t .. 2t+1) and (g+8, 2t .. 2t+1) of each accumulator, with bounds
//   checks, one 8-byte store per pair where aligned and inside C. The 16 x 16 staging tile per
//   warp, and its __syncwarp, are gone.
// - The rest is 10_tensor_cores: the TF32 inputs and ROUND (to_tf32, cvt.rna.tf32.f32, in place
//   of wmma::__float_to_tf32), the tiles, their pads and asynchronous copies, STAGES tiles in flight.
//   ROUND = 1 rounds every input to nearest in each fragment element, after it is loaded (a warp
//   converts every element it loads, and each A and B value is loaded by several warps); ROUND = 2
//   rounds each tile once, in shared memory, as it lands (each thread its own copies); ROUND = 0
//   leaves the low 13 bits, which the tensor cores ignore.
// - Shared memory: STAGES * (BM * (BK+4) + BK * (BN+8)) floats, more than the 48 KiB a static
//   __shared__ array may have, so it is dynamic shared memory (extern __shared__), the size given
//   at launch.
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN), a multiple of 8
//   WM, WN  rows and columns of a warp's tile, multiples of 16 (BM % WM == 0, BN % WN == 0)
//   STAGES  tiles of A and of B in shared memory, at least 2 (STAGES-1 in flight while one is used)
//   ROUND   0: let the tensor cores drop the low bits; round the inputs to the nearest TF32
//           1: in the fragments, 2: in shared memory
// The block has (BM/WM) * (BN/WN) warps (at most 32); both tiles are a whole number of passes
// of the block in runs of 4: (BM*BK/4) % threads == 0 and (BK*BN/4) % threads == 0.
// Preconditions: sm_80 or later. Otherwise none (edge tiles are zero-filled; every copy outside
// the unchecked tiles is bounds-checked; the 16-byte copies and 8-byte stores are taken only where
// aligned: with CuPy's 256-byte aligned arrays, A's where K % 4 == 0, B's where N % 4 == 0 and
// C's where N % 2 == 0).
// Launch: block ((BM/WM) * (BN/WN) * 32), grid (ceil(N / BN), ceil(M / BM)), dynamic shared
// memory as above, in bytes.

#include <cuda_pipeline.h>

#include "mma_sync.cuh"

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int ROUND>
__global__ void __launch_bounds__(BM / WM * BN / WN * 32)
    sgemm_mma_sync(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int WARP_COLS = BN / WN, NUM_THREADS = BM / WM * WARP_COLS * 32;
  constexpr int FM = WM / 16, FN = WN / 8;  // a warp's 16 x 8 accumulators of C
  constexpr int LDA = BK + 4, LDB = BN + 8;  // padded rows, in floats
  static_assert(BM >= 1 && BN >= 1 && WM >= 16 && WN >= 16, "warp tiles are at least 16 x 16");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp tile is whole 16 x 16 fragments: WM, WN multiples of 16");
  static_assert(BM % WM == 0 && BN % WN == 0, "the block tile splits into whole warp tiles");
  static_assert(BK % 8 == 0, "a TF32 mma_sync takes 8 steps of K: BK is a multiple of 8");
  static_assert(STAGES >= 2, "one stage is computed on while the next ones load: STAGES >= 2");
  static_assert(ROUND >= 0 && ROUND <= 2, "ROUND is 0, 1 or 2");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 32 warps: (BM/WM) * (BN/WN) <= 32");
  static_assert((BM * BK / 4) % NUM_THREADS == 0, "the block copies the A tile in whole passes of runs of 4");
  static_assert((BK * BN / 4) % NUM_THREADS == 0, "the block copies the B tile in whole passes of runs of 4");
  extern __shared__ __align__(128) float smem[];
  float* const As = smem;                        // STAGES tiles of A: As[s * BM * LDA + r * LDA + k]
  float* const Bs = As + STAGES * BM * LDA;      // STAGES tiles of B: Bs[s * BK * LDB + k * LDB + c]
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / WARP_COLS, warpCol = warp % WARP_COLS;
  const int g = lane / 4, t4 = lane % 4;  // lane = 4g + t4: its elements of every fragment (mma_sync.cuh)
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // Whether a run of 4 floats starting at a multiple of 4 is 16-byte aligned (A, B), and a pair
  // of C's at an even column 8-byte aligned.
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
  // In an interior block the tiles t < numUnchecked, all but a last partial one, need no checks.
  const bool interior = blockRow + BM <= M && blockCol + BN <= N && alignedA && alignedB;
  const int numTiles = (K + BK - 1) / BK, numUnchecked = interior ? K / BK : 0;

  // Starts this thread's copies of the tiles at depth k0 into stage s, runs of 4 floats along
  // rows (consecutive threads, consecutive runs: coalesced reads). checked == false: bare
  // 16-byte copies. Otherwise a copy past an edge reads nothing (zfill) and writes zeros.
  auto copy_tiles = [&](int s, int k0, bool checked) {
    float* as = As + s * BM * LDA;
    float* bs = Bs + s * BK * LDB;
#pragma unroll
    for (int pass = 0; pass < BM * BK / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / (BK / 4), c = e % (BK / 4) * 4;  // A's (r, c .. c+3) of the tile
      const int row = blockRow + r, col = k0 + c;
      if (!checked) {
        __pipeline_memcpy_async(&as[r * LDA + c], &A[row * K + col], 16);
      } else if (alignedA) {  // col < K implies col + 3 < K
        const bool in = row < M && col < K;
        __pipeline_memcpy_async(&as[r * LDA + c], in ? &A[row * K + col] : A, 16, in ? 0 : 16);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = row < M && col + j < K;
          __pipeline_memcpy_async(&as[r * LDA + c + j], in ? &A[row * K + col + j] : A, 4, in ? 0 : 4);
        }
      }
    }
#pragma unroll
    for (int pass = 0; pass < BK * BN / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / (BN / 4), c = e % (BN / 4) * 4;  // B's (r, c .. c+3) of the tile
      const int row = k0 + r, col = blockCol + c;
      if (!checked) {
        __pipeline_memcpy_async(&bs[r * LDB + c], &B[row * N + col], 16);
      } else if (alignedB) {
        const bool in = row < K && col < N;
        __pipeline_memcpy_async(&bs[r * LDB + c], in ? &B[row * N + col] : B, 16, in ? 0 : 16);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = row < K && col + j < N;
          __pipeline_memcpy_async(&bs[r * LDB + c + j], in ? &B[row * N + col + j] : B, 4, in ? 0 : 4);
        }
      }
    }
  };
  // ROUND == 2: each thread rounds to TF32 the runs of 4 it copied into stage s (they have landed,
  // and no other thread touches them before the barrier), so every input is rounded once per
  // block instead of once per warp that loads it, and the fragments stay as loaded.
  auto round_tiles = [&](int s) {
    float* as = As + s * BM * LDA;
    float* bs = Bs + s * BK * LDB;
#pragma unroll
    for (int pass = 0; pass < BM * BK / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      float* p = &as[e / (BK / 4) * LDA + e % (BK / 4) * 4];
#pragma unroll
      for (int j = 0; j < 4; ++j) p[j] = to_tf32(p[j]);
    }
#pragma unroll
    for (int pass = 0; pass < BK * BN / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      float* p = &bs[e / (BN / 4) * LDB + e % (BN / 4) * 4];
#pragma unroll
      for (int j = 0; j < 4; ++j) p[j] = to_tf32(p[j]);
    }
  };
  auto start_tile = [&](int t) {  // tile t into stage t % STAGES, if it exists
    if (t < numUnchecked) copy_tiles(t % STAGES, t * BK, false);
    else if (t < numTiles) copy_tiles(t % STAGES, t * BK, true);
  };

  float acc[FM][FN][4] = {};  // this lane's elements of the warp's accumulators

  // Tiles 0 .. STAGES-2 go first, one group of copies each. Every group is committed, empty or
  // not, so that "all but the STAGES-2 most recent groups" always includes tile t.
  for (int p = 0; p < STAGES - 1; ++p) {
    start_tile(p);
    __pipeline_commit();
  }
  for (int t = 0; t < numTiles; ++t) {
    __pipeline_wait_prior(STAGES - 2);  // this thread's copies of tile t have landed
    if (ROUND == 2) round_tiles(t % STAGES);
    __syncthreads();  // everyone's have, and everyone has finished tile t-1, whose stage is refilled now
    start_tile(t + STAGES - 1);
    __pipeline_commit();
    const float* as = As + (t % STAGES) * BM * LDA + warpRow * WM * LDA;  // the warp's rows of A
    const float* bs = Bs + (t % STAGES) * BK * LDB + warpCol * WN;        // the warp's columns of B
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      float a[FM][4], b[FN][2];  // this lane's elements of the step's fragments
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        const float* p = as + (i * 16 + g) * LDA + kk + t4;  // A(g, t4) of fragment i
        a[i][0] = p[0], a[i][1] = p[8 * LDA], a[i][2] = p[4], a[i][3] = p[8 * LDA + 4];
        if (ROUND == 1) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(a[i][e]);
        }
      }
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        const float* p = bs + (kk + t4) * LDB + j * 8 + g;  // B(t4, g) of fragment j
        b[j][0] = p[0], b[j][1] = p[4 * LDB];
        if (ROUND == 1) {
#pragma unroll
          for (int e = 0; e < 2; ++e) b[j][e] = to_tf32(b[j][e]);
        }
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) mma_m16n8k8_tf32(acc[i][j], a[i], b[j]);
    }
  }

  // Accumulator (i, j) holds the fragment's D(g, 2t4 .. 2t4+1) in acc[i][j][0..1] and D(g+8, ..)
  // in acc[i][j][2..3]: each pair goes to C from the registers, one 8-byte store where aligned.
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const int col = blockCol + warpCol * WN + j * 8 + 2 * t4;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = blockRow + warpRow * WM + i * 16 + g + 8 * h;
        const float d0 = acc[i][j][2 * h], d1 = acc[i][j][2 * h + 1];  // columns col and col + 1
        if (row >= M || col >= N) continue;
        float* p = &C[row * N + col];
        if (alignedC && col + 1 < N) {
          float2 v = beta == 0.0f ? make_float2(0.0f, 0.0f) : *reinterpret_cast<const float2*>(p);
          v.x = alpha * d0 + beta * v.x;
          v.y = alpha * d1 + beta * v.y;
          *reinterpret_cast<float2*>(p) = v;
        } else {
          p[0] = alpha * d0 + beta * (beta == 0.0f ? 0.0f : p[0]);
          if (col + 1 < N) p[1] = alpha * d1 + beta * (beta == 0.0f ? 0.0f : p[1]);
        }
      }
    }
  }
}

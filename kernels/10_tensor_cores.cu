// Stage 10: tensor cores (TF32).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 09_async_copy: the multiply-adds leave the FP32 lanes for the tensor cores.
// - A warp no longer splits its WM x WN tile into 32 thread tiles. It holds the tile as
//   (WM/16) x (WN/16) accumulator fragments of 16 x 16 (nvcuda::wmma, <mma.h>), and per step of 8
//   along K it loads WM/16 fragments of A (16 x 8) and WN/16 of B (8 x 16) from shared memory and
//   issues one mma_sync per pair: 16 x 16 x 8 multiply-adds each, done by the tensor cores. Which
//   lane holds which element of a fragment is the hardware's business (CUDA leaves it
//   unspecified): load_matrix_sync, mma_sync and store_matrix_sync are warp-collective.
// - The inputs are TF32: FP32's sign and 8 exponent bits with 10 of its 23 mantissa bits. The
//   products of two TF32 values are exact in FP32 and are accumulated in FP32; the loss is in
//   the inputs, a relative error up to 2^-11 each (2^-10 if the low bits are just dropped).
//   ROUND = 1 rounds every input to nearest with wmma::__float_to_tf32 in each fragment, after
//   it is loaded (a warp converts every element it loads, and each A and B value is loaded by
//   several warps); ROUND = 2 rounds each tile once, in shared memory, as it lands (each thread
//   its own copies); ROUND = 0 leaves the low 13 bits, which the tensor cores ignore.
// - The tiles are not transposed any more: A's tile is stored row-major (As[r][k], rows of BK+4
//   floats) and B's as before (Bs[k][c], rows of BN+8), both copied 16 bytes at a time by
//   __pipeline_memcpy_async as in 09_async_copy, STAGES tiles in flight. The pads keep each
//   fragment's corner 32-byte aligned (wmma's rule) and spread a fragment load over the banks.
// - The results leave the fragments through a 16 x 16 staging tile per warp in shared memory
//   (store_matrix_sync), from which each lane applies alpha and beta to 8 elements of C with
//   bounds checks: wmma stores whole 16 x 16 tiles, which would run past the edges of C.
// - Shared memory: STAGES * (BM * (BK+4) + BK * (BN+8)) + warps * 16 * 20 floats, more than the
//   48 KiB a static __shared__ array may have, so it is dynamic shared memory (extern __shared__),
//   the size given at launch.
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
// the unchecked tiles is bounds-checked; the 16-byte copies and stores are taken only where
// aligned: with CuPy's 256-byte aligned arrays, A's where K % 4 == 0 and B's and C's where N % 4 == 0).
// Launch: block ((BM/WM) * (BN/WN) * 32), grid (ceil(N / BN), ceil(M / BM)), dynamic shared
// memory as above, in bytes.

#include <cuda_pipeline.h>
#include <mma.h>

using namespace nvcuda;

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int ROUND>
__global__ void __launch_bounds__(BM / WM * BN / WN * 32)
    sgemm_tensor_cores(int M, int N, int K, float alpha, const float* __restrict__ A,
                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int WARP_COLS = BN / WN, NUM_THREADS = BM / WM * WARP_COLS * 32;
  constexpr int FM = WM / 16, FN = WN / 16;  // a warp's fragments of C
  constexpr int LDA = BK + 4, LDB = BN + 8, LDC = 16 + 4;  // padded rows, in floats
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
  float* const Cs = Bs + STAGES * BK * LDB;      // one 16 x 16 staging tile per warp: Cs[warp * 16 * LDC]
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / WARP_COLS, warpCol = warp % WARP_COLS;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // Whether a run of 4 floats starting at a multiple of 4 is 16-byte aligned, per matrix.
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
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
      for (int j = 0; j < 4; ++j) p[j] = wmma::__float_to_tf32(p[j]);
    }
#pragma unroll
    for (int pass = 0; pass < BK * BN / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      float* p = &bs[e / (BN / 4) * LDB + e % (BN / 4) * 4];
#pragma unroll
      for (int j = 0; j < 4; ++j) p[j] = wmma::__float_to_tf32(p[j]);
    }
  };
  auto start_tile = [&](int t) {  // tile t into stage t % STAGES, if it exists
    if (t < numUnchecked) copy_tiles(t % STAGES, t * BK, false);
    else if (t < numTiles) copy_tiles(t % STAGES, t * BK, true);
  };

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

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
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        wmma::load_matrix_sync(a[i], as + i * 16 * LDA + kk, LDA);
        if (ROUND == 1) {
#pragma unroll
          for (int e = 0; e < a[i].num_elements; ++e) a[i].x[e] = wmma::__float_to_tf32(a[i].x[e]);
        }
      }
#pragma unroll
      for (int j = 0; j < FN; ++j) {
        wmma::load_matrix_sync(b[j], bs + kk * LDB + j * 16, LDB);
        if (ROUND == 1) {
#pragma unroll
          for (int e = 0; e < b[j].num_elements; ++e) b[j].x[e] = wmma::__float_to_tf32(b[j].x[e]);
        }
      }
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

  // Each fragment goes through the warp's staging tile: lane l takes row l/2 of it, columns
  // (l%2)*8 .. +7, and updates those elements of C, 4 at a time where aligned and inside C.
  float* cs = Cs + warp * 16 * LDC;
  const int r = lane / 2, c0 = lane % 2 * 8;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(cs, acc[i][j], LDC, wmma::mem_row_major);
      __syncwarp();  // the whole tile is in the staging tile
      const int row = blockRow + warpRow * WM + i * 16 + r;
      const int col = blockCol + warpCol * WN + j * 16 + c0;
      if (row < M) {
#pragma unroll
        for (int g = 0; g < 2; ++g) {
          const float* s = cs + r * LDC + c0 + 4 * g;
          float* p = &C[row * N + col + 4 * g];
          if (alignedC && col + 4 * g + 4 <= N) {
            float4 v = beta == 0.0f ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : *reinterpret_cast<const float4*>(p);
            v.x = alpha * s[0] + beta * v.x;
            v.y = alpha * s[1] + beta * v.y;
            v.z = alpha * s[2] + beta * v.z;
            v.w = alpha * s[3] + beta * v.w;
            *reinterpret_cast<float4*>(p) = v;
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
              if (col + 4 * g + q < N) p[q] = alpha * s[q] + beta * (beta == 0.0f ? 0.0f : p[q]);
          }
        }
      }
      __syncwarp();  // every lane has read the staging tile before the next fragment overwrites it
    }
  }
}

// Stage 10, third step: Hopper's warpgroup MMA (wgmma), TF32.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 10_mma_sync: the multiply-adds go to the tensor cores through wgmma
// (sm_90a: H100, H200), which Hopper added beside mma.sync, and which is how cuBLAS feeds them.
// - mma.sync is a warp's 16 x 8 x 8 product, and the warp waits for it. wgmma is issued by a
//   warpgroup (4 warps, 128 threads) and is 64 x BM x 8 here (up to 64 x 256 x 8: 32 to 128
//   times larger), and asynchronous: the warpgroup issues the products of a whole tile, then
//   goes on to its next loads while the tensor cores work, and waits only when it must reuse
//   what they read (wgmma.cuh explains the four instructions).
// - One operand comes from registers and one straight from shared memory, through a descriptor,
//   with no load instructions. In TF32 the shared-memory operand must be stored "K-major", its
//   rows running along K: A's rows are, B's (row k, columns n) are not. So the kernel computes
//   C^T = B^T A^T: wgmma's 64 rows are 64 columns of C, its register operand is B's tile read
//   transposed out of shared memory (each warp's 16 rows in the layout of mma.sync's A fragment,
//   4 values per thread per step of 8 along K), its shared-memory operand is A's tile as it lies
//   in A, and its 64 x BM result is C's tile transposed: the accumulators (each warp's in the
//   layout of mma.sync's, repeated every 8 columns) go from registers to C as in 10_mma_sync,
//   but column by column.
// - A's tiles are rows of BK = 32 floats, 128 bytes, stored in wgmma's 128-byte swizzle (the
//   16-byte run c of row r goes to run c ^ (r % 8)): the tensor cores read 8 rows at a time, and
//   the swizzle puts those 8 rows' runs on different banks. B's tiles keep 09's layout, rows of
//   BN + 8 floats: the 8 extra floats put the 32 lanes' loads of a fragment on 32 banks.
// - The tiles come as in 10_mma_sync, by asynchronous copies, STAGES tiles in flight. A stage
//   is refilled only after both warpgroups' products that read it have completed: each
//   warpgroup waits for its products of two tiles ago (wgmma_wait_group<1>) before the barrier
//   that starts a tile, and the copies into the stage of two tiles ago are issued after it. So
//   the products of tile t run while the block waits at the barrier of tile t+1, reads its
//   fragments and issues them. Their A registers must survive until then: two sets, used by
//   even and odd tiles, which is why the loop does two tiles a pass (register arrays are only
//   registers when every index is a constant).
// - Before that barrier each thread also calls fence_proxy_async_shared: its copies landed
//   through ordinary shared-memory writes, the tensor cores read through another path.
// - TF32: the tensor cores use the top 10 mantissa bits of each input (the errors measured agree
//   with the other 13 being dropped; the CUDA guide asks for __float_to_tf32 and promises nothing else).
//   ROUND = 1 rounds every input to the nearest TF32, as cuBLAS does: B's values as they go
//   into fragments, and A's tile, which the tensor cores read as it lies, in shared memory, each
//   thread its own copies. It rounds the next tile's, right after issuing this tile's products,
//   so that the rounding runs while the tensor cores work. Still, on an H100 it is 22 % slower
//   than ROUND = 0: a read and a write of A's tile more in shared memory, which the tensor cores
//   are reading too (rounding a tile just before its own products, between its copies' arrival
//   and the barrier, was 2.4 times slower). ROUND = 0 lets the bits drop: 2.65 times the RMS
//   error on zero-mean data, far more on same-sign data, where truncation's errors add up (both
//   measured at 4096^3 on U[-1, 1), results/stage_10_h100_2026-11-24/).
// - The swizzle is computed from shared-memory addresses, so each stage's tile of A starts on a
//   1024-byte boundary: the kernel rounds the start of its dynamic shared memory up to one (an
//   H100 places it at 1024 in the shared window when the kernel has no static array, but not
//   always after one).
//
// Template parameters:
//   BM      rows of C per block, wgmma's N: 64, 128 or 256 (a multiple of 8 up to 256 in PTX;
//           wgmma.cuh spells out these three)
//   BN      columns of C per block, 64 per warpgroup: 64, 128, 192 or 256 (1 to 4 warpgroups)
//   STAGES  tiles of A and of B in shared memory, at least 3 (STAGES-2 in flight while one is
//           used and one more is still being read by the tensor cores)
//   ROUND   0: let the tensor cores drop the low bits; 1: round the inputs to the nearest TF32
// BK = 32. Shared memory: STAGES x (BM x 32 + 32 x (BN + 8)) floats, each stage rounded up to
// 1024 bytes, plus up to 1 KiB to align the first (dynamic shared memory, up to 227 KiB).
// Preconditions: an sm_90a GPU (H100, H200). Otherwise none: edge tiles are zero-filled and
// every copy outside the unchecked tiles is bounds-checked; the 16-byte copies are taken only
// where aligned (with CuPy's 256-byte aligned arrays, A's where K % 4 == 0, B's where N % 4 == 0).
// Launch: block (BN / 64 * 128), grid (ceil(N / BN), ceil(M / BM)), dynamic shared memory as above.

#include <cuda_pipeline.h>
#include <mma.h>  // nvcuda::wmma::__float_to_tf32, for ROUND = 1

#include "wgmma.cuh"

template <int BM, int BN, int STAGES, int ROUND>
__global__ void __launch_bounds__(BN / 64 * 128)
    sgemm_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int BK = 32;                          // one 128-byte swizzled row of A per row of the tile
  constexpr int NUM_THREADS = BN / 64 * 128;      // a warpgroup per 64 columns of C
  constexpr int LDB = BN + 8;                     // B's tile rows, in floats
  constexpr int A_FLOATS = BM * BK, B_FLOATS = BK * LDB;
  constexpr int STAGE_FLOATS = (A_FLOATS + B_FLOATS + 255) / 256 * 256;  // 1024-byte stages
  static_assert(BM == 64 || BM == 128 || BM == 256, "BM (wgmma's N) is 64, 128 or 256");
  static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "BN is 64 columns per warpgroup, 1 to 4 warpgroups");
  static_assert(STAGES >= 3, "STAGES >= 3: one tile in use, one still read by the tensor cores, one loading");
  static_assert(ROUND == 0 || ROUND == 1, "ROUND is 0 (drop the low bits) or 1 (round to nearest)");
  static_assert((BM * BK / 4) % NUM_THREADS == 0, "the block copies the A tile in whole passes of runs of 4");
  static_assert((BK * BN / 4) % NUM_THREADS == 0, "the block copies the B tile in whole passes of runs of 4");
  extern __shared__ __align__(128) float smem[];
  // Stage s: A's tile at tiles + s * STAGE_FLOATS (BM rows of 32 floats, swizzled), then B's.
  float* const tiles = smem + (1024 - static_cast<unsigned>(__cvta_generic_to_shared(smem)) % 1024) % 1024 / 4;
  const int tid = threadIdx.x;
  const int warpgroup = tid / 128, warp = tid / 32 % 4, lane = tid % 32;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool interior = blockRow + BM <= M && blockCol + BN <= N && alignedA && alignedB;
  const int numTiles = (K + BK - 1) / BK, numUnchecked = interior ? K / BK : 0;

  // Starts this thread's copies of the tiles at depth k0 into stage s: runs of 4 floats along
  // rows, consecutive threads on consecutive runs. checked == false: bare 16-byte copies.
  // Otherwise a copy past an edge reads nothing and writes zeros.
  auto copy_tiles = [&](int s, int k0, bool checked) {
    float* as = tiles + s * STAGE_FLOATS;
    float* bs = as + A_FLOATS;
#pragma unroll
    for (int pass = 0; pass < BM * BK / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / (BK / 4), c = e % (BK / 4);  // A's (r, 4c .. 4c+3) of the tile
      float* dst = &as[r * BK + (c ^ (r % 8)) * 4];  // the 128-byte swizzle
      const int row = blockRow + r, col = k0 + 4 * c;
      if (!checked) {
        __pipeline_memcpy_async(dst, &A[row * K + col], 16);
      } else if (alignedA) {  // col < K implies col + 3 < K
        const bool in = row < M && col < K;
        __pipeline_memcpy_async(dst, in ? &A[row * K + col] : A, 16, in ? 0 : 16);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = row < M && col + j < K;
          __pipeline_memcpy_async(dst + j, in ? &A[row * K + col + j] : A, 4, in ? 0 : 4);
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
  // ROUND == 1: rounds to TF32 the runs of A's tile this thread copied into stage s (landed).
  auto round_a_tile = [&](int s) {
    float* as = tiles + s * STAGE_FLOATS;
#pragma unroll
    for (int pass = 0; pass < BM * BK / 4 / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / (BK / 4), c = e % (BK / 4);
      float4* p = reinterpret_cast<float4*>(&as[r * BK + (c ^ (r % 8)) * 4]);
      float4 v = *p;
      v.x = nvcuda::wmma::__float_to_tf32(v.x), v.y = nvcuda::wmma::__float_to_tf32(v.y);
      v.z = nvcuda::wmma::__float_to_tf32(v.z), v.w = nvcuda::wmma::__float_to_tf32(v.w);
      *p = v;
    }
  };
  auto start_tile = [&](int t) {  // tile t into stage t % STAGES, if it exists
    if (t < numUnchecked) copy_tiles(t % STAGES, t * BK, false);
    else if (t < numTiles) copy_tiles(t % STAGES, t * BK, true);
  };

  float acc[BM / 2] = {};       // the warpgroup's 64 x BM tile of C^T, BM/2 values per thread
  float frag[2][BK / 8][4];     // B's fragments of an even and an odd tile: 4 steps of 8 along K
  // Which column of C each of wgmma's 64 rows is, is the kernel's choice. Rows g and g+8 of a
  // warp's 16 (lane 4g + t holds both, wgmma.cuh) are made columns n0 and n0 + 1, neighbours:
  // the lane reads each pair of its fragment in one 8-byte load, from row k = t or t + 4 of
  // B's tile, and writes its results to C two columns at a time.
  const int n0 = warpgroup * 64 + warp * 16 + 2 * (lane / 4), t4 = lane % 4;

  // Waits for tile t, reads its fragments into set f and issues its products (one group).
  auto multiply_tile = [&](int t, int f) {
    __pipeline_wait_prior(STAGES - 3);  // this thread's copies of tile t have landed
    wgmma_wait_group<1>();              // this warpgroup's products of tile t-2 have completed
    fence_proxy_async_shared();         // the copies (and roundings) are visible to the tensor cores
    __syncthreads();                    // everyone's copies landed; every product of tile t-2 is done
    start_tile(t + STAGES - 2);         // into the stage of tile t-2
    __pipeline_commit();
    const float* as = tiles + (t % STAGES) * STAGE_FLOATS;
    const float* bs = as + A_FLOATS;
#pragma unroll
    for (int s = 0; s < BK / 8; ++s) {
      const float2 lo = *reinterpret_cast<const float2*>(&bs[(8 * s + t4) * LDB + n0]);      // k = t
      const float2 hi = *reinterpret_cast<const float2*>(&bs[(8 * s + t4 + 4) * LDB + n0]);  // k = t + 4
      frag[f][s][0] = lo.x, frag[f][s][1] = lo.y, frag[f][s][2] = hi.x, frag[f][s][3] = hi.y;
      if (ROUND == 1) {
#pragma unroll
        for (int e = 0; e < 4; ++e) frag[f][s][e] = nvcuda::wmma::__float_to_tf32(frag[f][s][e]);
      }
    }
    wgmma_fence();  // the fragments are written before the tensor cores read them
#pragma unroll
    for (int s = 0; s < BK / 8; ++s) wgmma_m64k8_tf32<BM>(acc, frag[f][s], wgmma_desc_sw128(as + 8 * s));
    wgmma_commit_group();
    if (ROUND == 1 && t + 1 < numTiles) {  // A's tile t+1, while the tensor cores multiply tile t
      __pipeline_wait_prior(STAGES - 3);
      round_a_tile((t + 1) % STAGES);
    }
  };

  // Tiles 0 .. STAGES-3 go first, a group of copies each; every group is committed, empty or
  // not, so that "all but the STAGES-3 most recent groups" always includes tile t.
  for (int p = 0; p < STAGES - 2; ++p) {
    start_tile(p);
    __pipeline_commit();
  }
  if (ROUND == 1) {  // tile 0's A; each later tile's is rounded during the tile before it
    __pipeline_wait_prior(STAGES - 3);
    round_a_tile(0);
  }
  int t = 0;
  for (; t + 1 < numTiles; t += 2) {  // two tiles a pass: fragment sets 0 and 1 are constants
    multiply_tile(t, 0);
    multiply_tile(t + 1, 1);
  }
  if (t < numTiles) multiply_tile(t, 0);
  wgmma_wait_group<0>();  // every product has completed: the accumulators are final

  // acc[4j + i] is C^T's (16 warp + lane/4 + 8 (i/2), 8j + 2 (lane%4) + i%2) in the warpgroup's
  // tile: row 8j + 2 t4 + i%2 of the block's, column n0 + i/2 of C. Each row's pair of columns
  // is written as one 8-byte store where both lie inside C and are aligned. With beta != 0, C is
  // read a batch of C_BATCH rows of 8 at a time, all the batch's loads before its stores, so that
  // they are in flight together: loaded, used and stored one pair after another, each load waits
  // for the memory before the next starts (BM / 4 round trips to DRAM in a row).
  constexpr int C_BATCH = 8;
  const bool alignedC = N % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
  const int col = blockCol + n0;
#pragma unroll
  for (int j0 = 0; j0 < BM / 8; j0 += C_BATCH) {
    float2 old[C_BATCH][2];  // C's pairs of the batch (beta != 0)
    if (beta != 0.0f) {
#pragma unroll
      for (int jj = 0; jj < C_BATCH; ++jj) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int row = blockRow + 8 * (j0 + jj) + 2 * t4 + i;
          old[jj][i] = make_float2(0.0f, 0.0f);
          if (row >= M || col >= N) continue;
          const float* p = &C[row * N + col];
          if (alignedC && col + 1 < N) {
            old[jj][i] = *reinterpret_cast<const float2*>(p);
          } else {
            old[jj][i].x = p[0];
            if (col + 1 < N) old[jj][i].y = p[1];
          }
        }
      }
    }
#pragma unroll
    for (int jj = 0; jj < C_BATCH; ++jj) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int j = j0 + jj, row = blockRow + 8 * j + 2 * t4 + i;
        if (row >= M || col >= N) continue;
        const float2 c = beta == 0.0f ? make_float2(0.0f, 0.0f) : old[jj][i];  // C is not read if beta = 0
        const float v0 = alpha * acc[4 * j + i] + beta * c.x, v1 = alpha * acc[4 * j + 2 + i] + beta * c.y;
        float* p = &C[row * N + col];
        if (alignedC && col + 1 < N) {
          *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
          p[0] = v0;
          if (col + 1 < N) p[1] = v1;
        }
      }
    }
  }
}

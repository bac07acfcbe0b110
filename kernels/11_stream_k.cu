// Stage 11: stream-K, on stage 12's kernel (TF32 tensor cores, TMA, warp specialization; sm_90a).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 12_warp_specialized: how the blocks share the work.
// - 12's persistent blocks walk whole tiles: block b takes tiles b, b + G, b + 2G, ... of the G blocks'
//   grid. Where the tiles are few (512 x 512 x 16384: 8 tiles of 256 x 128 for 132 SMs) or their last
//   wave is part-empty, SMs idle while a few blocks multiply long K loops.
// - Stream-K (Osama et al., PPoPP 2023; CUTLASS's stream-K tile scheduler) deals out multiply-add
//   iterations instead of tiles. An iteration is one k-tile (32 deep) of one tile of C. The first
//   tiles, whole waves of them, are still walked whole, as in 12 (data-parallel); the last skTiles
//   tiles (stream_k_tiles(): the part-empty last wave, SK_WAVES - 1 whole waves more) give
//   T = skTiles x numK iterations, and block b takes the run [b T / G, (b + 1) T / G): every block the
//   same work, give or take one iteration. A run crosses tile boundaries: its pieces are a tail of one
//   tile, whole tiles, the head of another.
// - A piece that is a whole tile is written to C as before. A part of a tile is written, raw (no alpha,
//   no beta), to one of the block's two slots in `partial` (2 x G tiles of BM x BN floats): slot 0 for
//   the block's first piece, 1 for its last. A second kernel, fixup_stream_k, then adds the parts of each
//   shared tile in the order of the blocks (b = first, first + 1, ...) and writes alpha * sum + beta * C:
//   the same bits at every run, as 11_split_k's reduction. (CUTLASS also offers an in-kernel fix-up, in
//   which the block that started a tile waits for the others' parts: it saves the second launch but
//   needs every block of the grid on the GPU at once; the emulator runs a few blocks at a time.)
// - The producer and the consumers walk the same pieces (Pieces), so the ring's stages and
//   phases run on across pieces as they ran across tiles.
// - G is the host's choice: one block per SM, or, where every tile is shared (fewer tiles than SMs),
//   S blocks per tile (G = tiles x S, StreamKConfig.SLICES): then T / G = numK / S and every run lies
//   in one tile, run j of each tile over the same k-tiles [j numK / S, (j + 1) numK / S): split-K, by
//   the same code. The tiles that share rows of A (or columns of B) then read them at the same time.
// SK_WAVES = 0 is 12's schedule (every tile whole, no workspace, no second kernel).
//
// Template parameters:
//   BM         rows of C per tile, wgmma's N: 128 or 256
//   CONSUMERS  multiplying warpgroups, each 64 columns of C: BN = 64 x CONSUMERS (1 or 2)
//   STAGES     tiles of A and B in the shared-memory ring (2 or more)
//   SK_WAVES   0 (no stream-K), 1 (the last, part-empty wave of tiles) or 2 (and one whole wave before it)
// Shared memory: STAGES x (BM + BN) x 32 x 4 bytes (+ 1 KiB to align the first stage to 1024).
// Preconditions: an sm_90a GPU (H100, H200); tensor maps from helpers/run/tensor_maps.py: tmA over
// A (box 32 x BM), tmB over B (box 32 x 32), both in the 128-byte swizzle, FP32 or TF32 elements.
// Rows of A and B start 16-byte aligned (the host pads the pitch where K or N is not a multiple of 4).
// `partial` holds 2 x G x BM x BN floats where stream_k_tiles(tiles, G, SK_WAVES) > 0 (else it is not
// read or written).
// skTiles x numK < 2^31 (StreamKConfig.check_shape; it holds wherever A, B and C fit int indices).
// Launch: block ((CONSUMERS + 1) x 128), grid (G, 1, 1) with G the SMs (or tiles x S), dynamic shared
// memory as above; then, where stream_k_tiles() > 0, fixup_stream_k with block (256) and grid
// (BM x BN / 1024, stream_k_tiles(), 1).

#include "tma.cuh"
#include "wgmma.cuh"

constexpr int GROUP_M = 8;  // tile rows per band of the tile order

// Tile t's (row, column) of tiles: down a band of GROUP_M tile rows, column after column.
__device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int& tm, int& tn) {
  const int band = t / (GROUP_M * tilesN), first = band * GROUP_M;
  const int rows = min(GROUP_M, tilesM - first), inBand = t - band * GROUP_M * tilesN;
  tm = first + inBand % rows, tn = inBand / rows;
}

// How many of the `tiles` (the last ones) are shared out by stream-K among `ctas` blocks: none with
// SK_WAVES = 0; else the tiles of the part-empty last wave and SK_WAVES - 1 whole waves before it.
// helpers/core/configs_stream_k.py's StreamKConfig.sk_tiles is the same rule.
__device__ __forceinline__ int stream_k_tiles(int tiles, int ctas, int skWaves) {
  return skWaves == 0 ? 0 : min(tiles, tiles % ctas + (skWaves - 1) * ctas);
}

// The block whose run of the T stream-K iterations holds iteration i: runs are [b T / G, (b + 1) T / G).
__device__ __forceinline__ int stream_k_block(long long i, long long T, int ctas) {
  return static_cast<int>(((i + 1) * ctas - 1) / T);
}

// A block's work in order, one piece at a time (a tile, its k-tiles [k0, k1), a slot of the workspace): its whole
// tiles t = blockIdx.x, + G, ... below dpTiles, then its run [i, end) of stream-K iterations cut at tile
// boundaries (slot 0 for the run's first piece, 1 after it).
struct Pieces {
  int t, dpTiles, numK, i, end;
  int slot;  // the workspace slot of the next part: 0 for the run's first piece, then 1
  __device__ bool next(int& tile, int& k0, int& k1, int& partSlot) {
    if (t < dpTiles) {
      tile = t, k0 = 0, k1 = numK, partSlot = 0;
      t += gridDim.x;
      return true;
    }
    if (i >= end) return false;
    const int s = i / numK;
    k0 = i - s * numK, k1 = min(numK, end - s * numK);
    tile = dpTiles + s, partSlot = slot, slot = 1;
    i = s * numK + k1;
    return true;
  }
};

template <int BM, int CONSUMERS, int STAGES, int SK_WAVES>
__global__ void __launch_bounds__(128 * CONSUMERS + 128, 1)
    sgemm_stream_k(int M, int N, int K, float alpha, const __grid_constant__ TensorMap tmA,
                   const __grid_constant__ TensorMap tmB, float beta, float* __restrict__ C,
                   float* __restrict__ partial) {
  constexpr int BK = 32, BN = 64 * CONSUMERS;
  constexpr int A_FLOATS = BM * BK, B_FLOATS = BK * BN, STAGE_FLOATS = A_FLOATS + B_FLOATS;
  constexpr unsigned STAGE_BYTES = 4 * STAGE_FLOATS;
  static_assert(BM == 128 || BM == 256, "BM (wgmma's N, a TMA box of up to 256 rows) is 128 or 256");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CONSUMERS is 1 or 2 multiplying warpgroups");
  static_assert(STAGES >= 2, "STAGES >= 2: one stage is multiplied while the next one loads");
  static_assert(SK_WAVES >= 0 && SK_WAVES <= 2, "SK_WAVES is 0, 1 or 2");
  __shared__ unsigned long long full[STAGES];   // full[s]: stage s's copies have landed
  __shared__ unsigned long long empty[STAGES];  // empty[s]: the consumers are done with stage s
  extern __shared__ __align__(128) float smem[];
  float* const tiles = smem + (1024 - static_cast<unsigned>(__cvta_generic_to_shared(smem)) % 1024) % 1024 / 4;
  const int tid = threadIdx.x, warpgroup = tid / 128, warp = tid / 32 % 4, lane = tid % 32;
  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN, numTiles = tilesM * tilesN;
  const int numK = (K + BK - 1) / BK;
  // The first dpTiles tiles are walked whole; the last skTiles give T iterations, block b taking its run.
  const int skTiles = stream_k_tiles(numTiles, gridDim.x, SK_WAVES), dpTiles = numTiles - skTiles;
  // T < 2^31 (StreamKConfig.check_shape): the runs' bounds fit an int (the walk then keeps fewer registers).
  const long long T = static_cast<long long>(skTiles) * numK;
  const int skBegin = static_cast<int>(T * blockIdx.x / gridDim.x), skEnd = static_cast<int>(T * (blockIdx.x + 1) / gridDim.x);

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&full[s], 1);                // the producer's arrive_expect_tx, then the bytes
      mbarrier_init(&empty[s], 4 * CONSUMERS);   // one arrival per consumer warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {  // ---- the producer: one thread copies ----
    if (CONSUMERS == 2) setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_map(&tmA);
      tma_prefetch_map(&tmB);
      int it = 0;  // k-tiles issued by this block, over all its pieces: stage it % STAGES, round it / STAGES
      Pieces pieces{static_cast<int>(blockIdx.x), dpTiles, numK, skBegin, skEnd, 0};
      for (int t, k0, k1, slot; pieces.next(t, k0, k1, slot);) {
        int tm, tn;
        tile_coords(t, tilesM, tilesN, tm, tn);
        for (int kt = k0; kt < k1; ++kt, ++it) {
          const int s = it % STAGES;
          mbarrier_wait(&empty[s], (it / STAGES & 1) ^ 1);  // the consumers are done with this stage
          float* as = tiles + s * STAGE_FLOATS;
          mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
          tma_load_2d(as, &tmA, &full[s], tm * BM, kt * BK);
#pragma unroll
          for (int j = 0; j < BN / 32; ++j) {
            tma_load_2d(as + A_FLOATS + j * 32 * BK, &tmB, &full[s], kt * BK, tn * BN + 32 * j);
          }
        }
      }
    }
    return;
  }

  // ---- the consumers: warpgroup 1 + c multiplies columns 64c .. 64c+63 of each tile ----
  if (CONSUMERS == 2) setmaxnreg_inc<232>();
  const int c = warpgroup - 1, g = lane / 4, t4 = lane % 4;
  // This lane's columns n, n+1 of the tile: box (2c + warp/2) of B's tile, 16-byte run `run`. An 8-byte
  // load is served half a warp at a time: lanes 0-15 (g < 4) take runs 0 and 4, lanes 16-31 runs 1 and 5
  // (+2 in odd warps), so each half's four rows k = t .. t+3 cover the 32 banks once under the swizzle.
  const int run = ((g >> 1) & 1) << 2 | g >> 2 | (warp & 1) << 1;
  const int box = 2 * c + warp / 2, n = 32 * box + 4 * run + 2 * (g & 1);
  float frag[2][BK / 8][4];  // B's fragments of an even and an odd k-tile (wgmma reads them late)
  int it = 0;
  Pieces pieces{static_cast<int>(blockIdx.x), dpTiles, numK, skBegin, skEnd, 0};
  for (int t, k0, k1, slot; pieces.next(t, k0, k1, slot);) {
    int tm, tn;
    tile_coords(t, tilesM, tilesN, tm, tn);
    float acc[BM / 2];
#pragma unroll
    for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;

    // Waits for k-tile `it`, reads its fragments into set f and issues its products; then, once
    // the products of the k-tile before have completed, gives that stage back to the producer.
    auto multiply = [&](int f, bool first) {
      const int s = it % STAGES;
      mbarrier_wait(&full[s], it / STAGES & 1);
      const float* as = tiles + s * STAGE_FLOATS;
      const float* bs = as + A_FLOATS + box * 32 * BK;
#pragma unroll
      for (int ks = 0; ks < BK / 8; ++ks) {
        const int k = 8 * ks + t4;  // rows k and k + 4 of the box; k % 8 == t4
        const float2 lo = *reinterpret_cast<const float2*>(&bs[k * 32 + ((run ^ t4) * 4) + 2 * (g & 1)]);
        const float2 hi = *reinterpret_cast<const float2*>(&bs[(k + 4) * 32 + ((run ^ (t4 + 4)) * 4) + 2 * (g & 1)]);
        frag[f][ks][0] = lo.x, frag[f][ks][1] = lo.y, frag[f][ks][2] = hi.x, frag[f][ks][3] = hi.y;
      }
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < BK / 8; ++ks) wgmma_m64k8_tf32<BM>(acc, frag[f][ks], wgmma_desc_sw128(as + 8 * ks));
      wgmma_commit_group();
      wgmma_wait_group<1>();  // the products of the k-tile before have completed
      __syncwarp();           // and so have every lane's loads of its fragments: lane 0 speaks for the warp
      if (!first && lane == 0) mbarrier_arrive(&empty[(it + STAGES - 1) % STAGES]);
      ++it;
    };
    int kt = k0;
    for (; kt + 1 < k1; kt += 2) {  // two k-tiles a pass: fragment sets 0 and 1 are constants
      multiply(0, kt == k0);
      multiply(1, false);
    }
    if (kt < k1) multiply(0, kt == k0);
    wgmma_wait_group<0>();  // every product has completed: the accumulators are final
    if (lane == 0) mbarrier_arrive(&empty[(it + STAGES - 1) % STAGES]);

    // acc[4j + i] is C^T's (16 warp + g + 8 (i/2), 8j + 2 t4 + i%2): row 8j + 2 t4 + i%2 of the
    // tile, column n + i/2. Each row's pair of columns is one 8-byte store where both lie in C. With
    // beta != 0, C is read C_BATCH rows of 8 at a time, the batch's loads all before its stores, so
    // that they are in flight together (as 10_wgmma does).
    if (k0 != 0 || k1 != numK) {  // a part of the tile: its raw sums to this block's slot, not to C
      float* w = partial + (static_cast<size_t>(blockIdx.x) * 2 + slot) * (BM * BN);
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          // one 8-byte store, kept in L2 for fixup_stream_k (st.global.cg): NVRTC 12.9 split the plain store
          // through a float2 pointer into two 4-byte stores (results/ncu_h100_2026-11-28_stream_k/README.md),
          // and indexing w as float2 instead spilled 592 bytes a thread at BM = 256
          __stcg(reinterpret_cast<float2*>(&w[(8 * j + 2 * t4 + i) * BN + n]), make_float2(acc[4 * j + i], acc[4 * j + 2 + i]));
        }
      }
      continue;  // C is neither read nor written here: fixup_stream_k does both
    }
    // 12's C_BATCH of 8, but 4 where BM = 256 and the stream-K walk (Pieces) stays live through the epilogue:
    // with 8 there, ptxas 12.9 keeps 92 B in local memory, inside the k-loop (168 registers a thread of 384).
    constexpr int C_BATCH = BM == 256 && SK_WAVES > 0 ? 4 : 8;
    const bool alignedC = N % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
    const int col = tn * BN + n;
#pragma unroll
    for (int j0 = 0; j0 < BM / 8; j0 += C_BATCH) {
      float2 old[C_BATCH][2];  // C's pairs of the batch (beta != 0)
      if (beta != 0.0f) {
#pragma unroll
        for (int jj = 0; jj < C_BATCH; ++jj) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int row = tm * BM + 8 * (j0 + jj) + 2 * t4 + i;
            old[jj][i] = make_float2(0.0f, 0.0f);
            if (row >= M || col >= N) continue;
            const float* p = &C[static_cast<size_t>(row) * N + col];
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
          const int j = j0 + jj, row = tm * BM + 8 * j + 2 * t4 + i;
          if (row >= M || col >= N) continue;
          const float2 c = beta == 0.0f ? make_float2(0.0f, 0.0f) : old[jj][i];  // C is not read if beta = 0
          const float v0 = alpha * acc[4 * j + i] + beta * c.x, v1 = alpha * acc[4 * j + 2 + i] + beta * c.y;
          float* p = &C[static_cast<size_t>(row) * N + col];
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
}

// The second kernel: adds the parts of each tile that several blocks shared, in the order of the blocks, and
// writes alpha * sum + beta * C. Block (x, s) takes 1,024 elements of stream-K tile s (tile dpTiles + s), four
// per thread; `ctas` is the first kernel's grid (G). A tile one block computed whole was written already.
template <int BM, int CONSUMERS, int SK_WAVES>
__global__ void __launch_bounds__(256)
    fixup_stream_k(int M, int N, int K, int ctas, float alpha, const float* __restrict__ partial, float beta,
                   float* __restrict__ C) {
  constexpr int BK = 32, BN = 64 * CONSUMERS;
  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN, numTiles = tilesM * tilesN;
  const int numK = (K + BK - 1) / BK;
  const int skTiles = stream_k_tiles(numTiles, ctas, SK_WAVES), dpTiles = numTiles - skTiles;
  const long long T = static_cast<long long>(skTiles) * numK;
  const int s = blockIdx.y, e = (blockIdx.x * blockDim.x + threadIdx.x) * 4;  // e: the first of 4 in the tile
  if (s >= skTiles || e >= BM * BN) return;
  const long long first = static_cast<long long>(s) * numK, last = first + numK - 1;  // the tile's iterations
  const int b0 = stream_k_block(first, T, ctas), b1 = stream_k_block(last, T, ctas);
  if (b0 == b1) return;  // one block's piece: written whole
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int b = b0; b <= b1; ++b) {
    const long long begin = T * b / ctas;
    if (begin == T * (b + 1) / ctas) continue;  // a block with no iterations (more blocks than iterations)
    const int slot = begin < first ? 1 : 0;     // b0 may have started in an earlier tile: this is its last piece
    const float4 v = *reinterpret_cast<const float4*>(&partial[(static_cast<size_t>(b) * 2 + slot) * (BM * BN) + e]);
    sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
  }
  int tm, tn;
  tile_coords(dpTiles + s, tilesM, tilesN, tm, tn);
  const int row = tm * BM + e / BN, col = tn * BN + e % BN;
  if (row >= M) return;
  const float sums[4] = {sum.x, sum.y, sum.z, sum.w};
  float* p = &C[static_cast<size_t>(row) * N + col];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if (col + q < N) p[q] = alpha * sums[q] + beta * (beta == 0.0f ? 0.0f : p[q]);
  }
}

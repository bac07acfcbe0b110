// Stage 12: Hopper the way cuBLAS does it: TMA copies, mbarrier pipelines, warp specialization,
// persistent tiles, TF32 rounded to nearest.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 10_wgmma: the same products (wgmma, C^T = B^T A^T, A's tile read by the tensor
// cores in the 128-byte swizzle, B's as register fragments), fed another way.
// - Copies: in 10_wgmma every thread computed addresses and issued 16-byte cp.async copies, and
//   checked every edge. Here one thread issues one TMA copy per tile (tma.cuh): the copy engine
//   reads a box of the array a tensor map describes (built on the host and passed by value),
//   zero-fills what lies past the edges, and writes it to shared memory already swizzled. B's
//   tile comes as BN / 32 boxes of 32 x 32, each in the same 128-byte swizzle as A's.
// - Waiting: each stage of the ring has two mbarriers. full[s] completes when the stage's copies
//   have landed (the producer announces their bytes with mbarrier_arrive_expect_tx; the copy
//   engine counts them off); empty[s] completes when every consumer warp has finished with the
//   stage (its products that read the stage have completed, and, after a __syncwarp, every lane's
//   loads of its fragments: lane 0 then arrives for the warp). No __syncthreads in the loop: each
//   side waits only for what it needs, phase by phase (parity = round of the ring & 1).
// - Warp specialization: warpgroup 0 only copies (one of its threads issues every copy),
//   warpgroups 1 .. CONSUMERS only multiply. setmaxnreg moves the registers: the copying
//   warpgroup keeps 40 per thread, the multiplying ones get 232.
// - Persistent tiles: the kernel walks tiles t = blockIdx.x, + gridDim.x, ... With PERSISTENT = 1
//   the host launches one block per SM, so a block's next tile loads while it writes the last
//   one's results. Tiles are numbered down bands of GROUP_M tile rows, so the blocks working at
//   one time share columns of B (and rows of A) in L2.
// - TF32 rounding: the tensor cores take an FP32 input's top 10 mantissa bits (the rest dropped, a
//   truncation, as an H100 did bit by bit; no document promises it); cuBLAS rounds to nearest. 10_wgmma rounded in the kernel, at a cost of 22 %.
//   Here the kernel does nothing: a tensor map whose element type is TF32 (the host's choice,
//   WarpSpecializedConfig.ROUND = 1) makes the copy engine round every element as it copies
//   (on an H200 the errors of cuBLAS TF32, to every digit; on an H100, bit by bit, to nearest with
//   ties to even: tools/experiments/probe_tma_tf32.py, results/stage_10_12_h100_2026-11-27_beta/).
// - The fragments of B: as in 10_wgmma, wgmma's rows g and g+8 of each warp are two neighbouring
//   columns of C, read in one 8-byte load. Which columns is the kernel's choice: each half-warp takes
//   two 16-byte runs four apart ({0, 4} and {1, 5}, or {2, 6} and {3, 7}) of a 32-float row of B's
//   box, so that under the swizzle its four rows k = t .. t+3 land on all 32 banks once: one
//   wavefront per half-warp, none wasted (16 neighbouring columns would take four).
// - Ping-pong (PINGPONG = 1, a step past the stage; CONSUMERS = 2): above, both consumers multiply one tile
//   and then both write it, so the tensor cores idle through every epilogue. Here each consumer takes a tile
//   of its own, BM x 64 (its 64 columns: wgmma's shape is unchanged), the block's tiles j = 0, 1, 2, ...
//   going to consumers 0, 1, 0, ...; the producer fills the one ring in that order, so tile j's k-tiles lie
//   at ring positions j * numK onwards, and each stage is read by one consumer: empty[s] counts its 4 warps.
//   Two more mbarriers, turn[0] and turn[1], order the consumers' mainloops: consumer c issues tile j's
//   products only after the other has waited for every k-tile of tile j-1 (one thread arrives on turn[c]
//   after its last wait; count 1, for a phase that completed has completed for everyone). The order is
//   needed, not only faster: a parity wait tells only two phases apart, and consumer 1's first k-tile is a
//   whole tile ahead of consumer 0's (with numK >= STAGES its wait would pass on the stage's previous round
//   and read the old contents; tests/emulator/test_hopper_mutations.py takes the wait out). One consumer's
//   epilogue then runs while the other multiplies (helpers.measure.hopper's Pipeline.per_tile counts it).
//   Measured on an H100 it lost more than a third (notebook 12, section 9), no faster than one warpgroup alone
//   (CONSUMERS = 1): one warpgroup's products at a time. What limits a warpgroup alone on a BM x 64 tile (its
//   fragment-load and wait chain, or A's tile copied twice as often per product) was not measured.
//   With the turn's bookkeeping live, ptxas spills the consumer at 168 registers with batches of 8 rows of C:
//   they are 4 here.
//
// - Clusters (CLUSTER = 2, the entry sgemm_warp_specialized_cluster, declared __cluster_dims__(2, 1, 1)): the
//   two blocks of a cluster run at once on SMs of one GPC and take two tiles of one tile row, which read the
//   same rows of A. Each block copies half of A's box (BM / 2 rows) with one multicast copy that lands in
//   both blocks (tma.cuh's cluster section), and its own B: A is read from L2 once per pair of tiles. A stage
//   of a block is then written by both producers, so it may be refilled only once the consumers of both
//   blocks gave it back (each consumer warp arrives on its own and its peer's empty barrier, a remote arrive
//   at CTA scope: tma.cuh says why; empty counts 2 x 4 x CONSUMERS arrivals); full still expects the whole
//   stage (its B, its half of A, the peer's half); a cluster barrier (cluster_sync) after the barriers' init,
//   so that no peer's copy or arrival reaches a barrier not yet initialized, and another before a block
//   exits, so that none reaches a block that has left. The walk goes by pairs of tiles; with an odd number of
//   tile columns the last pair's second block has no tile: it copies zeros past N and stores nothing, but
//   takes part in every barrier. The CPU emulator runs the cluster's blocks together and stops each broken
//   rule with its line; it does not model the timing of distributed shared memory, or memory scopes.
//   Measured on an H100: no gain at 4096^3 and 8192^3 (notebook 12, section 9).
//
// - EPILOGUE = 1, C through shared memory (a step past the stage): the threads' 8-byte stores of C are
//   replaced by TMA stores. Each consumer warpgroup writes alpha acc (+ beta C, C read as above) a sub-tile
//   of EPI_ROWS = 32 rows x 64 columns at a time into one of its two staging buffers (two 32 x 32 boxes in
//   the 128-byte swizzle, after the ring), fences its writes for the copy engine (fence_proxy_async_shared),
//   syncs its 128 threads on a named barrier, and one thread stores the two boxes through tmC; the copy
//   engine clips them at C's edges, so no bounds checks. The next sub-tile goes to the other buffer while
//   the last one is stored: before the barrier the issuing thread waits until its store before that has
//   read its buffer (tma_store_wait_read<0>). Why: one 4 KiB store per box instead of 32 8-byte stores a
//   thread, writing whole 128-byte lines, the copy engine's work, not the warps'. Bank conflicts: a
//   half-warp's pairs lie in 4 rows 2 t4 + i of 2 runs of 16 bytes, and in the swizzle rows 0, 2, 4, 6 send
//   runs r and r + 4 to 4 chunks only (2 wavefronts); lanes with t4 >= 2 write rows 2 t4 + 1 - i instead,
//   and the 4 rows' chunks are 8 (1 wavefront). C's map needs its rows 16-byte aligned: for N % 4 != 0, or
//   a C that does not start 16-byte aligned, the host launches EPILOGUE = 0 instead (the same result).
//
// Template parameters:
//   BM         rows of C per tile, wgmma's N: 128 or 256
//   CONSUMERS  multiplying warpgroups, each 64 columns of C: BN = 64 x CONSUMERS (1 or 2)
//   STAGES     tiles of A and B in the shared-memory ring (2 or more)
//   EPILOGUE   0: C stored from registers; 1: through shared memory by TMA (a C tensor map, tmC)
//   PINGPONG   0: the consumers share each tile; 1: each takes a tile of BM x 64 in turn (BN = 64)
//   CLUSTER    blocks per cluster sharing A's tile (1, or 2: sgemm_warp_specialized_cluster)
// Shared memory: STAGES x (BM + BN) x 32 x 4 bytes (+ 1 KiB to align the first stage to 1024); EPILOGUE = 1
// adds CONSUMERS x 2 x 32 x 64 x 4 (the staging buffers: 32 KiB for the default 4 stages of 48 KiB).
// Preconditions: an sm_90a GPU (H100, H200); tensor maps from helpers/run/tensor_maps.py: tmA over
// A (box 32 x BM), tmB over B (box 32 x 32), both in the 128-byte swizzle, FP32 or TF32 elements.
// Rows of A and B start 16-byte aligned (the host pads the pitch where K or N is not a multiple of 4).
// EPILOGUE = 1: tmC over C (FP32, box 32 x 32, 128-byte swizzle), rows 16-byte aligned, passed after C.
// Launch: block ((CONSUMERS + 1) x 128), grid (tiles, half as many with PINGPONG = 1, or one block per SM with
// PERSISTENT = 1; with CLUSTER = 2 whole clusters: pairs of tiles x 2, an even number of blocks), dynamic shared
// memory as above; tmA's box is BM / CLUSTER rows.

#include "tma.cuh"
#include "wgmma.cuh"

constexpr int GROUP_M = 8;  // tile rows per band of the tile order

// The kernel's body; the entries at the end launch it (C stored from registers or by TMA through tmC; one block per
// tile or SM, or in clusters of CLUSTER blocks).
template <int BM, int CONSUMERS, int STAGES, int EPILOGUE, int PINGPONG, int CLUSTER>
__device__ __forceinline__ void warp_specialized(int M, int N, int K, float alpha, const TensorMap& tmA,
                                                 const TensorMap& tmB, float beta, float* __restrict__ C,
                                                 const TensorMap* tmC) {
  // A tile is BM x BN: the consumers' 64 columns each (cooperative), or one consumer's 64 (ping-pong)
  constexpr int BK = 32, BN = PINGPONG ? 64 : 64 * CONSUMERS;
  constexpr int READERS = PINGPONG ? 1 : CONSUMERS;  // consumer warpgroups that read each stage
  constexpr int TURNS = PINGPONG ? CONSUMERS : 1;    // consumer warpgroups taking turns at the block's tiles
  constexpr int A_FLOATS = BM * BK, B_FLOATS = BK * BN, STAGE_FLOATS = A_FLOATS + B_FLOATS;
  constexpr unsigned STAGE_BYTES = 4 * STAGE_FLOATS;
  constexpr int EPI_ROWS = 32;      // EPILOGUE = 1: rows of C a warpgroup stages at a time (C's map: boxes of 32 x 32)
  constexpr int STORE_BARRIER = 1;  // EPILOGUE = 1: consumer warpgroup c syncs its 128 threads on barrier 1 + c
  static_assert(BM == 128 || BM == 256, "BM (wgmma's N, a TMA box of up to 256 rows) is 128 or 256");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CONSUMERS is 1 or 2 multiplying warpgroups");
  static_assert(STAGES >= 2, "STAGES >= 2: one stage is multiplied while the next one loads");
  static_assert(BM % (2 * EPI_ROWS) == 0, "EPILOGUE = 1: a tile has an even number of sub-tiles (buffer h % 2)");
  static_assert(EPILOGUE == 0 || EPILOGUE == 1, "EPILOGUE is 0 (C from registers) or 1 (through shared memory, TMA stores)");
  static_assert(PINGPONG == 0 || PINGPONG == 1, "PINGPONG is 0 (the consumers share each tile) or 1 (take turns)");
  static_assert(PINGPONG == 0 || CONSUMERS == 2, "ping-pong takes turns between two consumer warpgroups: CONSUMERS = 2");
  static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER is 1 block, or clusters of 2 sharing A's tile");
  static_assert(PINGPONG == 0 || CLUSTER == 1, "clusters are built for the cooperative consumers only (PINGPONG = 0)");
  static_assert(EPILOGUE == 0 || (PINGPONG == 0 && CLUSTER == 1),
                "the TMA-store epilogue is built for the cooperative consumers without clusters only");
  __shared__ unsigned long long full[STAGES];   // full[s]: stage s's copies have landed
  __shared__ unsigned long long empty[STAGES];  // empty[s]: the consumers are done with stage s
  __shared__ unsigned long long turn[2];        // ping-pong: turn[c], consumer c may issue its next tile's products
  extern __shared__ __align__(128) float smem[];
  float* const tiles = smem + (1024 - static_cast<unsigned>(__cvta_generic_to_shared(smem)) % 1024) % 1024 / 4;
  const int tid = threadIdx.x, warpgroup = tid / 128, warp = tid / 32 % 4, lane = tid % 32;
  const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
  const int numK = (K + BK - 1) / BK;
  // The walk goes by units of CLUSTER neighbouring tiles of one tile row, a cluster's blocks taking one each (the
  // last unit of an odd tilesN leaves a block without a tile: it copies and multiplies zeros and stores nothing).
  const int unitsN = (tilesN + CLUSTER - 1) / CLUSTER, numUnits = tilesM * unitsN;
  unsigned rank = 0;  // this block's rank in its cluster: its tile of each unit, its half of A's box
  if constexpr (CLUSTER > 1) rank = cluster_ctarank();

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&full[s], 1);                          // the producer's arrive_expect_tx, then the bytes
      mbarrier_init(&empty[s], 4 * READERS * CLUSTER);     // one arrival per warp reading the stage, in the cluster
    }
    if constexpr (PINGPONG) {
      mbarrier_init(&turn[0], 1);                // one thread of the other consumer, its products issued
      mbarrier_init(&turn[1], 1);
    }
    fence_mbarrier_init();
  }
  if constexpr (CLUSTER == 1) __syncthreads();
  else cluster_sync();  // every block's barriers initialized before a peer's copies and arrivals reach them
  // A block leaves only once no peer can reach its shared memory any more (multicasts into it, arrivals on it).
  auto leave = [] { if constexpr (CLUSTER > 1) cluster_sync(); };

  // Unit t's (row, column) of tiles: down a band of GROUP_M tile rows, column after column; this block's tile in it.
  auto tile_coords = [&](int t, int& tm, int& tn) {
    const int band = t / (GROUP_M * unitsN), first = band * GROUP_M;
    const int rows = min(GROUP_M, tilesM - first), inBand = t - band * GROUP_M * unitsN;
    tm = first + inBand % rows, tn = inBand / rows * CLUSTER + rank;
  };
  // A stage given back by a consumer warp: to its own producer, and to each producer that multicasts into it.
  auto give_back = [&](int s) {
    if constexpr (CLUSTER == 1) mbarrier_arrive(&empty[s]);
    else for (unsigned r = 0; r < CLUSTER; ++r) mbarrier_arrive_cluster(&empty[s], r);
  };

  if (warpgroup == 0) {  // ---- the producer: one thread copies ----
    if (CONSUMERS == 2) setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_map(&tmA);
      tma_prefetch_map(&tmB);
      int it = 0;  // k-tiles issued by this block, over all its tiles: stage it % STAGES, round it / STAGES
      for (int t = blockIdx.x / CLUSTER; t < numUnits; t += gridDim.x / CLUSTER) {
        int tm, tn;
        tile_coords(t, tm, tn);
        for (int kt = 0; kt < numK; ++kt, ++it) {
          const int s = it % STAGES;
          mbarrier_wait(&empty[s], (it / STAGES & 1) ^ 1);  // the consumers are done with this stage
          float* as = tiles + s * STAGE_FLOATS;
          mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);  // with CLUSTER = 2: its B, its half of A, the peer's half
          if constexpr (CLUSTER == 1) {
            tma_load_2d(as, &tmA, &full[s], tm * BM, kt * BK);
          } else {  // A's box is BM / 2 rows: this block's half, into both blocks of the cluster
            constexpr int HALF = BM / CLUSTER;
            tma_load_2d_multicast(as + rank * HALF * BK, &tmA, &full[s], tm * BM + rank * HALF, kt * BK, 0x3);
          }
#pragma unroll
          for (int j = 0; j < BN / 32; ++j) {
            tma_load_2d(as + A_FLOATS + j * 32 * BK, &tmB, &full[s], kt * BK, tn * BN + 32 * j);
          }
        }
      }
    }
    leave();
    return;
  }

  // ---- the consumers: warpgroup 1 + c multiplies columns 64c .. 64c+63 of each tile (ping-pong: the whole
  // 64 columns of every other tile of the block, c, c + 2, ...) ----
  if (CONSUMERS == 2) setmaxnreg_inc<232>();
  const int c = warpgroup - 1, g = lane / 4, t4 = lane % 4;
  // This lane's columns n, n+1 of the tile: box (2c + warp/2) of B's tile, 16-byte run `run`. An 8-byte
  // load is served half a warp at a time: lanes 0-15 (g < 4) take runs 0 and 4, lanes 16-31 runs 1 and 5
  // (+2 in odd warps), so each half's four rows k = t .. t+3 cover the 32 banks once under the swizzle.
  const int run = ((g >> 1) & 1) << 2 | g >> 2 | (warp & 1) << 1;
  const int box = (PINGPONG ? 0 : 2 * c) + warp / 2, n = 32 * box + 4 * run + 2 * (g & 1);
  float frag[2][BK / 8][4];  // B's fragments of an even and an odd k-tile (wgmma reads them late)
  int it = 0;
  for (int t = blockIdx.x / CLUSTER + (PINGPONG ? c : 0) * gridDim.x; t < numUnits;
       t += TURNS * gridDim.x / CLUSTER) {
    if constexpr (PINGPONG) {  // tile t is the block's j-th: consumer c takes j = c, c + 2, ...
      const int j = (t - blockIdx.x) / gridDim.x;
      it = j * numK;  // the producer fills the ring in the block's tile order: the other consumer's tiles too
      if (j > 0) mbarrier_wait(&turn[c], (j - 1) / 2 & 1);  // the other consumer has issued tile j-1's products
    }
    int tm, tn;
    tile_coords(t, tm, tn);
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
      if (!first && lane == 0) give_back((it + STAGES - 1) % STAGES);
      ++it;
    };
    int kt = 0;
    for (; kt + 1 < numK; kt += 2) {  // two k-tiles a pass: fragment sets 0 and 1 are constants
      multiply(0, kt == 0);
      multiply(1, false);
    }
    if (kt < numK) multiply(0, kt == 0);
    if constexpr (PINGPONG) {
      if (tid % 128 == 0) mbarrier_arrive(&turn[1 - c]);  // every wait for this tile passed: the other's turn
    }
    wgmma_wait_group<0>();  // every product has completed: the accumulators are final
    if (lane == 0) give_back((it + STAGES - 1) % STAGES);

    // acc[4j + i] is C^T's (16 warp + g + 8 (i/2), 8j + 2 t4 + i%2): row 8j + 2 t4 + i%2 of the
    // tile, column n + i/2. Each row's pair of columns is one 8-byte store where both lie in C. With
    // beta != 0, C is read C_BATCH rows of 8 at a time, the batch's loads all before its stores, so
    // that they are in flight together (as 10_wgmma does); with EPILOGUE = 1 a sub-tile's 4 at a time.
    constexpr int C_BATCH = 8;
    // EPILOGUE = 1: a sub-tile's rows (registers); ping-pong: 4 (8 would spill: see the top)
    constexpr int BATCH = EPILOGUE == 1 ? EPI_ROWS / 8 : PINGPONG && C_BATCH > 4 ? 4 : C_BATCH;
    const bool alignedC = N % 2 == 0 && reinterpret_cast<size_t>(C) % 8 == 0;
    const int col = tn * BN + n;
    // EPILOGUE = 1: the warpgroup's two staging buffers of EPI_ROWS x 64 (two boxes of 32 columns, in the 128-byte
    // swizzle), after the ring; sub-tile h of the tile goes to buffer h % 2. Lanes with t4 >= 2 write their two
    // rows in the other order (flip), so that each half-warp's 8-byte writes fill the 32 banks once: slot[i] is
    // where row 2 t4 + (i ^ flip) of this lane's pair of columns lies in a buffer.
    [[maybe_unused]] float* const staging = tiles + STAGES * STAGE_FLOATS + c * 2 * EPI_ROWS * 64;
    [[maybe_unused]] const bool flip = t4 >> 1, issuer = tid % 128 == 0;
    [[maybe_unused]] int slot[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = 2 * t4 + (i ^ flip);
      slot[i] = warp / 2 * 32 * EPI_ROWS + r * 32 + ((run ^ r) << 2) + 2 * (g & 1);
    }
#pragma unroll
    for (int j0 = 0; j0 < BM / 8; j0 += BATCH) {
      float2 old[BATCH][2];  // C's pairs of the batch (beta != 0)
      if (beta != 0.0f) {
#pragma unroll
        for (int jj = 0; jj < BATCH; ++jj) {
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
      if constexpr (EPILOGUE == 0) {
#pragma unroll
        for (int jj = 0; jj < BATCH; ++jj) {
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
      } else {  // through shared memory: the batch's sub-tiles of EPI_ROWS rows, each stored by TMA
#pragma unroll
        for (int h = 0; h < 8 * BATCH / EPI_ROWS; ++h) {
          float* const buf = staging + ((8 * j0 / EPI_ROWS + h) & 1) * EPI_ROWS * 64;
#pragma unroll
          for (int jj = 0; jj < EPI_ROWS / 8; ++jj) {
            const int jb = h * EPI_ROWS / 8 + jj, j = j0 + jb;
            const float2 c0 = beta == 0.0f ? make_float2(0.0f, 0.0f) : old[jb][0];  // C is not read if beta = 0
            const float2 c1 = beta == 0.0f ? make_float2(0.0f, 0.0f) : old[jb][1];
            const float2 r0 = make_float2(alpha * acc[4 * j] + beta * c0.x, alpha * acc[4 * j + 2] + beta * c0.y);
            const float2 r1 = make_float2(alpha * acc[4 * j + 1] + beta * c1.x, alpha * acc[4 * j + 3] + beta * c1.y);
            *reinterpret_cast<float2*>(&buf[slot[0] + 8 * 32 * jj]) = flip ? r1 : r0;
            *reinterpret_cast<float2*>(&buf[slot[1] + 8 * 32 * jj]) = flip ? r0 : r1;
          }
          fence_proxy_async_shared();               // the writes are visible to the copy engine (async proxy)
          if (issuer) tma_store_wait_read<0>();     // the last store has read the other buffer: it may be rewritten
          named_barrier_sync(STORE_BARRIER + c, 128);  // the warpgroup's writes are in, and the other buffer free
          if (issuer) {  // rows and columns past C's edges are clipped by the copy engine
            const int row = tm * BM + 8 * (j0 + h * EPI_ROWS / 8), cols = tn * BN + 64 * c;
            tma_store_2d(tmC, buf, row, cols);
            tma_store_2d(tmC, buf + 32 * EPI_ROWS, row, cols + 32);
            tma_store_commit_group();
          }
        }
      }
    }
  }
  if constexpr (EPILOGUE == 1) {
    if (tid % 128 == 0) tma_store_wait<0>();  // the stores have read shared memory (and written C): the block may end
  }
  leave();
}

// Hides a kernel template unless its condition holds (std::enable_if; NVRTC has no <type_traits> here).
template <bool COND>
struct only_if {};
template <>
struct only_if<true> {
  using type = int;
};

// The kernel of the stage, and of every step but the TMA-store epilogue: C stored from registers.
template <int BM, int CONSUMERS, int STAGES, int EPILOGUE = 0, int PINGPONG = 0, int CLUSTER = 1,
          typename only_if<EPILOGUE == 0>::type = 0>
__global__ void __launch_bounds__(128 * CONSUMERS + 128, 1)
    sgemm_warp_specialized(int M, int N, int K, float alpha, const __grid_constant__ TensorMap tmA,
                           const __grid_constant__ TensorMap tmB, float beta, float* __restrict__ C) {
  static_assert(CLUSTER == 1, "CLUSTER = 2 is sgemm_warp_specialized_cluster, launched in clusters of 2 blocks");
  warp_specialized<BM, CONSUMERS, STAGES, EPILOGUE, PINGPONG, CLUSTER>(M, N, K, alpha, tmA, tmB, beta, C, nullptr);
}

// EPILOGUE = 1: C through shared memory, stored by TMA through tmC, a map of C (FP32, boxes of EPI_ROWS x 32, the
// 128-byte swizzle). C is still read through its pointer where beta != 0.
template <int BM, int CONSUMERS, int STAGES, int EPILOGUE, int PINGPONG = 0, int CLUSTER = 1,
          typename only_if<EPILOGUE == 1>::type = 0>
__global__ void __launch_bounds__(128 * CONSUMERS + 128, 1)
    sgemm_warp_specialized(int M, int N, int K, float alpha, const __grid_constant__ TensorMap tmA,
                           const __grid_constant__ TensorMap tmB, float beta, float* __restrict__ C,
                           const __grid_constant__ TensorMap tmC) {
  warp_specialized<BM, CONSUMERS, STAGES, EPILOGUE, PINGPONG, CLUSTER>(M, N, K, alpha, tmA, tmB, beta, C, &tmC);
}

// The same, launched in clusters of CLUSTER blocks (neighbouring blockIdx.x): __cluster_dims__ makes every launch
// of it a cluster launch, so the grid is a multiple of CLUSTER. (A kernel of its own: the attribute, even at 1,
// would change the stage's kernel.)
template <int BM, int CONSUMERS, int STAGES, int EPILOGUE = 0, int PINGPONG = 0, int CLUSTER = 2>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(128 * CONSUMERS + 128, 1)
    sgemm_warp_specialized_cluster(int M, int N, int K, float alpha, const __grid_constant__ TensorMap tmA,
                                   const __grid_constant__ TensorMap tmB, float beta, float* __restrict__ C) {
  static_assert(EPILOGUE == 0, "clusters store C from registers (EPILOGUE = 0)");
  warp_specialized<BM, CONSUMERS, STAGES, EPILOGUE, PINGPONG, CLUSTER>(M, N, K, alpha, tmA, tmB, beta, C, nullptr);
}

// Exercise 12 · a TMA ring of mbarriers. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 160, grid (ceil(N/32), ceil(M/32)) and 25,600 bytes of dynamic shared memory: a block
// computes a 32 x 32 tile of C. Warp 0 is the producer: one of its threads issues every copy, with TMA, of a
// 32 x 32 box of A and one of B per step of 32 along K, into a ring of STAGES stages. Warps 1 to 4 are the
// consumers: each of their 128 threads computes 8 results of the tile from the stages. Each stage has two
// mbarriers (kernels/tma.cuh): full, whose phase completes when the stage's copies have landed, and empty,
// whose phase completes when every consumer is done with the stage. No __syncthreads inside the loops: each
// side waits only for the phase it needs. (A GPU needs sm_90: H100, H200. The emulator runs it anywhere.)
// Given, because they are not this lesson: the boxes' layout (TMA's 128-byte swizzle), the copies of one
// stage, the multiply-adds of one stage, the stores of C. Yours: the barriers, their phases, the waits.
// The solution: the starter with its three TODO blocks written.
#include "tma.cuh"
#define BM 32      // rows of C per block
#define BN 32      // columns of C per block
#define BK 32      // steps of k per stage: one 128-byte row of a box
#define STAGES 3   // stages of the ring
#define CONSUMERS 128
constexpr unsigned STAGE_FLOATS = BM * BK + BK * BN;  // A's box, then B's
constexpr unsigned STAGE_BYTES = 4 * STAGE_FLOATS;    // what the copies of one stage bring

// Element (r, c) of a 32 x 32 box that TMA wrote in the 128-byte swizzle: the 16-byte chunks of row r are
// permuted by r % 8.
__device__ __forceinline__ float swizzled(const float* box, int r, int c) {
  return box[r * 32 + (((c / 4) ^ (r % 8)) * 4) + c % 4];
}

// The copies of k-tile kt into `stage`, both reporting their bytes to `bar`: A's box at the block's rows and
// B's at its columns (TMA fills with zeros what lies past the edges of A and B).
__device__ void copy_stage(float* stage, const TensorMap* tmA, const TensorMap* tmB, unsigned long long* bar,
                           int tileRow, int tileCol, int kt) {
  tma_load_2d(stage, tmA, bar, tileRow * BM, kt * BK);
  tma_load_2d(stage + BM * BK, tmB, bar, kt * BK, tileCol * BN);
}

// The BK steps of one stage for a consumer thread: row r of the tile, columns c0 .. c0 + 7.
__device__ void multiply_stage(const float* stage, int r, int c0, float acc[8]) {
  const float* bs = stage + BM * BK;
  for (int k = 0; k < BK; ++k) {
    const float a = swizzled(stage, r, k);
    for (int j = 0; j < 8; ++j) acc[j] += a * swizzled(bs, k, c0 + j);
  }
}

extern "C" __global__ void sgemm_tma_ring(int M, int N, int K, float alpha, const __grid_constant__ TensorMap tmA,
                                          const __grid_constant__ TensorMap tmB, float beta, float* C) {
  __shared__ unsigned long long full[STAGES];   // full[s]: stage s's copies have landed
  __shared__ unsigned long long empty[STAGES];  // empty[s]: the consumers are done with stage s
  extern __shared__ __align__(128) float smem[];
  // the first stage at a multiple of 1024 bytes, as the 128-byte swizzle needs
  float* const stages = smem + (1024 - static_cast<unsigned>(__cvta_generic_to_shared(smem)) % 1024) % 1024 / 4;
  const int tid = threadIdx.x, tileRow = blockIdx.y, tileCol = blockIdx.x;
  const int numK = (K + BK - 1) / BK;  // k-tiles: k-tile kt goes through stage kt % STAGES, in round kt / STAGES

  // 1: a full barrier's phase: the producer's one arrival (with the bytes); an empty one's: 128 consumers
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], CONSUMERS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();  // the barriers are set up before anyone uses them

  if (tid < 32) {  // ---- the producer ----
    if (tid == 0) {
      // 2: round 0 waits for parity 1, the phase "before" the first, which counts as complete: no wait
      for (int kt = 0; kt < numK; ++kt) {
        const int s = kt % STAGES;
        mbarrier_wait(&empty[s], ((kt / STAGES) & 1) ^ 1);
        mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
        copy_stage(stages + s * STAGE_FLOATS, &tmA, &tmB, &full[s], tileRow, tileCol, kt);
      }
    }
    return;
  }
  // ---- the consumers: thread c computes row c / 4 of the tile, columns (c % 4) * 8 .. + 7 ----
  const int c = tid - 32, r = c / 4, c0 = (c % 4) * 8;
  float acc[8] = {};
  // 3: round n of a stage is its full barrier's phase n, of parity n & 1
  for (int kt = 0; kt < numK; ++kt) {
    const int s = kt % STAGES;
    mbarrier_wait(&full[s], (kt / STAGES) & 1);
    multiply_stage(stages + s * STAGE_FLOATS, r, c0, acc);
    mbarrier_arrive(&empty[s]);
  }

  const int row = tileRow * BM + r;
  for (int j = 0; j < 8; ++j) {
    const int col = tileCol * BN + c0 + j;
    if (row < M && col < N) C[row * N + col] = alpha * acc[j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

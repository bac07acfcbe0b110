// Stage 04: 1D thread tiling.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 03_smem_tiling: a thread computes TM results of C instead of one, TM rows
// down one column of the block tile. For each step k it reads one value of B from shared memory
// into a register and uses it TM times, so a shared load now feeds TM/(TM+1) multiply-adds
// instead of 1/2. The block tile is no longer the block's shape: BM x BN outputs, BM*BN/TM
// threads in one dimension, and the threads copy the BM x BK and BK x BN tiles in a few passes.
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN) staged in shared memory
//   TM      results per thread, down a column (BM % TM == 0)
// The block has BM*BN/TM threads (at most 1024), and both tiles are a whole number of passes
// of the block: (BM*BK) % threads == 0 and (BK*BN) % threads == 0.
// Preconditions: none (tiles at the edges are padded with zeros; every access is bounds-checked).
// Launch: block (BM*BN/TM), grid (ceil(N / BN), ceil(M / BM)).
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
    sgemm_1d_thread_tiling(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int NUM_THREADS = BM * BN / TM;
  static_assert(BM >= 1 && BN >= 1 && BK >= 1 && TM >= 1, "tile sizes are at least 1");
  static_assert(BM % TM == 0, "a column of the block tile splits into whole runs of TM rows");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 1024 threads: BM*BN/TM <= 1024");
  static_assert((BM * BK) % NUM_THREADS == 0, "the block copies the A tile in whole passes");
  static_assert((BK * BN) % NUM_THREADS == 0, "the block copies the B tile in whole passes");
  static_assert((BM + BN) * BK * sizeof(float) <= 48 * 1024, "static shared memory is at most 48 KiB");
  __shared__ float As[BM][BK];  // (BM, BK) tile of A
  __shared__ float Bs[BK][BN];  // (BK, BN) tile of B
  const int tid = threadIdx.x;
  const int threadCol = tid % BN;  // consecutive threads: consecutive columns
  const int threadRow = tid / BN;  // this thread owns rows threadRow*TM .. threadRow*TM + TM-1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM] = {};  // (TM,) results in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles in passes of NUM_THREADS elements: in each pass consecutive threads take
    // consecutive elements along a row (coalesced reads, conflict-free shared writes).
#pragma unroll
    for (int pass = 0; pass < BM * BK / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / BK, c = e % BK;  // (BM, BK) tile of A
      As[r][c] = (blockRow + r < M && k0 + c < K) ? A[(blockRow + r) * K + k0 + c] : 0.0f;
    }
#pragma unroll
    for (int pass = 0; pass < BK * BN / NUM_THREADS; ++pass) {
      const int e = pass * NUM_THREADS + tid;
      const int r = e / BN, c = e % BN;  // (BK, BN) tile of B
      Bs[r][c] = (k0 + r < K && blockCol + c < N) ? B[(k0 + r) * N + blockCol + c] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];  // one load of B, used TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[threadRow * TM + i][k] * b;
    }
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  const int col = blockCol + threadCol;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    if (row < M && col < N) C[row * N + col] = alpha * acc[i] + beta * (beta == 0.0f ? 0.0f : C[row * N + col]);
  }
}

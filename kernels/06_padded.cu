// Stage 06: bank conflicts, fixed by padding.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 05_2d_thread_tiling: each row of the A tile in shared memory is PAD floats
// longer than it needs to be, As[BM][BK + PAD]. When a warp holds several thread rows (8 x 8 thread
// tiles: 16 threads per row of C, so 2 thread rows per warp), its lanes read As[row][k] for rows
// TM apart; in 05 those words are TM*BK apart, a multiple of 32 for 8 x 8 x 8, so they sit in the
// same bank (a 2-way conflict). With rows BK + PAD floats long they are TM*(BK + PAD) apart:
// PAD = 1 makes the row length odd, and an odd multiple of TM is a multiple of 32 only for TM = 32,
// so the rows fall in different banks. PAD = 4, the usual choice for 16-byte alignment, does
// nothing here: 8 * (8 + 4) = 96 is again a multiple of 32.
// What it costs: BM*PAD floats of shared memory; odd rows are no longer 8-byte aligned, so the
// compiler merges As[row][k] and As[row][k + 1] into one 8-byte load only for every other row
// (more shared-load instructions for A); and the copy into As, conflict-free in 05, now
// conflicts 2-way, since a warp's 32 consecutive elements span more than 32 words. In 05's
// default 16 x 4 configuration a warp holds a single thread row, and its reads of A are
// broadcasts of one word.
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN) staged in shared memory
//   TM, TN  rows and columns of the thread tile (BM % TM == 0, BN % TN == 0)
//   PAD     unused floats at the end of each row of As (default 1)
// The block has BM*BN/(TM*TN) threads (at most 1024), and both tiles are a whole number of
// passes of the block: (BM*BK) % threads == 0 and (BK*BN) % threads == 0.
// Preconditions: none (tiles at the edges are padded with zeros; every access is bounds-checked).
// Launch: block (BM*BN/(TM*TN)), grid (ceil(N / BN), ceil(M / BM)).
template <int BM, int BN, int BK, int TM, int TN, int PAD = 1>
__global__ void __launch_bounds__(BM * BN / TM / TN)
    sgemm_padded(int M, int N, int K, float alpha, const float* __restrict__ A,
                 const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int NUM_THREADS = BM * BN / TM / TN;
  static_assert(BM >= 1 && BN >= 1 && BK >= 1 && TM >= 1 && TN >= 1, "tile sizes are at least 1");
  static_assert(PAD >= 0, "the padding is a number of floats, at least 0");
  static_assert(BM % TM == 0, "a column of the block tile splits into whole runs of TM rows");
  static_assert(BN % TN == 0, "a row of the block tile splits into whole runs of TN columns");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 1024 threads: BM*BN/(TM*TN) <= 1024");
  static_assert((BM * BK) % NUM_THREADS == 0, "the block copies the A tile in whole passes");
  static_assert((BK * BN) % NUM_THREADS == 0, "the block copies the B tile in whole passes");
  static_assert((BM * (BK + PAD) + BK * BN) * sizeof(float) <= 48 * 1024,
                "static shared memory is at most 48 KiB");
  __shared__ float As[BM][BK + PAD];  // (BM, BK) tile of A; the last PAD columns are never used
  __shared__ float Bs[BK][BN];        // (BK, BN) tile of B
  const int tid = threadIdx.x;
  const int threadCol = tid % (BN / TN);  // this thread owns columns threadCol*TN .. threadCol*TN + TN-1
  const int threadRow = tid / (BN / TN);  // and rows threadRow*TM .. threadRow*TM + TM-1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  float acc[TM][TN] = {};  // (TM, TN) results in registers
  float a[TM], b[TN];      // a column of A's tile and a row of B's tile, in registers
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles in passes of NUM_THREADS elements: in each pass consecutive threads take
    // consecutive elements along a row (coalesced reads).
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
    // Unrolled by 2, not fully: fully unrolled, the compiler moves the shared loads of all BK
    // steps ahead into registers (206 per thread for 128 x 128 x 16 with 16 x 4 thread tiles,
    // against 128 unrolled by 2), and an SM holds one block of 256 threads instead of two.
#pragma unroll 2
    for (int k = 0; k < BK; ++k) {
      // TM + TN shared loads, then TM * TN multiply-adds from registers. Every index into a, b
      // and acc is a compile-time constant once the loops unroll, so they stay in registers.
      // Rows threadRow*TM + i of the warp's thread rows now fall in different banks.
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[threadRow * TM + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][threadCol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + threadCol * TN + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i][j] + beta * (beta == 0.0f ? 0.0f : C[row * N + col]);
    }
  }
}

// Stage 07, step 1 of 3: 16-byte global accesses.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// What changed from 06_transposed_a: the copies into shared memory and the update of C move 4
// floats (16 bytes) per instruction where they can. The multiply loop is 06's.
// - Each thread copies runs of 4 consecutive floats of a row of A (and of B) with one 16-byte
//   load, and updates 4 consecutive elements of C with one 16-byte load and store: a quarter of
//   the instructions, each moving a whole 16-byte piece.
// - A's tile is still stored transposed, so a run of A becomes 4 stores of 4 bytes down a column
//   of As. Its rows are padded by 4 floats (as in 06_padded): two threads then store runs of the
//   same row of A 4 rows of As apart, in different banks, and every row stays 16-byte aligned.
// - A thread issues all its global loads of a tile before it stores any of them into shared
//   memory, so they wait for memory together, once per tile. (Storing each run as it arrives
//   makes the load of B wait for the load of A: two memory latencies per tile.)
// A 16-byte access must be 16-byte aligned. A run of 4 floats of A starting at (row, k), k a
// multiple of 4, is aligned when K % 4 == 0 (and A itself is); a run of B or C starting at
// (row, col), col a multiple of 4, when N % 4 == 0. The kernel checks this once per matrix; where
// it fails, and for runs that cross the edge of a matrix, it falls back to 4-byte accesses,
// each bounds-checked.
//
// Template parameters:
//   BM, BN  rows and columns of the block tile of C
//   BK      the depth of the tiles of A (BM x BK) and B (BK x BN) staged in shared memory
//   TM, TN  rows and columns of the thread tile, TN a multiple of 4 (BM % TM == 0, BN % TN == 0;
//           the stage's configuration asks TM to be one too, for the next step)
// The block has BM*BN/(TM*TN) threads (at most 1024); BK is a multiple of 4, and both tiles are a
// whole number of passes of the block in runs of 4: (BM*BK/4) % threads == 0 and
// (BK*BN/4) % threads == 0.
// Preconditions: none (tiles at the edges are padded with zeros; every access is bounds-checked;
// the 16-byte path is taken only where it is aligned. cudaMalloc and CuPy give 256-byte aligned
// arrays, so with K % 4 == 0 and N % 4 == 0 every global access of an interior tile is 16 bytes).
// Launch: block (BM*BN/(TM*TN)), grid (ceil(N / BN), ceil(M / BM)).

// The 4 floats p[0..3] of a row, of which the first `count` lie inside the matrix (the others
// read as 0): one 16-byte load when all 4 do and `aligned` says p is 16-byte aligned, else up
// to 4 checked 4-byte loads.
__device__ __forceinline__ float4 load4(const float* p, int count, bool aligned) {
  if (aligned && count >= 4) return *reinterpret_cast<const float4*>(p);
  return make_float4(count > 0 ? p[0] : 0.0f, count > 1 ? p[1] : 0.0f, count > 2 ? p[2] : 0.0f,
                     count > 3 ? p[3] : 0.0f);
}

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(BM * BN / TM / TN)
    sgemm_float4_copies(int M, int N, int K, float alpha, const float* __restrict__ A,
                        const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int NUM_THREADS = BM * BN / TM / TN;
  constexpr int THREAD_COLS = BN / TN;  // threads along a row of the tile
  constexpr int A_RUNS = BM * BK / 4 / NUM_THREADS;  // runs of 4 floats a thread copies per tile of A
  constexpr int B_RUNS = BK * BN / 4 / NUM_THREADS;  // and per tile of B
  static_assert(BM >= 1 && BN >= 1 && BK >= 1 && TM >= 1 && TN >= 1, "tile sizes are at least 1");
  static_assert(TN % 4 == 0, "a thread updates C in runs of 4 columns: TN % 4 == 0");
  static_assert(BK % 4 == 0, "the A tile's rows are copied in runs of 4 floats: BK % 4 == 0");
  static_assert(BM % TM == 0, "a column of the block tile splits into whole runs of TM rows");
  static_assert(BN % TN == 0, "a row of the block tile splits into whole runs of TN columns");
  static_assert(NUM_THREADS <= 1024, "a block holds at most 1024 threads: BM*BN/(TM*TN) <= 1024");
  static_assert((BM * BK / 4) % NUM_THREADS == 0, "the block copies the A tile in whole passes of runs of 4");
  static_assert((BK * BN / 4) % NUM_THREADS == 0, "the block copies the B tile in whole passes of runs of 4");
  static_assert((BM + BN) * BK * sizeof(float) <= 48 * 1024, "static shared memory is at most 48 KiB");
  __shared__ __align__(16) float As[BK][BM + 4];  // (BM, BK) tile of A, transposed: As[k][m] is A's (m, k)
  __shared__ __align__(16) float Bs[BK][BN];  // (BK, BN) tile of B
  const int tid = threadIdx.x;
  const int threadCol = tid % THREAD_COLS;  // this thread owns columns threadCol*TN .. threadCol*TN + TN-1
  const int threadRow = tid / THREAD_COLS;  // and rows threadRow*TM .. threadRow*TM + TM-1
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // Whether a run of 4 floats starting at a multiple of 4 is 16-byte aligned, per matrix.
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  float acc[TM][TN] = {};  // (TM, TN) results in registers

  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles at depth k0 into As and Bs, in passes of NUM_THREADS runs of 4 floats:
    // consecutive threads take consecutive runs along a row (coalesced reads).
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // what the tiles hold past the edges
    float4 va[A_RUNS], vb[B_RUNS];
#pragma unroll
    for (int i = 0; i < A_RUNS; ++i) {  // A's (row, col .. col+3)
      const int e = i * NUM_THREADS + tid;
      const int row = blockRow + e / (BK / 4), col = k0 + e % (BK / 4) * 4;
      const float* p = &A[row * K + col];
      va[i] = row < M ? load4(p, K - col, alignedA) : zero;
    }
#pragma unroll
    for (int i = 0; i < B_RUNS; ++i) {  // B's (row, col .. col+3)
      const int e = i * NUM_THREADS + tid;
      const int row = k0 + e / (BN / 4), col = blockCol + e % (BN / 4) * 4;
      const float* p = &B[row * N + col];
      vb[i] = row < K ? load4(p, N - col, alignedB) : zero;
    }
    // Only now the stores, which wait for the loads.
#pragma unroll
    for (int i = 0; i < A_RUNS; ++i) {
      const int e = i * NUM_THREADS + tid;
      const int r = e / (BK / 4), c = e % (BK / 4) * 4;  // (r, c .. c+3) of the tile
      As[c + 0][r] = va[i].x;  // transposed: 4 stores, down column r of As
      As[c + 1][r] = va[i].y;
      As[c + 2][r] = va[i].z;
      As[c + 3][r] = va[i].w;
    }
#pragma unroll
    for (int i = 0; i < B_RUNS; ++i) {
      const int e = i * NUM_THREADS + tid;
      *reinterpret_cast<float4*>(&Bs[e / (BN / 4)][e % (BN / 4) * 4]) = vb[i];
    }
    __syncthreads();  // the tiles are complete before anyone reads them
    // The BK steps of one pair of tiles, as in 06_transposed_a: per step, TM + TN shared loads
    // (the compiler merges contiguous ones into wider loads), then TM * TN multiply-adds.
    float a[TM], b[TN];  // the thread's values of A and of B for one step k
#pragma unroll 2
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][threadRow * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][threadCol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  // acc[i][j] belongs to row threadRow*TM + i of the block tile and to column threadCol*TN + j;
  // C is updated 4 columns at a time.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    if (row >= M) continue;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const int col = blockCol + threadCol * TN + g * 4;
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

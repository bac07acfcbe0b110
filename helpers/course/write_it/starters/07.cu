// Exercise 07 · vectorized access. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 256 and grid (ceil(N/64), ceil(M/64)): each thread computes a 4 x 4 tile of C.
// Given: the tiles' layout, which run of 4 floats each thread copies, the multiply-adds. Yours: moving 16 bytes
// with one instruction wherever the run allows it. This starter compiles and runs, but computes nothing yet:
// write the three TODO blocks.
#define BM 64  // rows of C per block
#define BN 64  // columns of C per block
#define BK 16  // steps of k per tile

// The 4 floats p[0..3] of a row, of which the first `count` lie inside the matrix (the others read as 0).
__device__ float4 load4(const float* p, int count, bool aligned) {
  // TODO 1: where the run is aligned and all 4 of its floats lie inside the row, return them with one
  //         16-byte load instead of four 4-byte ones. The 4-byte loads below are for every other run.

  return make_float4(count > 0 ? p[0] : 0.0f, count > 1 ? p[1] : 0.0f, count > 2 ? p[2] : 0.0f,
                     count > 3 ? p[3] : 0.0f);
}

extern "C" __global__ void sgemm_vectorized(int M, int N, int K, float alpha, const float* A, const float* B,
                                            float beta, float* C) {
  __shared__ __align__(16) float As[BM][BK];  // the block's tile of A: its 64 rows x 16 steps of k
  __shared__ __align__(16) float Bs[BK][BN];  // the block's tile of B: 16 steps of k x its 64 columns
  const int tid = threadIdx.x;
  const int ty = tid / 16, tx = tid % 16;      // this thread's results: rows 4*ty .. +3, columns 4*tx .. +3
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // A run of 4 floats starting at a multiple of 4 is 16-byte aligned where the rows are (and the array is).
  const bool alignedA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool alignedB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  const bool alignedC = N % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
  // The run of 4 floats this thread copies of each tile: As[ar][ac .. ac+3] and Bs[br][bc .. bc+3].
  const int ar = tid / (BK / 4), ac = tid % (BK / 4) * 4;
  const int br = tid / (BN / 4), bc = tid % (BN / 4) * 4;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    // TODO 2: copy this thread's run of 4 floats of A into its place in As, and its run of B into Bs
    //         (the places named above), each with one call of load4 and one 16-byte store into shared
    //         memory. load4 wants how many floats of the run's row remain from the run's first one; a run
    //         in a row past the end of A or B is all zeros.

    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < BK; ++k) {
      const float4 b = *reinterpret_cast<const float4*>(&Bs[k][4 * tx]);
      for (int i = 0; i < 4; ++i) {
        const float a = As[4 * ty + i][k];
        acc[i][0] += a * b.x;
        acc[i][1] += a * b.y;
        acc[i][2] += a * b.z;
        acc[i][3] += a * b.w;
      }
    }
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  for (int i = 0; i < 4; ++i) {
    const int row = blockRow + 4 * ty + i, col = blockCol + 4 * tx;
    if (row >= M) continue;
    float* p = &C[row * N + col];
    if (alignedC && col + 4 <= N) {
      // TODO 3: update these 4 elements of C with one 16-byte load of C, made only where beta is not 0
      //         (with beta 0, C is not read), and one 16-byte store of the 4 new values.

    } else {  // the edge of C, or rows that are not 16-byte aligned: 4-byte accesses
      for (int j = 0; j < 4; ++j)
        if (col + j < N) p[j] = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * p[j]);
    }
  }
}

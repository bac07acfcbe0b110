// Experiment on stage 03 (not a course stage): shared-memory tiling with blocks ordered down the rows of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
// What changed from 02_naive_coalesced: the block's TILE x TILE threads first copy a
// TILE x TILE tile of A and one of B into shared memory (one element each, coalesced), wait,
// and then each thread takes its TILE multiply-adds from shared memory. Each element loaded
// from global memory is used TILE times instead of once.
//
// Template parameter: TILE, the side of the square tile and of the block (TILE * TILE <= 1024).
// Preconditions: none (tiles at the edges are padded with zeros; every access is bounds-checked).
// Launch: block (TILE, TILE), grid (ceil(M / TILE), ceil(N / TILE)).
template <int TILE>
__global__ void sgemm_smem_tiling_rows_along_x(int M, int N, int K, float alpha, const float* __restrict__ A,
                                  const float* __restrict__ B, float beta, float* __restrict__ C) {
  static_assert(TILE >= 1 && TILE * TILE <= 1024, "a TILE x TILE block holds at most 1024 threads");
  __shared__ float As[TILE][TILE];  // (TILE, TILE) tile of A: rows of C x steps of k
  __shared__ float Bs[TILE][TILE];  // (TILE, TILE) tile of B: steps of k x columns of C
  const int tx = threadIdx.x, ty = threadIdx.y;
  // Experiment: consecutive blocks (blockIdx.x) walk DOWN the rows of C, as siboehm's kernel 3
  // does, so the blocks in flight together share B's column panel instead of A's row panel.
  const int col = blockIdx.y * TILE + tx;  // consecutive threads: consecutive columns
  const int row = blockIdx.x * TILE + ty;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// Stage 02: naive SGEMM, one thread per element of C (the uncoalesced mapping).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// Thread x of the grid picks the row of C and thread y the column. The 32 threads of a warp
// have consecutive threadIdx.x, so they walk DOWN a column of C: their loads of A and their
// stores to C are K and N floats apart, one memory sector each. Stage 02's coalesced variant
// swaps the two lines that say so.
//
// Preconditions: none (every access is bounds-checked).
// Launch: block (BX, BY) chosen at run time; grid (ceil(M / BX), ceil(N / BY)).
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive rows
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];  // row of A . column of B
    C[row * N + col] = alpha * acc + beta * (beta == 0.0f ? 0.0f : C[row * N + col]);
  }
}

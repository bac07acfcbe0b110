// Stage 02: naive SGEMM, one thread per element of C (the coalesced mapping).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N (not read if beta = 0).
// Thread x of the grid picks the COLUMN of C and thread y the row. The 32 threads of a warp
// have consecutive threadIdx.x, so they walk ALONG a row of C: their loads of B and stores to C
// are neighbours, 32 floats in four 32-byte sectors, and all read the same element of A (a broadcast).
// What changed from 02_naive: only the two lines that pick row and col.
//
// Preconditions: none (every access is bounds-checked).
// Launch: block (BX, BY) chosen at run time; grid (ceil(N / BX), ceil(M / BY)).
__global__ void sgemm_naive_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                                      const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive columns
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];  // row of A . column of B
    C[row * N + col] = alpha * acc + beta * (beta == 0.0f ? 0.0f : C[row * N + col]);
  }
}

// Exercise 02 · the coalesced naive kernel. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block (32, 32) and grid (ceil(N/32), ceil(M/32)): one thread per element of C.
// This starter compiles and runs, but computes nothing yet: fill in the four TODO blocks.

extern "C" __global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float* A, const float* B,
                                           float beta, float* C) {
  // TODO 1: this thread's element of C. Consecutive threadIdx.x must take consecutive COLUMNS of C,
  //         so that the 32 lanes of a warp load neighbouring elements of B and store neighbouring elements of C.
  const int row = 0;
  const int col = 0;

  // TODO 2: the grid is rounded up: a thread whose (row, col) lies outside C must do nothing.

  float acc = 0.0f;
  // TODO 3: acc = row `row` of A times column `col` of B (k = 0 .. K - 1); A[row][k] is A[row * K + k].

  // TODO 4: write alpha * acc + beta * C[row][col] to C[row][col], without reading C when beta == 0.

}

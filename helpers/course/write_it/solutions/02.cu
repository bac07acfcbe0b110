// Exercise 02 · the coalesced naive kernel. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block (32, 32) and grid (ceil(N/32), ceil(M/32)): one thread per element of C.
// The solution: the starter with its four TODO blocks filled in.

extern "C" __global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float* A, const float* B,
                                           float beta, float* C) {
  // 1: consecutive threadIdx.x, consecutive columns
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;

  // 2: threads outside C do nothing
  if (row >= M || col >= N) return;

  float acc = 0.0f;
  // 3: row of A times column of B
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];

  // 4: C is read only when beta != 0
  C[row * N + col] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
}

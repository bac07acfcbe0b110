// Exercise 11 · split-K. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Two kernels. splitk_partial is launched with block (16, 16) and grid (ceil(N/16), ceil(M/16), S): the
// blocks of layer z of the grid multiply only slice z of K, and write their raw sums (no alpha, no beta) to
// slice z of `partial`, an S x M x N workspace. splitk_reduce, launched after it with block 256 and grid
// ceil(M·N/256), finishes C from the S slices. The check runs every shape twice and wants the same bits.
// Given, because it is not this stage's lesson: stage 03's tiled product over a range of K.
// The solution: the starter with its three TODO blocks written.
#define TILE 16

extern "C" __global__ void splitk_partial(int M, int N, int K, const float* A, const float* B, float* partial) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;  // this thread's element of C

  // 1: ceil(tiles / S) whole tiles per slice, the last slices shorter or empty
  const int tiles = (K + TILE - 1) / TILE, perSlice = (tiles + gridDim.z - 1) / gridDim.z;
  const int kBegin = min(K, (int)blockIdx.z * perSlice * TILE), kEnd = min(K, kBegin + perSlice * TILE);

  float acc = 0.0f;
  for (int k0 = kBegin; k0 < kEnd; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < kEnd) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < kEnd && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }

  // 2: slice z's part of the workspace
  if (row < M && col < N) partial[(size_t)blockIdx.z * M * N + (size_t)row * N + col] = acc;
}

extern "C" __global__ void splitk_reduce(int M, int N, int S, float alpha, const float* partial, float beta,
                                         float* C) {
  // 3: the slices added in the order 0, 1, ..., S - 1: the same bits at every run
  const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x, size = (size_t)M * N;
  if (e >= size) return;
  float sum = 0.0f;
  for (int z = 0; z < S; ++z) sum += partial[z * size + e];
  C[e] = alpha * sum + (beta == 0.0f ? 0.0f : beta * C[e]);
}

// Exercise 11 · split-K. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Two kernels. splitk_partial is launched with block (16, 16) and grid (ceil(N/16), ceil(M/16), S): the
// blocks of layer z of the grid multiply only slice z of K, and write their raw sums (no alpha, no beta) to
// slice z of `partial`, an S x M x N workspace. splitk_reduce, launched after it with block 256 and grid
// ceil(M·N/256), finishes C from the S slices. The check runs every shape twice and wants the same bits.
// Given, because it is not this stage's lesson: stage 03's tiled product over a range of K.
// Yours: the slices, and the reduction. This starter compiles and runs, but computes nothing yet: write the
// three TODO blocks.
#define TILE 16

extern "C" __global__ void splitk_partial(int M, int N, int K, const float* A, const float* B, float* partial) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;  // this thread's element of C

  // TODO 1: this block's slice of K, from blockIdx.z and gridDim.z: a run of whole tiles of TILE steps,
  //         the slices of the gridDim.z layers together covering K exactly once. The last slices may get
  //         fewer tiles than the others, or none.
  const int kBegin = 0, kEnd = 0;

  float acc = 0.0f;
  for (int k0 = kBegin; k0 < kEnd; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < kEnd) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < kEnd && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }

  // TODO 2: the raw sum into this slice's M x N part of partial, for an element inside C. Every slice
  //         writes its part, a slice with no tile of K too: the reduction reads them all.

}

extern "C" __global__ void splitk_reduce(int M, int N, int S, float alpha, const float* partial, float beta,
                                         float* C) {
  // TODO 3: one thread per element of C, consecutive threads on consecutive elements: add the S slices'
  //         sums in one fixed order, then write alpha times the sum, plus beta times the old element only
  //         where beta is not zero. A fixed order gives the same bits at every run; an atomic add would not.

}

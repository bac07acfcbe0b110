// Exercise 10 · TF32 tensor cores. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 128 and grid (ceil(N/32), ceil(M/32)): 4 warps, each computing one 16 x 16 tile of
// the block's 32 x 32 tile of C with wmma's TF32 m16n16k8 (a GPU needs sm_80 or later).
// Given: the tiles' copies, and the stores of C from each warp's staging tile. Yours: the tensor cores'
// fragments and products. This starter compiles and runs, but multiplies nothing yet: write the three TODO
// blocks.
#include <mma.h>
using namespace nvcuda;

#define BM 32  // rows of C per block
#define BN 32  // columns of C per block
#define BK 8   // steps of k per tile: one mma_sync's k

extern "C" __global__ void sgemm_tensor_cores(int M, int N, int K, float alpha, const float* A, const float* B,
                                              float beta, float* C) {
  // wmma reads and writes through 32-byte aligned pointers, with rows a multiple of 4 floats.
  __shared__ __align__(32) float As[BM][BK];      // A's tile: As[m][k] = A[blockRow + m][k0 + k]
  __shared__ __align__(32) float Bs[BK][BN];      // B's tile: Bs[k][n] = B[k0 + k][blockCol + n]
  __shared__ __align__(32) float Cs[4][16][16];   // each warp's 16 x 16 results, on their way to C
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / 2, warpCol = warp % 2;  // the warp's tile: rows warpRow*16 .., columns warpCol*16 ..
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // TODO 1: the warp's accumulator: a wmma fragment of 16 x 16 floats (m16n16k8) spread over the warp's
  //         32 lanes, filled with zeros.

  for (int k0 = 0; k0 < K; k0 += BK) {
    // Each thread copies 2 elements of each tile (zeros outside A and B).
    for (int i = 0; i < BM * BK / 128; ++i) {
      const int e = i * 128 + tid, r = e / BK, c = e % BK;
      As[r][c] = blockRow + r < M && k0 + c < K ? A[(blockRow + r) * K + k0 + c] : 0.0f;
    }
    for (int i = 0; i < BK * BN / 128; ++i) {
      const int e = i * 128 + tid, r = e / BN, c = e % BN;
      Bs[r][c] = k0 + r < K && blockCol + c < N ? B[(k0 + r) * N + blockCol + c] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them
    // TODO 2: the warp's operands and one product on the tensor cores: a 16 x 8 fragment of A, TF32, from
    //         the warp's 16 rows of As, and an 8 x 16 fragment of B from its 16 columns of Bs, each loaded
    //         with load_matrix_sync (which wants the address of the fragment's first element and the
    //         floats per row of the array it reads), then mma_sync into the accumulator.

    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  // TODO 3: the accumulator into the warp's own staging tile in Cs, row-major with 16 floats per row, and
  //         a __syncwarp(): the whole tile is written before the warp's lanes read it below.

  // Lane l updates row l/2 of the warp's tile, columns (l%2)*8 .. +7, inside C.
  const int r = lane / 2, c0 = lane % 2 * 8;
  const int row = blockRow + warpRow * 16 + r;
  for (int j = 0; j < 8; ++j) {
    const int col = blockCol + warpCol * 16 + c0 + j;
    if (row < M && col < N)
      C[row * N + col] = alpha * Cs[warp][r][c0 + j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

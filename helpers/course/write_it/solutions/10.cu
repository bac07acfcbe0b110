// Exercise 10 · TF32 tensor cores. C = alpha·A·B + beta·C, row-major; with beta = 0, C is not read.
// Launched with block 128 and grid (ceil(N/32), ceil(M/32)): 4 warps, each computing one 16 x 16 tile of
// the block's 32 x 32 tile of C with wmma's TF32 m16n16k8 (a GPU needs sm_80 or later).
// The solution: the starter with its three TODO blocks filled in.
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
  // 1: the warp's accumulator fragment, 16 x 16 floats spread over its 32 lanes, zeroed
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
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
    // 2: the warp's 16 x 8 fragment of A and 8 x 16 fragment of B, rounded to TF32, and one mma_sync
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::load_matrix_sync(a, &As[warpRow * 16][0], BK);
    wmma::load_matrix_sync(b, &Bs[0][warpCol * 16], BN);
    for (int e = 0; e < a.num_elements; ++e) a.x[e] = wmma::__float_to_tf32(a.x[e]);
    for (int e = 0; e < b.num_elements; ++e) b.x[e] = wmma::__float_to_tf32(b.x[e]);
    wmma::mma_sync(acc, a, b, acc);
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  // 3: the fragment into the warp's staging tile, complete before its lanes read it
  wmma::store_matrix_sync(&Cs[warp][0][0], acc, 16, wmma::mem_row_major);
  __syncwarp();
  // Lane l updates row l/2 of the warp's tile, columns (l%2)*8 .. +7, inside C.
  const int r = lane / 2, c0 = lane % 2 * 8;
  const int row = blockRow + warpRow * 16 + r;
  for (int j = 0; j < 8; ++j) {
    const int col = blockCol + warpCol * 16 + c0 + j;
    if (row < M && col < N)
      C[row * N + col] = alpha * Cs[warp][r][c0 + j] + (beta == 0.0f ? 0.0f : beta * C[row * N + col]);
  }
}

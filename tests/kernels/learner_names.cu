// Test kernel: a learner's own macros and type names, all of which NVRTC accepts, must not reach
// the CPU emulator's own code (its headers, the bodies of its macros, the lines it adds after the
// kernel). The names are those the emulator's code used for itself.
//
// Before the CUDA headers: names NVIDIA's <mma.h> and <cuda_pipeline.h> leave alone.
#define M 16
#define K 8
#define L 2
#define LA 3
#define LB 4
#define E 5
#define P 6
#define V 7
#define I 8
#define Sized 9
#define tid 10
#define lane 11
#define warp 12
#define linear 13
#define invoke 14
#define params 15
#define call 16
#define param 17
#define category 18
#define type_name 19
#define detail 20
#define Exchange 21
#define exchange 22
#define slots 23
#define tf32_bits 24
#define a_pos 25
#define check 26
#define acc 27
#define col 28
#define e 29
#define r 30
#define u 31
#define out 33
#define is_same 34
#define memcpy 35
#define fma 36
#define expf 37
#define logf 38
#define no_sanitize 39
#define fence 40
#define commit_group 41
#define wait_group 42
#define m64k8_tf32 43
#define desc 44
#define EMU_FENCE 45
#define EMU_WMMA_CHECK 46
#define EmuEntry 47
#define EmuParam 48
#include <cuda_pipeline.h>
#include <mma.h>
#include "wgmma.cuh"

// After them, right above the kernel, as a learner writes them.
#define T 16
#define N 64
#define BLOCK 32
#define a 49
#define b 50
#define c 51
#define d 52
#define f 53
#define p 54
#define ldm 55
#define layout 56
#define mask 57
#define width 58
#define src 59
#define size 60
#define prior 61
#define count 62
#define value 63
#define var 64
#define pending 65
#define tile 66
#define Use 67
#define Layout 68
#define PENDING 69
typedef float real;
struct Entry { int first_, last_; };
struct Matrix { const float* data_; int rows_, cols_; };

// One block of 64 threads. in_: A (16 x 8) then B (8 x 16), row-major, small integers (exact in
// TF32). out_[0..255] = A B (warp 0, wmma), out_[256 + t] = the sum of dyn_ over t's warp + 1,
// out_[320] = 64 (one atomicAdd per thread), out_[321] = T + N + BLOCK.
__global__ void __launch_bounds__(64) learner_names(const float* __restrict__ in_, float* __restrict__ out_) {
  __shared__ __align__(32) float as_[16 * 8];
  __shared__ __align__(32) float bs_[8 * 16];
  __shared__ __align__(32) float cs_[16 * 16];
  extern __shared__ float dyn_[];
  const int t_ = threadIdx.x;
  const Matrix in_a_ = {in_, 16, 8}, in_b_ = {in_ + 128, 8, 16};
  for (int i_ = t_; i_ < 128; i_ += blockDim.x) {
    __pipeline_memcpy_async(&as_[i_], &in_a_.data_[i_], 4);
    __pipeline_memcpy_async(&bs_[i_], &in_b_.data_[i_], 4);
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  dyn_[t_] = (real)t_;
  __syncthreads();
  if (t_ < 32) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa_;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb_;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc_;
    wmma::fill_fragment(fc_, 0.0f);
    wmma::load_matrix_sync(fa_, as_, 8);
    wmma::load_matrix_sync(fb_, bs_, 16);
    wmma::mma_sync(fc_, fa_, fb_, fc_);
    wmma::store_matrix_sync(cs_, fc_, 16, wmma::mem_row_major);
  }
  __syncthreads();
  const Entry range_ = {t_, 256};
  for (int i_ = range_.first_; i_ < range_.last_; i_ += blockDim.x) out_[i_] = cs_[i_];
  real s_ = dyn_[t_];
#pragma unroll
  for (int o_ = 16; o_ > 0; o_ /= 2) s_ += __shfl_xor_sync(0xffffffffu, s_, o_);
  __syncwarp();
  out_[256 + t_] = s_ + __expf(0.0f);
  atomicAdd(&out_[320], 1.0f);
  if (t_ == 0) out_[321] = (real)(T + N + BLOCK);
}

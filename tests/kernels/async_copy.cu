// Asynchronous copies (<cuda_pipeline.h>) on the emulator: tests/emulator/test_async_copy.py.
#include <cuda_pipeline.h>

// Each thread copies 4 floats into shared memory, waits, and after a barrier reads a float
// another thread copied.
__global__ void rotate(const float* src, float* out) {
  __shared__ float s[1024];
  const int t = threadIdx.x, n = blockDim.x * 4;
  __pipeline_memcpy_async(&s[4 * t], &src[blockIdx.x * n + 4 * t], 16);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  for (int i = 0; i < 4; ++i) out[blockIdx.x * n + 4 * t + i] = s[(4 * t + i + 4) % n];
}

// One copy of `size` bytes with `zfill` of them zero-filled, into a 16-byte slot set to -1 first.
__global__ void copy_one(const float* src, float* out, int size, int zfill) {
  __shared__ float s[4];
  for (int i = 0; i < 4; ++i) s[i] = -1.0f;
  __pipeline_memcpy_async(s, src, size, zfill);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) out[i] = s[i];
}

// Thread t copies src[4t .. 4t+3]: the last thread of a launch with n = 4 * threads - 2 runs off
// the end of src.
__global__ void past_the_end(const float* src, float* out, int n) {
  __shared__ float s[1024];
  const int t = threadIdx.x;
  __pipeline_memcpy_async(&s[4 * t], &src[4 * t], 16);  // LINE: oob
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[t] = s[4 * t];
}

// A 16-byte copy from an address that is 4 bytes past a multiple of 16.
__global__ void misaligned(const float* src, float* out) {
  __shared__ float s[8];
  __pipeline_memcpy_async(s, src + 1, 16);  // LINE: misaligned
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[0] = s[0];
}

// Reads the copied float before waiting for it: the shared float still holds what it held.
__global__ void read_before_wait(const float* src, float* out) {
  __shared__ float s[32];
  const int t = threadIdx.x;
  __pipeline_memcpy_async(&s[t], &src[t], 4);
  __pipeline_commit();
  out[t] = s[t];
  __pipeline_wait_prior(0);
  out[32 + t] = s[t];
}

// Groups: three copies in three groups; wait_prior(n) lands all but the n most recent groups.
__global__ void groups(const float* src, float* out, int prior) {
  __shared__ float s[3];
  for (int g = 0; g < 3; ++g) {
    s[g] = 0.0f;
    __pipeline_memcpy_async(&s[g], &src[g], 4);
    __pipeline_commit();
  }
  __pipeline_wait_prior(prior);
  for (int g = 0; g < 3; ++g) out[g] = s[g];
}

// Sums a column of `tiles` tiles of blockDim.x floats through a STAGES-deep ring of shared
// buffers: tile t is waited for with wait_prior(STAGES - 2), then a barrier, then its buffer is
// read by the neighbouring thread. WAIT is the count the kernel passes (STAGES - 2 is right).
template <int STAGES, int WAIT, bool BARRIER>
__global__ void ring(const float* src, float* out, int tiles) {
  __shared__ float s[STAGES][256];
  const int t = threadIdx.x, n = blockDim.x;
  for (int p = 0; p < STAGES - 1; ++p) {
    if (p < tiles) __pipeline_memcpy_async(&s[p][t], &src[p * n + t], 4);
    __pipeline_commit();
  }
  float sum = 0.0f;
  for (int i = 0; i < tiles; ++i) {
    __pipeline_wait_prior(WAIT);
    if (BARRIER) __syncthreads();
    const int next = i + STAGES - 1;
    if (next < tiles) __pipeline_memcpy_async(&s[next % STAGES][t], &src[next * n + t], 4);  // LINE: ring_copy
    __pipeline_commit();
    sum += s[i % STAGES][(t + 1) % n];  // LINE: ring_read
  }
  out[t] = sum;
}

// The destination is a global array, not shared memory.
__global__ void global_destination(const float* src, float* out) {
  __pipeline_memcpy_async(out, src, 4);  // LINE: global_dst
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

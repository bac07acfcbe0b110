// Test kernels: templates, __device__ functions, #pragma unroll, 3-D indices, printf.

template <int F>
__global__ void scale(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * (float)F;
}

template <typename T>
__global__ void add_one(T* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + (T)1;
}

__device__ int square(int x) { return x * x; }
__device__ __forceinline__ int cube(int x) { return x * square(x); }
template <int N>
__device__ int power_sum(int x) {  // x^1 + ... + x^N (mod 2^32)
  int acc = 0, p = 1;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    p *= x;
    acc += p;
  }
  return acc;
}

// out[i] = square(x) + cube(x) + power_sum<4>(x) + (x + 0 + 1 + ... + 7) with an unrolled loop.
__global__ void helpers_unroll(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int x = in[i];
  int acc = square(x) + cube(x) + power_sum<4>(x);
#pragma unroll 4
  for (int k = 0; k < 8; ++k) acc += x + k;
  out[i] = acc;
}

// Records all twelve built-in index values of every thread of a 3-D grid of 3-D blocks.
__global__ void ids3d(int* out) {
  const int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const int g = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  int* o = out + 12 * g;
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = blockIdx.x;  o[4] = blockIdx.y;  o[5] = blockIdx.z;
  o[6] = blockDim.x;  o[7] = blockDim.y;  o[8] = blockDim.z;
  o[9] = gridDim.x;   o[10] = gridDim.y;  o[11] = gridDim.z;
}

__global__ void hello(int* out) {
  if (threadIdx.x == 3 && blockIdx.x == 1) printf("hello from thread %d of block %d\n", threadIdx.x, blockIdx.x);
  out[blockIdx.x * blockDim.x + threadIdx.x] = 7;
}

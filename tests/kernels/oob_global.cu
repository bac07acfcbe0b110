// Safety test kernels: out-of-bounds global memory accesses. The comments `// LINE: tag`
// mark the statements the emulator's reports must name; the tests look them up.

// Stores C[i] = 1 for every i <= n: one store past the end, C[n], by global thread n.
__global__ void store_past_end(float* C, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) {
    C[i] = 1.0f;  // LINE: store_past_end
  }
}

// out[i] = A[i - 1]: global thread 0 loads A[-1], before the start of A.
__global__ void load_before_start(const float* A, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = A[i - 1] + 1.0f;  // LINE: load_before_start
  }
}

// A store far past the end (a whole row too far): beyond the precisely reported redzone
// it must still be caught and attributed to the array.
__global__ void store_far(float* C, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 5) {
    C[i + stride] = 2.0f;  // LINE: store_far
  }
  if (i < n) C[i] += 1.0f;
}

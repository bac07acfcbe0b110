// Safety test kernels: out-of-bounds static and dynamic shared memory accesses.

// A tile of 32 floats indexed by threadIdx.x with 64 threads: thread 32 stores tile[32].
__global__ void static_shared_oob(float* out) {
  __shared__ float tile[32];
  tile[threadIdx.x] = (float)threadIdx.x;  // LINE: static_shared_oob
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x % 32];
}

// Two tiles in a template kernel: running off the end of As lands where Bs would follow on a
// GPU, and the emulator's redzone between them catches it.
template <int TILE>
__global__ void shared_overflow_into_next(float* out) {
  __shared__ float As[TILE];
  __shared__ float Bs[TILE];
  Bs[threadIdx.x % TILE] = 1.0f;
  As[threadIdx.x] = 2.0f;  // LINE: shared_overflow_into_next
  __syncthreads();
  out[threadIdx.x] = As[threadIdx.x % TILE] + Bs[threadIdx.x % TILE];
}

// Template kernels' shared memory starts as garbage too (NaN), never zero.
template <int TILE>
__global__ void template_shared_poison(float* out) {
  __shared__ float never_written[TILE];
  out[threadIdx.x] = never_written[threadIdx.x];
}

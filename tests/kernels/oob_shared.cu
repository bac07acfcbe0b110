// Safety test kernels: out-of-bounds static and dynamic shared memory accesses.

// A tile of 32 floats indexed by threadIdx.x with 64 threads: thread 32 stores tile[32].
__global__ void static_shared_oob(float* out) {
  __shared__ float tile[32];
  tile[threadIdx.x] = (float)threadIdx.x;  // LINE: static_shared_oob
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x % 32];
}

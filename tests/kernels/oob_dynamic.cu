// Safety test kernel: out-of-bounds dynamic shared memory. Launched with shared_mem of n
// floats, it reads dyn[n] in thread n.
__global__ void dynamic_shared_oob(float* out, int n) {
  extern __shared__ float dyn[];
  if (threadIdx.x < n) dyn[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = dyn[threadIdx.x];  // LINE: dynamic_shared_oob
}

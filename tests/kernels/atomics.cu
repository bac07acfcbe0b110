// Test kernels: atomics in global and shared memory, from many blocks at once.

// counters[0] += 1 per thread (int), fcount[0] += 1.0f per thread, maximum[0] = max of values,
// winner: the first thread to swap -1 for its index; wins counts the threads that saw -1.
__global__ void atomics_global(const int* values, int* counters, float* fcount, int* maximum,
                               int* winner, int* wins) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&counters[0], 1);
  atomicAdd(&counters[1], values[g] % 7);
  atomicAdd(&fcount[0], 1.0f);
  atomicMax(&maximum[0], values[g]);
  const int old = atomicCAS(&winner[0], -1, g);
  if (old == -1) atomicAdd(&wins[0], 1);
}

// A per-block counter in shared memory; per_block[b] = sum over threads of (t % 3 + 1).
__global__ void atomics_shared(int* per_block) {
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  atomicAdd(&count, (int)threadIdx.x % 3 + 1);
  __syncthreads();
  if (threadIdx.x == 0) per_block[blockIdx.x] = count;
}

// A histogram in global memory: bins[values[g] % nbins] += 1.
__global__ void histogram(const int* values, unsigned int* bins, int nbins) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&bins[values[g] % nbins], 1u);
}

// Test kernels: block barriers, shared memory between blocks, __syncthreads_count/and/or.
// Device code only; compiles with the CPU emulator (g++) and with NVRTC (CuPy RawModule).

// Thread i writes s[i], the block synchronizes, thread i reads s[(i + 1) % n].
__global__ void exchange(const int* in, int* out) {
  __shared__ int s[256];
  const int n = blockDim.x;
  const int t = threadIdx.x;
  const int g = blockIdx.x * blockDim.x + t;
  s[t] = in[g];
  __syncthreads();
  out[g] = s[(t + 1) % n];
}

// Every block writes its own index into the whole of its shared array, synchronizes, and
// checks that the array still holds only its own values: blocks must not share memory.
__global__ void isolation(int* out) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  s[t] = (int)blockIdx.x * 1000 + t;
  __syncthreads();
  int ok = 1;
  for (int j = 0; j < (int)blockDim.x; ++j) ok &= (s[j] == (int)blockIdx.x * 1000 + j);
  __syncthreads();
  s[t] = -1;  // leave garbage behind for whichever block comes next
  out[blockIdx.x * blockDim.x + t] = ok ? (int)blockIdx.x : -1 - (int)blockIdx.x;
}

// Thread 0 writes one element (a different one in every block); every thread then reads its
// own element and stores it. Everything nobody wrote in this block is uninitialized.
__global__ void poison_static(float* out) {
  __shared__ float s[64];
  if (threadIdx.x == 0) s[blockIdx.x % 64] = (float)blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}

// The same for dynamic shared memory (sized by the launch's shared_mem).
__global__ void poison_dynamic(float* out) {
  extern __shared__ float dyn[];
  if (threadIdx.x == 0) dyn[blockIdx.x % blockDim.x] = (float)blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = dyn[threadIdx.x];
}

// __syncthreads_count / _and / _or of pred[global thread], one triple per block.
__global__ void sync_votes(const int* pred, int* out) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const int p = pred[g];
  const int count = __syncthreads_count(p);
  const int all = __syncthreads_and(p);
  const int any = __syncthreads_or(p);
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x + 0] = count;
    out[3 * blockIdx.x + 1] = all;
    out[3 * blockIdx.x + 2] = any;
  }
}

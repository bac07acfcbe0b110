// Safety test kernels: crashes.

// A wild pointer: thread 3 of block 1 stores through address 0x10.
__global__ void wild_pointer(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
  if (blockIdx.x == 1 && threadIdx.x == 3) {
    *(volatile int*)0x10 = 1;  // LINE: wild_pointer
  }
}

// Unbounded recursion with a 4 KiB frame: the thread's stack overflows.
__device__ int recurse(volatile char* prev, int depth) {
  volatile char frame[4096];
  frame[0] = (char)depth;
  frame[4095] = prev ? prev[0] : 0;
  if (depth == 0) return frame[0];
  return recurse(frame, depth - 1) + frame[4095];  // LINE: recurse
}
__global__ void stack_recursion(int* out, int depth) {
  out[threadIdx.x] = recurse(0, depth);
}

// A huge local array, touched all over: far more than a thread's stack.
__global__ void stack_big_array(int* out, int n) {
  volatile char big[1 << 20];
  for (int i = 0; i < (1 << 20); i += 4096) big[i] = (char)i;  // LINE: big_array
  out[threadIdx.x] = big[n];
}

// An endless loop on a flag that stays 0 (volatile: the compiler must read it every time).
__global__ void endless_loop(const int* flag, int* out) {
  volatile const int* f = flag;
  int spins = 0;
  while (f[0] == 0) {  // LINE: endless_loop
    ++spins;
  }
  out[threadIdx.x] = spins;
}

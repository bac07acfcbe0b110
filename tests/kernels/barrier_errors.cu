// Safety test kernels: barriers and warp collectives that not every thread reaches.

// __syncthreads inside a condition only half the block satisfies.
__global__ void divergent_syncthreads(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();  // LINE: divergent_syncthreads
  }
  out[threadIdx.x] = 1;
}

// Odd and even threads wait at two different __syncthreads.
__global__ void two_barriers(int* out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();  // LINE: two_barriers_even
  } else {
    __syncthreads();  // LINE: two_barriers_odd
  }
  out[threadIdx.x] = 1;
}

// Lanes 0-15 leave; the rest call __syncwarp with the full mask, naming the exited lanes.
__global__ void syncwarp_exited(int* out) {
  if (threadIdx.x % 32 < 16) return;
  __syncwarp();  // LINE: syncwarp_exited
  out[threadIdx.x] = 1;
}

// Lane 0 waits in __syncwarp for lane 1, which waits at __syncthreads for lane 0: deadlock.
__global__ void warp_deadlock(int* out) {
  if (threadIdx.x == 0) {
    __syncwarp(0x3u);  // LINE: warp_deadlock
  }
  __syncthreads();
  out[threadIdx.x] = 1;
}

// A shuffle whose mask (lanes 0-15) leaves the calling lanes 16-31 out.
__global__ void shuffle_bad_mask(const int* in, int* out) {
  int v = in[threadIdx.x];
  v = __shfl_sync(0x0000ffffu, v, threadIdx.x % 16);  // LINE: shuffle_bad_mask
  out[threadIdx.x] = v;
}

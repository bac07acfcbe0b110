// Test kernels: warp shuffles, votes, __syncwarp and warp reductions.

// One row of 32 results per shuffle kind, for each warp of the block:
// out[(warp * 4 + kind) * 32 + lane], kind 0 idx, 1 up, 2 down, 3 xor.
__global__ void shuffles(const int* in, int* out, int width, int src, int delta, int lane_mask) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int v = in[t];
  const int a = __shfl_sync(0xffffffffu, v, src + lane / width, width);
  const int b = __shfl_up_sync(0xffffffffu, v, delta, width);
  const int c = __shfl_down_sync(0xffffffffu, v, delta, width);
  const int d = __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
  int* row = out + warp * 4 * 32;
  row[0 * 32 + lane] = a;
  row[1 * 32 + lane] = b;
  row[2 * 32 + lane] = c;
  row[3 * 32 + lane] = d;
}

// Shuffles with the width argument left out (32), on 8-byte values: out[t] = in[t ^ 5] and
// out2[t] = in[lane 31 - lane of the same warp].
__global__ void shuffle_double(const double* in, double* out, double* out2) {
  const int t = threadIdx.x, lane = t % 32;
  const double v = in[t];
  out[t] = __shfl_xor_sync(0xffffffffu, v, 5);
  out2[t] = __shfl_sync(0xffffffffu, v, 31 - lane);
}

// Ballot, any and all over pred[t] for each warp (full mask), then again over the even lanes
// only (mask 0x55555555). out[warp * 6 + k].
__global__ void votes(const int* pred, unsigned int* out) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int p = pred[t];
  const unsigned ballot = __ballot_sync(0xffffffffu, p);
  const int any = __any_sync(0xffffffffu, p);
  const int all = __all_sync(0xffffffffu, p);
  if (lane == 0) {
    out[warp * 6 + 0] = ballot;
    out[warp * 6 + 1] = (unsigned)any;
    out[warp * 6 + 2] = (unsigned)all;
  }
  if (lane % 2 == 0) {
    const unsigned eb = __ballot_sync(0x55555555u, p);
    const int ea = __any_sync(0x55555555u, p);
    const int el = __all_sync(0x55555555u, p);
    if (lane == 0) {
      out[warp * 6 + 3] = eb;
      out[warp * 6 + 4] = (unsigned)ea;
      out[warp * 6 + 5] = (unsigned)el;
    }
  }
}

// Each lane writes its value to shared memory, the warp synchronizes with __syncwarp, and
// each lane reads its right neighbour's (within the warp).
__global__ void warp_rotate(const int* in, int* out) {
  __shared__ int s[1024];
  const int t = threadIdx.x, lane = t % 32, base = t - lane;
  s[t] = in[t] * 3;
  __syncwarp();
  const int right = s[base + (lane + 1) % 32];
  __syncwarp();
  s[t] = right;  // write again after the second barrier: nobody reads the old value any more
  __syncwarp();
  out[t] = s[base + (lane + 31) % 32];  // the left neighbour's right neighbour: our own *3
  out[blockDim.x + t] = right;
}

// Tree reductions with __shfl_down_sync: sums[warp] of in[t] over each warp.
__global__ void warp_sum_int(const int* in, int* sums) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) sums[t / 32] = v;
}

__global__ void warp_sum_float(const float* in, float* sums) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[t];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) sums[t / 32] = v;
}

// Butterfly all-reduce: every lane ends with the warp's maximum.
__global__ void warp_max_xor(const int* in, int* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  for (int m = 1; m < 32; m *= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, m));
  out[t] = v;
}

// Threads past n leave early; the survivors ask which lanes are still with them and sum their
// values over exactly those lanes with a ballot-sized shuffle reduction (the early-exit idiom).
__global__ void active_lanes(const int* in, int n, unsigned int* masks, int* sums) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned m = __activemask();
  masks[i] = m;
  int v = in[i];
  const int lane = threadIdx.x % 32, active = __popc(m);
  for (int offset = 16; offset > 0; offset /= 2) {
    // read only lanes in the mask: from an inactive lane a GPU returns an undefined value
    int other = __shfl_sync(m, v, min(lane + offset, active - 1));
    if (lane + offset < active) v += other;
  }
  if (lane == 0) sums[i / 32] = v;
}

// Test kernels: shared and global access patterns whose cost can be worked out by hand.
//
// tests/measure/test_memory.py traces them on the CPU emulator and checks helpers/measure/memory.py's bank
// conflicts, sectors, races and unwritten reads against the numbers derived in its comments; the
// `// LINE: tag` comments mark the lines it looks up. Every kernel has the course signature, so
// `python -m helpers trace tests/kernels/memory_patterns.cu --kernel NAME ...` runs them too.
// Launch: one warp, block 32 (race and race_fixed: block 64, two warps); grid 1;
// A and C of at least 4096 floats (--mnk 64,64,64).

// Shared memory: 32 banks of 4 bytes; word w sits in bank w % 32.
__global__ void shared_patterns(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ __align__(16) float s[1024];  // 32 x 32 words, filled from A
  __shared__ float padded[32][33];         // a transpose tile with one word of padding per row
  __shared__ float square[32][32];         // the same tile without it
  __shared__ float pairs[2][32];
  const int t = threadIdx.x;  // = the lane: one warp
  for (int j = 0; j < 32; ++j) s[j * 32 + t] = A[j * 32 + t];  // LINE: fill
  __syncthreads();
  const float2* s2 = reinterpret_cast<const float2*>(s);
  const float4* s4 = reinterpret_cast<const float4*>(s);
  float v = 0.0f;
  v += s[t];                                  // LINE: stride1
  v += s[2 * t];                              // LINE: stride2
  v += s[32 * t];                             // LINE: stride32
  v += s[7];                                  // LINE: broadcast
  const float2 a = s2[t];                     // LINE: float2
  const float4 b = s4[t];                     // LINE: float4
  const float4 c = s4[2 * t];                 // LINE: float4_stride2
  v += a.x + a.y + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w;
  for (int col = 0; col < 32; ++col) {
    const float x = s[col * 32 + t];  // lane t reads row col, column t: coalesced
    padded[t][col] = x;                         // LINE: transpose_padded
    square[t][col] = x;                         // LINE: transpose_square
  }
  pairs[t / 16][(t % 16) * 2] = v;              // LINE: two_way
  __syncthreads();
  C[t] = v + padded[t][0] + square[0][t] + pairs[0][2 * (t % 16)];
}

// Global memory moves 32-byte sectors (8 floats); the buffers start on a 256-byte boundary.
__global__ void global_patterns(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int t = threadIdx.x;  // = the lane: one warp
  float v = 0.0f;
  v += A[t];                                                 // LINE: coalesced
  v += A[32 * t];                                            // LINE: strided
  v += A[5];                                                 // LINE: same_element
  v += A[t + 1];                                             // LINE: off_by_one
  const float4 q = reinterpret_cast<const float4*>(A)[t];    // LINE: float4_coalesced
  C[t] = v + q.x + q.y + q.z + q.w;                          // LINE: store
}

// Each thread passes its value to its left neighbour through shared memory, but nothing makes
// the neighbour's write happen before the read: thread 31 reads the word thread 32 (another
// warp) writes.
__global__ void race(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = A[t];                                  // LINE: race_write
  C[t] = s[(t + 1) % blockDim.x];               // LINE: race_read
}

// The same with the barrier that orders the write before the read.
__global__ void race_fixed(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = A[t];
  __syncthreads();
  C[t] = s[(t + 1) % blockDim.x];
}

// Each thread sums a row of A into its own shared word, which nobody set to zero first: the
// first += reads whatever shared memory held. No race: each word has one thread.
__global__ void unwritten(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float sums[32];
  const int t = threadIdx.x;
  for (int k = 0; k < K; ++k) sums[t] += A[t * K + k];  // LINE: unwritten_read
  C[t] = sums[t];
}

// The same with the word zeroed first.
__global__ void unwritten_fixed(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float sums[32];
  const int t = threadIdx.x;
  sums[t] = 0.0f;
  for (int k = 0; k < K; ++k) sums[t] += A[t * K + k];
  C[t] = sums[t];
}

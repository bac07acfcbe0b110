// Test kernels: vector loads, dynamic shared memory, buffer alignment.

// Thread i loads in[4i..4i+3] as one float4, puts it in shared memory as a float4, reads its
// neighbour's float4 back as two float2, and stores both halves to out with float2 stores.
__global__ void vector_copy(const float* in, float* out) {
  __shared__ float4 s4[256];
  const int t = threadIdx.x, n = blockDim.x;
  const int g = blockIdx.x * blockDim.x + t;
  const float4 v = reinterpret_cast<const float4*>(in)[g];
  s4[t] = make_float4(v.x * 2.0f, v.y * 2.0f, v.z * 2.0f, v.w * 2.0f);
  __syncthreads();
  const float2* s2 = reinterpret_cast<const float2*>(s4);
  const int r = (t + 1) % n;
  const float2 lo = s2[2 * r], hi = s2[2 * r + 1];
  reinterpret_cast<float2*>(out)[2 * g] = lo;
  reinterpret_cast<float2*>(out)[2 * g + 1] = hi;
}

// Dynamic shared memory of n floats per block: the block loads n values (several per
// thread), synchronizes and writes them back reversed.
__global__ void dynamic_reverse(const float* in, float* out, int n) {
  extern __shared__ float dyn[];
  const float* src = in + blockIdx.x * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) dyn[i] = src[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = dyn[n - 1 - i];
}

// Each argument's address modulo 256 (cudaMalloc returns 256-byte-aligned memory).
__global__ void alignment(const float* a, const int* b, const double* c, unsigned char* d,
                          unsigned long long* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = (unsigned long long)a % 256;
    out[1] = (unsigned long long)b % 256;
    out[2] = (unsigned long long)c % 256;
    out[3] = (unsigned long long)d % 256;
  }
}

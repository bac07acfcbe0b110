"""Does NVRTC (through CuPy) find <cuda_pipeline.h> and build __pipeline_memcpy_async on this GPU?"""
import cupy as cp
src = r'''
#include <cuda_pipeline.h>
extern "C" __global__ void k(const float* g, float* out) {
  __shared__ float s[64];
  __pipeline_memcpy_async(&s[threadIdx.x * 4], &g[threadIdx.x * 4], 16);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x * 4 + 5) % 64];
}'''
try:
    m = cp.RawModule(code=src, options=("--std=c++17",))
    f = m.get_function("k")
    g = cp.arange(64, dtype=cp.float32)
    o = cp.zeros(16, cp.float32)
    f((1,), (16,), (g, o))
    print("pipeline OK", o[:4])
except Exception as e:
    print("pipeline FAILED", type(e).__name__, str(e)[:1500])

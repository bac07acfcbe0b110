// Tile by Tile CPU emulator: the CUDA C++ device dialect for a host C++ compiler.
//
// The emulator compiles a kernel's .cu file with this header force-included (-include
// cuda_emu.h), after the source rewrites that compiler.py's docstring describes. Every CUDA
// thread runs as a fiber; a block's fibers share the
// block's shared memory. The runtime (runtime_*.cpp; runtime_internal.h describes its files)
// implements the functions declared here.
#pragma once

// Standard headers come first, before the keyword macros below: libstdc++ 13 and later spell
// `__attribute__((__noinline__))`, which the `__noinline__` macro would break.
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <math.h>  // sqrtf, expf, ... in the global namespace, as in CUDA
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>

// ---- keywords --------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((__always_inline__))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __cluster_dims__(...)  // the runtime launches the cluster NVRTC's PTX declares (.reqnctapercluster)
#define __grid_constant__
#define __constant__ static
// Each `__shared__ T name[dims];` is rewritten into a reference to what __emu_shared_var returns,
// one block's storage in the runtime's static shared arena (compiler.py's docstring, rewrite 2).
extern "C" void* __emu_shared_alloc(size_t size, size_t align, const char* name, int line);
template <class T, int ID, size_t ALIGN>
static inline T& __emu_shared_var(const char* name, int line) {
  static T* storage = static_cast<T*>(
      __emu_shared_alloc(sizeof(T), ALIGN > alignof(T) ? ALIGN : alignof(T), name, line));
  return *storage;
}
#define __align__(n) alignas(n)
// `extern __shared__` (dynamic shared memory) is rewritten to this (compiler.py's docstring,
// rewrite 1); the link points `name` at the runtime's dynamic shared buffer.
#define __emu_extern_shared__ extern
#define __CUDA_ARCH__ 800
#define warpSize 32

#include "emu_types.h"  // the built-in vector types, dim3 and the running thread

// Macros expand inside the kernel, after the learner's own macros: their bodies name only
// reserved identifiers (a kernel's `#define tid ...` must not reach __emu_thread::tid).
static inline __attribute__((__always_inline__)) const uint3& __emu_thread_idx() { return __emu_cur->tid; }
#define threadIdx (__emu_thread_idx())
static inline __attribute__((__always_inline__)) unsigned __emu_lane() { return __emu_cur->lane; }
static inline __attribute__((__always_inline__)) unsigned __emu_warp() { return __emu_cur->warp; }
// Scratch of type __T for one warp-collective operation of the warp (wmma's and mma.sync's fragments meet in
// one): a slot per warp of the block, which traces leave out.
template <class __T>
__attribute__((__no_sanitize__("address"))) static inline __T& __emu_warp_slot() {
  static __T __slots[32 * 8];  // 32 warps a block, 8 blocks a cluster
  return __slots[__emu_warp() + 32 * __emu_cur->rank];
}
#define blockIdx (__emu_block_idx)
#define blockDim (__emu_block_dim)
#define gridDim (__emu_grid_dim)

// ---- barriers and warp collectives (runtime_warps.cpp) --------------------------------------
extern "C" {
void __emu_syncthreads(int line);
int __emu_syncthreads_reduce(int line, int op, int predicate);  // op: 0 count, 1 and, 2 or
void __emu_syncwarp(unsigned mask, int line);
unsigned long long __emu_shfl(unsigned mask, unsigned long long value, int src_lane, int line);
unsigned __emu_ballot(unsigned mask, int predicate, int line);
unsigned __emu_activemask(int line);
void __emu_unsupported(const char* what, int line) __attribute__((noreturn));
void __emu_wmma_misuse(const char* what, int line) __attribute__((noreturn));  // <mma.h>
}
// The empty asm statements keep the compiler from caching shared memory across a barrier.
static inline void __emu_fence() { asm volatile("" ::: "memory"); }
#define __syncthreads() (__emu_fence(), __emu_syncthreads(__LINE__), __emu_fence())
#define __syncthreads_count(p) __emu_syncthreads_reduce(__LINE__, 0, (p) ? 1 : 0)
#define __syncthreads_and(p) __emu_syncthreads_reduce(__LINE__, 1, (p) ? 1 : 0)
#define __syncthreads_or(p) __emu_syncthreads_reduce(__LINE__, 2, (p) ? 1 : 0)
// `__syncwarp()` and `__syncwarp(mask)`: the line is bound first and the optional mask is the
// argument of a second call, because `, ##__VA_ARGS__` keeps its comma under -std=c++17.
#define __syncwarp(...) (__emu_fence(), __emu_syncwarp_at(__LINE__)(__VA_ARGS__), __emu_fence())
struct __emu_syncwarp_call {
  int line;
  void operator()(unsigned mask = 0xffffffffu) const { __emu_syncwarp(mask, line); }
};
static inline __emu_syncwarp_call __emu_syncwarp_at(int line) { return {line}; }
static inline void __threadfence() { __emu_fence(); }
static inline void __threadfence_block() { __emu_fence(); }
#define __activemask() __emu_activemask(__LINE__)
static inline unsigned __lanemask_lt() { return (1u << __emu_cur->lane) - 1u; }

template <class T>
static inline T __emu_shfl_to(unsigned mask, T var, int src, int line) {
  static_assert(sizeof(T) <= 8, "__shfl_*_sync moves values of at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = __emu_shfl(mask, bits, src, line);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
// Lane arithmetic of the PTX shfl modes: a source outside the caller's width-segment
// returns the caller's own value.
template <class T>
static inline T __emu_shfl_idx(unsigned mask, T v, int src, int width, int line) {
  int lane = (int)__emu_cur->lane, base = lane & ~(width - 1);
  return __emu_shfl_to(mask, v, base + (src & (width - 1)), line);
}
template <class T>
static inline T __emu_shfl_up(unsigned mask, T v, unsigned d, int width, int line) {
  int lane = (int)__emu_cur->lane, base = lane & ~(width - 1), src = lane - (int)d;
  return __emu_shfl_to(mask, v, src < base ? lane : src, line);
}
template <class T>
static inline T __emu_shfl_down(unsigned mask, T v, unsigned d, int width, int line) {
  int lane = (int)__emu_cur->lane, base = lane & ~(width - 1), src = lane + (int)d;
  return __emu_shfl_to(mask, v, src >= base + width ? lane : src, line);
}
template <class T>
static inline T __emu_shfl_xor(unsigned mask, T v, int m, int width, int line) {
  int lane = (int)__emu_cur->lane, base = lane & ~(width - 1), src = lane ^ m;
  return __emu_shfl_to(mask, v, src >= base + width ? lane : src, line);
}
#define __shfl_sync(mask, v, src, ...) __emu_shfl_idx(mask, v, src, __emu_width(__VA_ARGS__), __LINE__)
#define __shfl_up_sync(mask, v, d, ...) __emu_shfl_up(mask, v, d, __emu_width(__VA_ARGS__), __LINE__)
#define __shfl_down_sync(mask, v, d, ...) __emu_shfl_down(mask, v, d, __emu_width(__VA_ARGS__), __LINE__)
#define __shfl_xor_sync(mask, v, m, ...) __emu_shfl_xor(mask, v, m, __emu_width(__VA_ARGS__), __LINE__)
static inline int __emu_width(int w = 32) { return w; }
#define __ballot_sync(mask, p) __emu_ballot(mask, (p) ? 1 : 0, __LINE__)
#define __any_sync(mask, p) (__emu_ballot(mask, (p) ? 1 : 0, __LINE__) != 0u)
// "all": no lane of the collective votes false. (Comparing the ballot with __activemask() after
// it returns would count the lanes that have finished since, and give 0.)
#define __all_sync(mask, p) (__emu_ballot(mask, (p) ? 0 : 1, __LINE__) == 0u)

// ---- atomics: real atomics, since blocks run in parallel worker processes -------------------
extern "C" int __emu_atomic_depth;  // the tracer marks accesses made inside an atomic
template <class T, class F>
static inline T __emu_atomic_update(T* p, F f) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics act on 4- or 8-byte values");
  struct Mark {
    Mark() { ++__emu_atomic_depth; }
    ~Mark() { --__emu_atomic_depth; }
  } mark;
  using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  Bits* q = reinterpret_cast<Bits*>(p);
  Bits old_bits = __atomic_load_n(q, __ATOMIC_RELAXED), new_bits;
  T old_val;
  do {
    std::memcpy(&old_val, &old_bits, sizeof(T));
    T new_val = f(old_val);
    std::memcpy(&new_bits, &new_val, sizeof(T));
  } while (!__atomic_compare_exchange_n(q, &old_bits, new_bits, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return old_val;
}
template <class T> static inline T atomicAdd(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return (T)(o + v); }); }
template <class T> static inline T atomicSub(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return (T)(o - v); }); }
template <class T> static inline T atomicExch(T* p, T v) { return __emu_atomic_update(p, [v](T) { return v; }); }
template <class T> static inline T atomicMin(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return v < o ? v : o; }); }
template <class T> static inline T atomicMax(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return v > o ? v : o; }); }
template <class T> static inline T atomicAnd(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return (T)(o & v); }); }
template <class T> static inline T atomicOr(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return (T)(o | v); }); }
template <class T> static inline T atomicXor(T* p, T v) { return __emu_atomic_update(p, [v](T o) { return (T)(o ^ v); }); }
static inline unsigned atomicInc(unsigned* p, unsigned v) {
  return __emu_atomic_update(p, [v](unsigned o) { return o >= v ? 0u : o + 1u; });
}
static inline unsigned atomicDec(unsigned* p, unsigned v) {
  return __emu_atomic_update(p, [v](unsigned o) { return (o == 0u || o > v) ? v : o - 1u; });
}
template <class T>
static inline T atomicCAS(T* p, T compare, T v) {
  ++__emu_atomic_depth;
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  --__emu_atomic_depth;
  return compare;  // holds the old value either way
}

// For the headers a kernel includes (runtime/include), compiled after the kernel's own macros.
template <class __A, class __B> constexpr bool __emu_same = false;
template <class __A> constexpr bool __emu_same<__A, __A> = true;

// ---- device math and intrinsics ----------------------------------------------------------
template <class A, class B>
static inline std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B>
static inline std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline float __fdividef(float a, float b) { return a / b; }
// glibc declares __expf and __logf itself, so these two are macros.
#define __expf(x) __builtin_expf(x)
#define __logf(x) __builtin_logf(x)
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
static inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
static inline unsigned __float_as_uint(float x) { unsigned i; std::memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }
static inline float __uint_as_float(unsigned i) { float x; std::memcpy(&x, &i, 4); return x; }
static inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline float __int2float_rn(int i) { return (float)i; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
template <class T> static inline T __ldg(const T* p) { return *p; }
// Cache-hinted loads and stores: where a GPU caches the access changes no result (NVRTC, which compiles every
// kernel first, has refused any type it lacks an overload for)
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }
static inline long long clock64() { return 0; }  // no cycle counter to emulate
// The byte offset of a shared-memory pointer in the block's shared window (static shared memory,
// then dynamic; offsets are as aligned as the pointers). Any other pointer is an error, naming the line.
extern "C" size_t __emu_cvta_generic_to_shared(const void* p, int line);
#define __cvta_generic_to_shared(p) __emu_cvta_generic_to_shared((p), __LINE__)

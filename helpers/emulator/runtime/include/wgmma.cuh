// The CPU emulator's wgmma.cuh: the functions of the course's kernels/wgmma.cuh (Hopper's
// warpgroup MMA, TF32), with the same names, signatures and semantics, run by the runtime. The
// emulator's include path puts this file before the kernel's directory, so a kernel's
// `#include "wgmma.cuh"` finds it.
//
// - wgmma_fence, wgmma_m64k8_tf32, wgmma_commit_group and wgmma_wait_group are warpgroup-
//   collective ("sync.aligned"): the 128 threads of a warpgroup (threads 128g .. 128g+127 of a
//   block of a multiple of 128) make each call together, or the emulator reports the divergence.
// - wgmma_m64k8_tf32 is asynchronous. It takes A (the warpgroup's 64 x 8 tile, TF32 bits) and
//   the accumulators' addresses when it is issued, and joins the open group; wgmma_commit_group
//   closes the group; wgmma_wait_group<P> completes every committed group but the newest P, in
//   issue order. Only then is B read from shared memory and added into the accumulators (TF32
//   inputs, FP32 sums): a kernel that refills a tile before waiting for the products that read it
//   computes with the new data, as the race on a GPU would.
// - The descriptor is the emulator's own: wgmma_desc_sw128's tile must lie in shared memory, its
//   first row 1024-byte aligned, all N rows inside the block's shared memory; a kernel that
//   finishes with products not waited for is stopped. Each error names the line and the fix.
// - PTX's rules (runtime_wgmma.cpp lists them): wgmma_fence before a warpgroup's first product and
//   after ordinary code writes its registers; no register or shared memory of a product in flight
//   touched; generic writes fenced (fence_proxy_async_shared) before the tensor cores read them.
// - The tensor cores' reads of shared memory are not a thread's loads: traces leave them out.
#pragma once

// Names other than the course header's are reserved (__x): a kernel's own macros above the
// #include stay out.
extern "C" {
unsigned long long __emu_wgmma_desc_sw128(const float* __tile);
void __emu_wgmma_fence(int __line);
void __emu_wgmma_commit_group(int __line);
void __emu_wgmma_wait_group(int __pending, int __line);
void __emu_wgmma_m64k8_tf32(float* __d, const float* __a, int __n, unsigned long long __desc, int __line);
void __emu_fence_proxy_async(int __line);
}

// The calls keep wgmma.cuh's syntax, template arguments included (wgmma_wait_group<1>()), and
// pass the caller's line: each name is a member of an object that holds it. The runtime's
// functions are opaque to the compiler, so no memory they may touch is cached across them.
struct __emu_wgmma_site {
  int __line;
  void __fence() const { __emu_wgmma_fence(__line); }
  void __commit_group() const { __emu_wgmma_commit_group(__line); }
  template <int __PENDING>
  void __wait_group() const {
    static_assert(__PENDING >= 0, "wgmma_wait_group<PENDING>: PENDING is a number of groups, at least 0");
    __emu_wgmma_wait_group(__PENDING, __line);
  }
  template <int __N>
  void __m64k8_tf32(float (&__d)[__N / 2], const float (&__a)[4], unsigned long long __b) const {
    static_assert(__N % 8 == 0 && __N >= 8 && __N <= 256, "wgmma_m64k8_tf32<N>: N is a multiple of 8 from 8 to 256");
    __emu_wgmma_m64k8_tf32(__d, __a, __N, __b, __line);
  }
};
static inline __emu_wgmma_site __emu_wgmma_at(int __line) { return {__line}; }

#define wgmma_fence __emu_wgmma_at(__LINE__).__fence
#define wgmma_commit_group __emu_wgmma_at(__LINE__).__commit_group
#define wgmma_wait_group __emu_wgmma_at(__LINE__).__wait_group
#define wgmma_m64k8_tf32 __emu_wgmma_at(__LINE__).__m64k8_tf32

// A thread's fence between its own writes to shared memory (generic proxy: stores, cp.async) and the
// tensor cores' or a copy's reads (async proxy). Not collective on a GPU either. The runtime counts it:
// a wgmma reading a generic write its writer has not fenced since is stopped (or, traced, a race).
#define fence_proxy_async_shared() __emu_fence_proxy_async(__LINE__)

static inline unsigned long long wgmma_desc_sw128(const float* __tile) { return __emu_wgmma_desc_sw128(__tile); }

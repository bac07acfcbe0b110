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
// - The tensor cores' reads of shared memory are not a thread's loads: traces leave them out.
#pragma once

extern "C" {
unsigned long long __emu_wgmma_desc_sw128(const float* tile);
void __emu_wgmma_fence(int line);
void __emu_wgmma_commit_group(int line);
void __emu_wgmma_wait_group(int pending, int line);
void __emu_wgmma_m64k8_tf32(float* d, const float* a, int n, unsigned long long desc, int line);
}

// The calls keep wgmma.cuh's syntax, template arguments included (wgmma_wait_group<1>()), and
// pass the caller's line: each name is a member of an object that holds it. The runtime's
// functions are opaque to the compiler, so no memory they may touch is cached across them.
struct __emu_wgmma_site {
  int line;
  void fence() const { __emu_wgmma_fence(line); }
  void commit_group() const { __emu_wgmma_commit_group(line); }
  template <int PENDING>
  void wait_group() const {
    static_assert(PENDING >= 0, "wgmma_wait_group<PENDING>: PENDING is a number of groups, at least 0");
    __emu_wgmma_wait_group(PENDING, line);
  }
  template <int N>
  void m64k8_tf32(float (&d)[N / 2], const float (&a)[4], unsigned long long b) const {
    static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma_m64k8_tf32<N>: N is a multiple of 8 from 8 to 256");
    __emu_wgmma_m64k8_tf32(d, a, N, b, line);
  }
};
static inline __emu_wgmma_site __emu_wgmma_at(int line) { return {line}; }

#define wgmma_fence __emu_wgmma_at(__LINE__).fence
#define wgmma_commit_group __emu_wgmma_at(__LINE__).commit_group
#define wgmma_wait_group __emu_wgmma_at(__LINE__).wait_group
#define wgmma_m64k8_tf32 __emu_wgmma_at(__LINE__).m64k8_tf32

// A thread's fence between its own writes to shared memory and the tensor cores' reads (not
// collective on a GPU either). The emulator's products read shared memory as it is at completion.
static inline void fence_proxy_async_shared() { EMU_FENCE(); }

static inline unsigned long long wgmma_desc_sw128(const float* tile) { return __emu_wgmma_desc_sw128(tile); }

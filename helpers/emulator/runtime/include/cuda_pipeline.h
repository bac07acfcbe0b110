// The CPU emulator's <cuda_pipeline.h>: CUDA's asynchronous-copy primitives (cp.async, sm_80 and
// later), with the semantics of the real header and PTX:
//   __pipeline_memcpy_async(dst, src, size, zfill): copy size (4, 8 or 16) bytes from global
//     memory to shared memory, both addresses multiples of size; the last zfill bytes are not
//     read but written as zeros (zfill == size reads nothing). The copy is checked (bounds,
//     alignment, address spaces) and traced where it is issued, at the caller's line.
//   __pipeline_commit(): closes a group of the copies issued since the previous commit.
//   __pipeline_wait_prior(n): returns when all but the n most recent groups have landed.
// A copy lands in shared memory only when its thread waits for its group (or finishes), the
// latest moment a GPU allows: reading a tile before waiting for it reads its old contents, and a
// trace counts the copy's store in every barrier interval it may still be in flight.
// Not provided: __pipeline_arrive_on and the nvcuda::experimental::pipeline classes.
#pragma once

// Names other than CUDA's are reserved (__x): a kernel's own macros above the #include stay out.
extern "C" {
void __emu_pipeline_memcpy_async(void* __dst, const void* __src, __SIZE_TYPE__ __size, __SIZE_TYPE__ __zfill);
void __emu_pipeline_commit(void);
void __emu_pipeline_wait_prior(__SIZE_TYPE__ __prior);
}

// always_inline, also at -O0 (traces): the runtime then sees a return address in the kernel's
// own code, which names the kernel's line.
__attribute__((__always_inline__)) static inline void __pipeline_memcpy_async(
    void* __restrict __dst_shared, const void* __restrict __src_global, __SIZE_TYPE__ __size_and_align,
    __SIZE_TYPE__ __zfill = 0) {
  __emu_fence();
  __emu_pipeline_memcpy_async(__dst_shared, __src_global, __size_and_align, __zfill);
}
__attribute__((__always_inline__)) static inline void __pipeline_commit() { __emu_pipeline_commit(); }
__attribute__((__always_inline__)) static inline void __pipeline_wait_prior(__SIZE_TYPE__ __prior) {
  __emu_pipeline_wait_prior(__prior);
  __emu_fence();  // the landed bytes are read from memory, not from values cached before the wait
}

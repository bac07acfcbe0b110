// The CPU emulator's tma.cuh: the functions of the course's kernels/tma.cuh (Hopper's TMA copies
// and mbarriers), with the same names, signatures and semantics, run by the runtime
// (runtime/runtime_tma.cpp). The emulator's include path puts this file before the kernel's directory.
//
// - A TensorMap here is the emulator's own 128 bytes (helpers/emulator/tensor_map.py), naming the
//   array by its buffer; the host builds it with the driver's rules checked first.
// - tma_load_2d reads its box when issued and writes it to shared memory, swizzled, when a thread
//   waits for the phase of the barrier it reports to: reading a stage before waiting for it shows
//   the old contents. mbarrier_wait blocks the thread until that phase completes.
// - mbarrier_init is visible to other threads after a __syncthreads, and to copies after the initializing
//   thread's fence_mbarrier_init; a phase's copies deliver exactly the bytes announced for it.
// - setmaxnreg_inc/dec move no registers here, but, as on a GPU, the 128 threads of a warpgroup make the call
//   together, the count moves the way the call says, and the block's warpgroups share the registers of its launch:
//   an increase waits for them, and one that never gets them is reported as a deadlock.
#pragma once

// Names other than the course header's are reserved (__x).
extern "C" {
void __emu_mbarrier_init(unsigned long long* __bar, unsigned __count, int __line);
void __emu_mbarrier_arrive(unsigned long long* __bar, unsigned __tx_bytes, int __line);
void __emu_mbarrier_wait(unsigned long long* __bar, unsigned __parity, int __line);
void __emu_tma_load_2d(void* __dst, const void* __map, unsigned long long* __bar, int __row, int __col, int __line);
void __emu_tma_check_map(const void* __map, int __line);
void __emu_setmaxnreg(int __regs, int __inc, int __line);
void __emu_fence_mbarrier_init(int __line);
void __emu_tma_store_2d(const void* __map, const void* __src, int __row, int __col, int __line);
void __emu_tma_store_commit(int __line);
void __emu_tma_store_wait(int __pending, int __read_only, int __line);
void __emu_named_barrier(unsigned __id, unsigned __count, int __line);
}

struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

static inline unsigned smem_address(const void* __p) { return static_cast<unsigned>(__cvta_generic_to_shared(__p)); }

#define mbarrier_init(bar, count) __emu_mbarrier_init((bar), (count), __LINE__)
#define mbarrier_arrive(bar) __emu_mbarrier_arrive((bar), 0u, __LINE__)
#define mbarrier_arrive_expect_tx(bar, bytes) __emu_mbarrier_arrive((bar), (bytes), __LINE__)
#define mbarrier_wait(bar, parity) __emu_mbarrier_wait((bar), (parity), __LINE__)
#define tma_load_2d(dst, map, bar, row, col) \
  __emu_tma_load_2d((dst), static_cast<const TensorMap*>(map), (bar), (row), (col), __LINE__)
#define tma_prefetch_map(map) __emu_tma_check_map(static_cast<const TensorMap*>(map), __LINE__)
#define fence_mbarrier_init() __emu_fence_mbarrier_init(__LINE__)

// TMA stores (runtime_tma_store.cpp): a store reads its shared memory, and writes the array (clipped at its
// edges), when the issuing thread's wait that covers its group returns, the latest moment a GPU allows; its source
// written between its issue and that wait, a thread finishing with a store not waited for, or a store issued with
// no commit and wait, is named with its line. The race check of traced blocks names a source written by a thread
// that no barrier orders before the store, or that did not fence it (fence_proxy_async_shared) for the async proxy.
#define tma_store_2d(map, src, row, col) \
  __emu_tma_store_2d(static_cast<const TensorMap*>(map), (src), (row), (col), __LINE__)
#define tma_store_commit_group() __emu_tma_store_commit(__LINE__)
struct __emu_tma_store_site {
  int __line;
  template <int __PENDING>
  void __wait_read() const {
    static_assert(__PENDING >= 0, "tma_store_wait_read<PENDING>: PENDING is a number of groups, at least 0");
    __emu_tma_store_wait(__PENDING, 1, __line);
  }
  template <int __PENDING>
  void __wait() const {
    static_assert(__PENDING >= 0, "tma_store_wait<PENDING>: PENDING is a number of groups, at least 0");
    __emu_tma_store_wait(__PENDING, 0, __line);
  }
};
static inline __emu_tma_store_site __emu_tma_store_at(int __line) { return {__line}; }
#define tma_store_wait_read __emu_tma_store_at(__LINE__).__wait_read
#define tma_store_wait __emu_tma_store_at(__LINE__).__wait

// bar.sync id, count (runtime_warps.cpp): completes when `count` threads have arrived at barrier `id`, whole warps
// of them; a count that is not a multiple of 32 or more than the block's threads, or a barrier that never
// completes (a deadlock, named with its line), is reported.
#define named_barrier_sync(id, count) (__emu_fence(), __emu_named_barrier((id), (count), __LINE__), __emu_fence())

// setmaxnreg_dec<REGS>() and setmaxnreg_inc<REGS>(), with the caller's line.
struct __emu_setmaxnreg_site {
  int __line;
  template <int __REGS>
  void __dec() const { __emu_setmaxnreg(__REGS, 0, __line); }
  template <int __REGS>
  void __inc() const { __emu_setmaxnreg(__REGS, 1, __line); }
};
static inline __emu_setmaxnreg_site __emu_setmaxnreg_at(int __line) { return {__line}; }
#define setmaxnreg_dec __emu_setmaxnreg_at(__LINE__).__dec
#define setmaxnreg_inc __emu_setmaxnreg_at(__LINE__).__inc

// ---- thread block clusters (a kernel declared __cluster_dims__(X, Y, Z); runtime/runtime_cluster.cpp) ----------
// The cluster's blocks run together, each with its own shared memory. A peer's barrier is used only after a
// cluster_sync that follows its initialization, and a block finishes only after a cluster_sync that follows every
// peer's last multicast into it and arrival on its barriers: each is stopped with its line otherwise.
extern "C" {
unsigned __emu_cluster_ctarank();
void __emu_cluster_arrive(int __line);
void __emu_cluster_wait(int __line);
void __emu_mbarrier_arrive_cluster(unsigned long long* __bar, unsigned __rank, int __line);
void __emu_tma_load_2d_multicast(void* __dst, const void* __map, unsigned long long* __bar, int __row, int __col,
                                 unsigned short __mask, int __line);
}
static inline unsigned cluster_ctarank() { return __emu_cluster_ctarank(); }
#define cluster_arrive() __emu_cluster_arrive(__LINE__)
#define cluster_wait() __emu_cluster_wait(__LINE__)
#define cluster_sync() (__emu_cluster_arrive(__LINE__), __emu_cluster_wait(__LINE__))
#define mbarrier_arrive_cluster(bar, rank) __emu_mbarrier_arrive_cluster((bar), (rank), __LINE__)
#define tma_load_2d_multicast(dst, map, bar, row, col, mask) \
  __emu_tma_load_2d_multicast((dst), static_cast<const TensorMap*>(map), (bar), (row), (col), (mask), __LINE__)

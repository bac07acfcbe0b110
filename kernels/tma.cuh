// Hopper's Tensor Memory Accelerator (TMA) and its transaction barriers (mbarrier), the few
// instructions stage 12's kernel uses, as C++ functions in inline PTX (PTX ISA 8.0, sm_90). The
// CPU emulator has its own header of the same name that runs the same functions on the CPU
// (helpers/emulator/runtime/include).
//
// - A TensorMap describes a 2-D array in global memory (its address, sizes, row pitch) and the box
//   one copy moves (rows x columns, the 128-byte swizzle). The host builds it (the driver's
//   cuTensorMapEncodeTiled: helpers/run/tensor_maps.py) and passes it to the kernel by value as a
//   `const __grid_constant__ TensorMap` parameter. One thread then copies a whole tile with one
//   instruction, tma_load_2d: the copy engine computes every address, fills with zeros whatever
//   lies outside the array, and writes the tile to shared memory in the swizzle.
// - The copy is asynchronous. It reports to an mbarrier, a 64-bit object in shared memory that
//   counts arrivals and bytes: a phase of the barrier completes when `count` threads have
//   arrived (mbarrier_init) and every byte announced with mbarrier_arrive_expect_tx has landed.
//   mbarrier_wait(bar, parity) returns once the phase of that parity has completed: phases
//   alternate 0, 1, 0, ..., so a loop over a ring of barriers waits for parity (round & 1).
// - The other way, tma_store_2d copies a box of shared memory into the array; the issuing thread tracks
//   its stores in groups (tma_store_commit_group, tma_store_wait_read / tma_store_wait), not with an
//   mbarrier. named_barrier_sync syncs part of a block (e.g. one warpgroup) on a hardware barrier.
#pragma once

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. (<cuda.h> declares it too, but
// NVRTC compiles without the driver's headers.)
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Sets the barrier's arrival count; its first phase (parity 0) starts. One thread calls it, and
// fence_mbarrier_init + __syncthreads publish it before any thread or copy uses the barrier.
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
}

// Makes the initialized barriers visible to the copy engine (the "async proxy").
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::: "memory");
}

// Counts the calling thread's arrival at the barrier's current phase.
__device__ __forceinline__ void mbarrier_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}

// Announces `bytes` more to land in the current phase (the copies about to be issued), then arrives.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// Waits until the phase of parity `parity` has completed; its copies' bytes are then visible.
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}

// Copies the box whose first element is (row, col) of the map's array into shared memory at dst
// (1024-byte aligned for the 128-byte swizzle), reporting its bytes to bar. col counts elements
// along a row (the map's first dimension), row counts rows. One thread issues it.
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, unsigned long long* bar, int row,
                                            int col) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row), "r"(smem_address(bar))
      : "memory");
}

// ---- TMA stores: a box of shared memory to global memory ----------------------------------------
// Copies the box at src (shared memory, 128-byte aligned, laid out as tma_load_2d leaves a box: rows of the map's
// box, in its swizzle) into the map's array with its first element at (row, col). The copy engine writes only
// what lies inside the array: a box past the edges is clipped, so the store needs no bounds checks. One thread
// issues it; it reads src through the async proxy, so the threads that wrote src call fence_proxy_async_shared
// (wgmma.cuh), then a barrier orders them before the issuing thread.
// It is asynchronous: tma_store_commit_group closes a group of the thread's stores; tma_store_wait_read<N>
// returns once at most N of its groups may still be reading their shared memory (src may then be written
// again), tma_store_wait<N> once at most N have not finished writing global memory. A block must not finish
// with a store still reading its shared memory.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, const void* src, int row, int col) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(col), "r"(row), "r"(smem_address(src))
               : "memory");
}

__device__ __forceinline__ void tma_store_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

template <int PENDING>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(PENDING) : "memory");
}
template <int PENDING>
__device__ __forceinline__ void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// A barrier of `count` threads (a multiple of 32: whole warps) on hardware barrier `id` (1 to 15; 0 is
// __syncthreads'): e.g. the 128 threads of one warpgroup, while the block's other warps go on. Every warp of
// the count calls it with the same id; it orders their shared-memory accesses as __syncthreads does.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Hints the copy engine to fetch the tensor map's 128 bytes into its cache before the first copy.
__device__ __forceinline__ void tma_prefetch_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Moves this thread's register budget (sm_90a; the kernel needs __launch_bounds__(threads, 1)): a
// warpgroup that only issues copies gives registers back, the ones that multiply take them. All
// 128 threads of a warpgroup call it together, with a multiple of 8 from 24 to 256.
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---- thread block clusters (a kernel declared __cluster_dims__(X, Y, Z); sm_90) -----------------------------
// The blocks of a cluster run at once on neighbouring SMs and reach each other's shared memory (distributed shared
// memory): a copy can land in several blocks, a thread can arrive on a peer's barrier. Their rules: a peer's
// barrier is used only after a cluster_sync that follows its mbarrier_init and fence_mbarrier_init, and a block
// exits only after a cluster_sync that follows every peer's last copy into it and arrival on its barriers.

// This block's rank in its cluster, 0 .. blocks per cluster - 1 (x fastest).
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// The cluster barrier: every thread of every block of the cluster arrives (releasing its writes), then waits
// for all the others (acquiring theirs). cluster_sync() does both.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// Arrives on the barrier at bar's offset in the shared memory of the cluster's block `rank` (mapa gives its address),
// with mbarrier.arrive's default semantics: release at CTA scope, as CUTLASS's ClusterBarrier::arrive(cta_id). Enough
// where a consumer gives a stage back: nothing is left for the arrival to order, the warp's reads of the stage having
// completed (its fragments consumed by products wgmma_wait_group saw complete). With .release.cluster instead, made
// every k-tile by every consumer warp, 12_warp_specialized with CLUSTER = 2 ran at 153 TFLOP/s against 344 on an
// H100 (results/stage_12_h100_2026-11-28_steps/cluster_arrive.json; why so costly, the timing does not show).
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned long long* bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_address(bar)),
      "r"(rank)
      : "memory");
}

// tma_load_2d into every block of the cluster whose bit is set in mask: the box lands at dst's offset in each
// one's shared memory and counts its bytes off the barrier at bar's offset there.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TensorMap* map, unsigned long long* bar,
                                                      int row, int col, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row), "r"(smem_address(bar)), "h"(mask)
      : "memory");
}

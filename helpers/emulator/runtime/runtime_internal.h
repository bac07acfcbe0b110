// Tile by Tile CPU emulator runtime: the state its files share. What a kernel sees is cuda_emu.h
// (and runtime/include); how its threads run is in these files, which see of it only the types
// of emu_types.h and the entry table of emu_entries.h.
//
// One worker process per CPU core takes blocks from a shared counter. Inside a worker, every
// CUDA thread of the block is a fiber with its own stack; fibers switch only at barriers and
// warp collectives, so a block runs with no locks. Device buffers are shared memory-mapped
// files placed in a reserved arena with inaccessible gaps around each, and the kernel's
// translation unit is compiled with the compiler's address-sanitizer instrumentation, whose
// callbacks (__asan_load4_noabort, ...) the runtime defines: every load and store of the kernel
// is bounds-checked (and, in traced blocks, traced) with its source location.
//
// Protocol: the Python loader writes a request to stdin (read_request) and passes the buffer
// files and a result file as inherited descriptors. Errors are written as one line of
// key=value fields into the result file, then the process exits with status 3.
//
// The runtime's files. Each compiles alone (tests/emulator/test_runtime_files.py); the build
// compiles them as one unit that includes them all (compiler.py's runtime_object), so the names a
// file keeps to itself (its anonymous namespace) must differ from every other file's.
//   runtime_launch.cpp  fibers and the launch: the request, setup, the scheduler, signals, the
//                       blocks' loop and the worker processes
//   runtime_memory.cpp  memory checks and tracing: shared-memory variables, bounds checks, the
//                       shadow memory, the trace writer, asynchronous copies (cp.async)
//   runtime_warps.cpp   __syncthreads and the warp collectives (__syncwarp, shuffles, ballots,
//                       __activemask)
//   runtime_wgmma.cpp   Hopper's warpgroup MMA: warpgroup collectives, descriptors, async groups
//   runtime_tma.cpp     Hopper's TMA copies and mbarriers
//   runtime_tma_store.cpp  TMA stores (shared memory to global) and their bulk async-groups
//   runtime_races.cpp   the happens-before race check of traced blocks (vector clocks), fed by
//                       every barrier, collective, mbarrier, copy and shared access above
//   runtime_cluster.cpp thread block clusters: a cluster's blocks run together in one worker, their
//                       fibers in one scheduler, each block with its own shared memory (swapped into
//                       the window as the scheduler moves between blocks); the cluster barrier, the
//                       block's rank, and the rules of distributed shared memory
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "emu_entries.h"
#include "emu_types.h"

#include <signal.h>

// ---- the kernel module's entry table, emitted by the loader next to the kernel ------------
extern "C" const __emu_entry __emu_entries[];
extern "C" const int __emu_num_entries;
extern "C" const int __emu_inline_checks;  // 1 when the kernel was built with inline shadow checks

// ---- shared memory, as the kernel's unit sees it (defined in runtime_memory.cpp) ----------
constexpr size_t kStaticSmemBytes = 64 * 1024;
constexpr size_t kDynSmemReserve = 256 * 1024;  // more than any GPU's per-block limit
extern "C" {
// Dynamic shared memory: the loader links every `extern __shared__ T name[]`, and
// __emu_dynamic_shared, into this array, as aligned as the kernel declares (at least 16 bytes)
// and no more: a GPU starts it where the static arrays end, rounded up to that alignment (an
// H100 puts a kernel's first shared byte at 1024 of its window). The pages past the launch's
// size are made inaccessible.
alignas(4096) extern char __emu_dynamic_smem[kDynSmemReserve + 4096];
extern char __emu_dynamic_shared[];
// Static shared memory: every `__shared__` variable of the kernel is placed here when its
// declaration first runs (__emu_shared_alloc), with an unaddressable redzone after each, so that
// running off the end of one array is caught.
alignas(4096) extern char __emu_static_smem[kStaticSmemBytes];
}

namespace emu {

constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr size_t kPage = 4096;

// ---- the launch request (runtime_launch.cpp reads it) ------------------------------------
struct Buffer {
  char* base;
  size_t nbytes;
};
struct Request {
  int entry = -1;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  size_t dyn_smem = 0;
  int workers = 1;
  long timeout_ms = 30000;
  int result_fd = -1;
  int trace_fd = -1;
  size_t trace_capacity = 0;
  std::vector<unsigned> trace_blocks;  // when tracing: run only these blocks (their clusters), in this order
  unsigned cluster[3] = {1, 1, 1};     // the kernel's __cluster_dims__ (NVRTC's .reqnctapercluster)
  std::vector<int> buffer_fds;
  std::vector<size_t> buffer_bytes;
  std::vector<std::vector<unsigned char>> params;  // bytes of each kernel argument
  std::vector<int> param_buffer;                   // buffer index for pointers, else -1
  std::vector<size_t> param_offset;
};
extern Request req;
extern std::vector<Buffer> buffers;  // the device buffers, mapped (runtime_memory.cpp's map_buffers)

// Reports an error of the running thread (key=value fields; the block and thread are added) and
// ends the process with status 3.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- fibers: the block's threads (runtime_launch.cpp) ---------------------------------------
enum State { kRunnable, kWaitBlock, kWaitWarp, kWaitActive, kWaitWarpgroup, kWaitMbarrier, kWaitCluster, kWaitNamed,
                 kDone };

// An asynchronous copy (cp.async, <cuda_pipeline.h>) issued and not yet landed in shared memory.
// Its source is read when it is issued; its bytes reach shared memory only when the thread waits
// for its group (__pipeline_wait_prior) or finishes, the latest moment a GPU allows, so that a
// kernel reading a tile before waiting for it sees the tile's old contents.
struct AsyncCopy {
  char* dst;
  unsigned char bytes[16];  // the source bytes, then the zero fill
  unsigned size, group;     // group: how many __pipeline_commit calls came before it
  void* pc;                 // the copy's call in the kernel, for traces
};

struct Fiber {
  __emu_thread t;  // first member: __emu_cur points here
  void* sp;
  int state;
  int line;         // source line of the barrier it waits at
  unsigned result;  // __activemask()'s answer, set when the warp settles
  unsigned epoch, warp_epoch, seq;  // barriers and warp collectives passed, accesses traced
  unsigned groups;                  // __pipeline_commit calls so far
  unsigned proxy_fences;            // fence_proxy_async_shared and fence_mbarrier_init calls so far
  unsigned cluster_arrivals, cluster_waits;  // cluster barrier phases arrived at, and waited for
  unsigned cluster_fence;           // cluster_arrivals at its last fence_mbarrier_init (+1; 0: none)
  std::vector<AsyncCopy> copies;    // in issue order
};
extern Fiber* fibers;   // the running block's threads
extern int nthreads;    // of the block
extern int cur;         // the running fiber, in its block
extern int done_count;  // threads of the block that have finished

void block_current();  // blocks the running fiber and runs the next runnable one, of its block first (deadlock: fail)
void thread_label(int i, char* out, size_t n);  // "(x,y,z)", fiber i's threadIdx

// ---- barriers and warp collectives (runtime_warps.cpp) -------------------------------------
void settle_activemask(unsigned warp);  // when the warp has settled, answers its __activemask calls
void reset_barriers();                  // before a block runs
void barriers_thread_exit(const Fiber& f);  // a thread finished: fails if a barrier still waits for it
// Appends to a deadlock report what the named barriers (bar.sync id, count) waited at still lack.
void named_barrier_deadlock_hint(char* out, size_t n);

// ---- shared memory and the checks (runtime_memory.cpp) --------------------------------------
struct SharedVar {
  size_t offset, size;
  const char* name;
  int line;
};
extern SharedVar shared_vars[256];
extern int n_shared_vars;
const SharedVar* shared_var_at(size_t off);  // the variable holding byte `off` of static shared memory
char* const smem_lo = __emu_static_smem;
extern char* dyn_lo;  // the start of dynamic shared memory, as the kernel's unit placed it

// Bytes from the start of dynamic shared memory (negative before it, in the bytes skipped to
// align it); false outside the array that holds it.
inline bool in_dynamic(uintptr_t a, long long& off) {
  if (a - (uintptr_t)__emu_dynamic_smem >= sizeof __emu_dynamic_smem) return false;
  off = (long long)(a - (uintptr_t)dyn_lo);
  return true;
}

// A block's shared window, as __cvta_generic_to_shared numbers it: the static arena from 0, the
// dynamic one from kDynamicWindow. Both arenas are 4096-aligned, so an offset is aligned to 1024
// bytes exactly when its pointer is, as on a GPU.
constexpr size_t kDynamicWindow = sizeof __emu_static_smem;
inline bool shared_window(uintptr_t a, size_t& off) {
  long long dyn;
  if (a - (uintptr_t)smem_lo < sizeof __emu_static_smem) return off = a - (uintptr_t)smem_lo, true;
  if (in_dynamic(a, dyn)) return off = kDynamicWindow + (a - (uintptr_t)__emu_dynamic_smem), true;
  return false;
}

// 16-byte chunk c of a 128-byte row goes to chunk c ^ (row % 8), on the shared address's bits.
inline size_t swizzle128(uintptr_t address) { return address ^ ((address >> 7 & 7) << 4); }

[[noreturn]] void out_of_bounds(uintptr_t a, size_t n, int store, void* pc);  // store -1: a fault
bool faults_as_out_of_bounds(uintptr_t a);  // a fault at `a` is an access just outside a buffer or dynamic shared memory
extern bool shadow_ready;  // the inline checks' shadow memory is reserved
void map_buffers();
void map_shared_memory();
void map_trace();
void poison_shared();  // before a block runs: shared memory is never zero on a GPU
size_t shared_static_bytes();  // of static shared memory handed out so far (redzones included)

// Memory trace: every shared and global access of the traced blocks, in program order.
extern bool tracing;          // the running block is one of the traced ones
extern unsigned trace_block;  // which
void trace(uintptr_t off, size_t n, int store, void* pc, int space, int buffer);
// A trace record whose `repeat` field carries a tag (events, race records, the copy engine's reads),
// and where the runtime knows the call's line (a copy, an mbarrier call, a wgmma), that line in the
// offset's high 32 bits (helpers/measure/trace.py reads it there: a return address's line depends on
// the compiler).
void trace_tagged(uintptr_t off, size_t n, int op, void* pc, int space, int tag, int line = 0, int buffer = -1);
int shared_space(uintptr_t a, uintptr_t& rel);  // a shared address's trace space (1 static, 2 dynamic) and offset in it

// Asynchronous copies (<cuda_pipeline.h>).
void land_async_copies(Fiber& f, unsigned keep_groups);  // all but the newest keep_groups groups land
void trace_pending_async_copies();                       // at a barrier: the copies still in flight

// ---- Hopper's warpgroup MMA (runtime_wgmma.cpp) --------------------------------------------------
constexpr int kWarpgroupThreads = 128;
constexpr int kMaxWarpgroups = kMaxThreads / kWarpgroupThreads;
void reset_warpgroups();  // before a block runs
void wgmma_thread_exit();  // a thread finished: fails if its warpgroup waits for it or its products are pending
// A copy (cp.async: its pc; TMA: its line) is about to write [lo, lo + n) of shared memory: fails, naming both
// lines, where a wgmma not yet completed by a wgmma_wait_group reads any of those bytes.
void wgmma_check_overwrite(uintptr_t lo, size_t n, void* pc, int line, const char* what);
// An asynchronous copy's bytes landed (a generic-proxy write): remembered, so that a wgmma reading them before
// the copying thread's fence_proxy_async_shared is named.
void wgmma_generic_write(const char* dst, unsigned size, void* pc);
// Appends to a deadlock report what the warpgroups wait for (registers of setmaxnreg); returns the fix, or null.
const char* wgmma_deadlock_hint(char* out, size_t n);

// ---- TMA and mbarriers (runtime_tma.cpp) ----------------------------------------------------
// The emulator's tensor map (helpers/emulator/tensor_map.py writes the same layout).
struct EmuTensorMap {
  uint32_t magic, buffer;
  uint64_t rows, cols, pitch;
  uint32_t box_rows, box_cols, tf32, swizzle;
};
constexpr uint32_t kTensorMapMagic = 0x50414d54u;  // "TMAP"
// The map a TMA instruction (`what`, at `line`) is given, stopped where it is not one the host built.
EmuTensorMap tensor_map_at(const void* map_arg, const char* what, int line);
void reset_mbarriers();  // before a block runs
// Appends to a deadlock report what the barriers waited for still lack (arrivals, announced bytes); returns the
// fix where the bytes say it, or null.
const char* mbarrier_deadlock_hint(char* out, size_t n);
void mbarrier_proxy_fence();  // the running thread's fence: the barriers it initialized may now serve copies

// ---- thread block clusters (runtime_cluster.cpp) ----------------------------------------------
// Without __cluster_dims__ every block is a cluster of one, and nothing here costs anything.
constexpr int kMaxCluster = 8;  // blocks per cluster, the portable limit
extern int cluster_size;        // blocks per cluster
extern int rank;                // the running block's rank in its cluster (%cluster_ctarank)
extern Fiber* block_fibers[kMaxCluster];
extern uint3 block_index[kMaxCluster];  // blockIdx of each block of the running cluster
extern int block_done[kMaxCluster];     // threads finished, per block (the running one's: done_count)
void allocate_cluster();                // once, before the first cluster: each block's saved shared memory
void start_cluster();                   // before a cluster runs: its blocks' shared memory poisoned, no rule pending
void enter_block(int r);  // makes block r the running one: its threads, its state, its shared memory in the window
char* shared_of(int r, char* p);  // where byte p of the window lies for block r now (the window, or its saved copy)
void block_finished();    // the running block's last thread finished: checks that no peer may still reach it
// A thread of the running block reaches block r's shared memory (a multicast copy, a remote arrival): fails where
// block r has finished, else remembers it for r's exit (block_finished).
void cluster_remote_use(int r, int line, const char* what);
// Whether the running thread may use a peer block's barrier whose initializing thread had arrived at `fence` - 1
// cluster barrier phases at its fence_mbarrier_init (0: no fence): it waited for a later phase.
bool cluster_init_visible(unsigned fence);
// The per-block state of the other files, swapped by enter_block.
void barriers_swap_block(int from, int to);   // runtime_warps.cpp
void warpgroups_swap_block(int from, int to); // runtime_wgmma.cpp
void wgmma_check_overwrite_in(int r, uintptr_t lo, size_t n, void* pc, int line, const char* what);
void cluster_thread_exit();  // a thread finished: fails if the cluster barrier waits for it
// ---- TMA stores (runtime_tma_store.cpp) ------------------------------------------------------
void reset_tma_stores();       // before a block runs
void tma_store_thread_exit();  // a thread finished: fails if a store of its own may still read shared memory

// ---- the race check (runtime_races.cpp): traced blocks only; every call is a no-op elsewhere ------
// Clocks: one entry per thread, per mbarrier (its completed phases) and per warpgroup's tensor cores (its
// completed wgmma groups).
constexpr int kMaxBarriers = 256;  // mbarriers per block the clocks follow
extern bool hb_on;                 // the race check runs in this block
void hb_reset();                   // before a cluster (a block) runs
void hb_meet(int first, int n);    // threads first .. first+n-1 of the running block have met (__syncthreads)
void hb_meet_cluster();            // every thread of the cluster has met (the cluster barrier's wait)
void hb_meet_lanes(int first, unsigned mask);  // the lanes of `mask` of the warp from thread `first` (__syncwarp)
void hb_access(uintptr_t a, size_t n, int store, void* pc);  // a thread's own load or store of shared memory
void hb_proxy_fence();             // the running thread's fence.proxy.async: its generic writes so far are fenced
void hb_meet_threads(const int* threads, int n);  // these threads have met (a named barrier)
// A TMA store issued by the running thread reads [a, a + n) through the async proxy: at its issue, what wrote those
// words must be ordered before it and fenced (hb_store_issue); the read itself is recorded when the issuer's wait
// that covers it returns (hb_store_read), so a later write not ordered after that wait is a race.
void hb_store_issue(uintptr_t a, size_t n, void* pc, int line);
void hb_store_read(uintptr_t a, size_t n, void* pc, int line);
// The store's source word at `a` changed between its issue and that wait: the write that changed it races the store.
void hb_store_overwritten(uintptr_t a, void* pc, int line);
// The tensor cores of warpgroup `wg` read a wgmma's B tile, issued by the warpgroup's 128 threads (it is ordered
// after what any of them knew) and read until the wait that completes group `group`.
void hb_tensor_issue(int wg, const char* rows, int n, int k0, unsigned group, void* pc, int line);
void hb_tensor_complete(int wg, unsigned groups_done);  // the warpgroup's wait: its first groups_done groups completed
// Why a race happened, where the clocks tell (the second race record's size field; helpers/measure/memory.py).
enum RaceCause {
  kCausePlain = 0,          // two threads' accesses with nothing ordering them
  kCauseCopyTooEarly = 1,   // a TMA copy overwrote a stage its reader still used (the issuer did not wait for it)
  kCauseNoWaitForCopy = 2,  // a read of a copy's bytes without a wait for the copy's phase
  kCauseUnfenced = 3,       // a generic-proxy write read or overwritten by the async proxy with no fence.proxy.async
  kCauseTensorInFlight = 4, // a write of shared memory the tensor cores may still be reading (no wgmma_wait_group)
  kCauseStoreInFlight = 5,  // a write of a TMA store's source that the store may still be reading (no wait_group.read)
};
// An mbarrier's clocks: those released into its current phase, and by its last completed one.
struct BarrierClocks {
  std::vector<uint32_t> acc, done;
};
void hb_barrier_init(BarrierClocks& c);
void hb_barrier_arrive(BarrierClocks& c);        // the running thread releases what it knows
void hb_barrier_wait(const BarrierClocks& c);    // the running thread acquires the completed phase
void hb_barrier_complete(BarrierClocks& c, int barrier, unsigned phases);
// A TMA copy to [dst, dst + bytes) of block r's shared memory, issued by the running thread, lands "at" barrier's
// phase `phase`.
void hb_copy_issued(int r, uintptr_t dst, size_t bytes, void* pc, int barrier, unsigned phase, int line);

}  // namespace emu

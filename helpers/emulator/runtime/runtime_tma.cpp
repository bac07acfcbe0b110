// Tile by Tile CPU emulator runtime: Hopper's TMA copies and mbarriers (runtime/include/tma.cuh).
// runtime_internal.h describes the runtime's files.
//
// - An mbarrier is the runtime's record, keyed by the 8 bytes' address in shared memory: its
//   arrival count, the arrivals and transaction bytes still missing in the current phase, and the
//   phases completed. mbarrier_wait(bar, parity) returns once the phase of that parity has
//   completed (the number of completed phases has the other parity), as try_wait.parity does.
// - A TMA copy reads its box of global memory when it is issued (into the copy's own buffer,
//   swizzled and zero-filled as the copy engine would), and writes it to shared memory only when
//   a thread waits for the barrier phase it completes: the latest moment a GPU allows. A kernel
//   that reads a stage before waiting for its copy sees the old contents.
// - The race check (runtime_races.cpp) orders mbarrier arrive -> the phase's completion -> wait,
//   and checks each copy's writes, which happen "at" the completion of its phase.
// - PTX's rules, each stopped with its line (a GPU hangs, or completes a phase early and gives wrong results):
//   a barrier is used only after its mbarrier_init is visible to the user (a __syncthreads, or a __syncwarp in the
//   initializing warp, between them), and by a copy only after the initializing thread's fence_mbarrier_init (or
//   fence_proxy_async_shared): the copy engine is another proxy. The bytes the copies deliver to a phase are the
//   bytes announced for it: a copy landing once the announced bytes are in (the count would go negative, the
//   phase complete early) is stopped, and a phase that waits for bytes no copy delivers is named in the deadlock.
// - Traces also record, as events (ops 5-7), each copy issued, each arrival and each wait passed,
//   for the pipeline's timeline (helpers.measure.hopper).
#include <algorithm>
#include <unordered_map>

#include "runtime_internal.h"

namespace emu {
namespace {
struct PendingCopy {
  char* dst;                         // in the window: of block `rank`'s shared memory
  int rank, from;                    // and the rank of the block whose thread issued it
  std::vector<unsigned char> bytes;  // the box as it will lie in shared memory
  int issuer;
  void* pc;
  int line;
};

struct Mbarrier {
  int index;                  // its pseudo-thread in the race check's clocks
  int rank;                   // its block's, in the cluster
  unsigned count, missing;    // arrivals per phase, and still missing in the current one
  long long tx;               // transaction bytes announced and not yet landed
  unsigned phases;            // completed
  int line;                   // of its mbarrier_init
  int initializer;            // the thread that called it, and its __syncthreads and warp collectives then
  unsigned init_epoch, init_warp_epoch;
  bool fenced;                // the initializer's fence_mbarrier_init (or fence.proxy.async) followed it
  unsigned fence_epoch, fence_warp_epoch;
  unsigned fence_cluster;     // the initializer's cluster barrier arrivals at that fence, + 1 (0: none)
  long long announced, landed;  // bytes announced (expect_tx) and landed in the current phase
  int expect_line;            // the last mbarrier_arrive_expect_tx of the current phase
  std::vector<PendingCopy> copies;
  BarrierClocks clocks;       // released into the current phase, and by the last completed one
};
std::unordered_map<uintptr_t, Mbarrier> mbarriers;  // of every block of the cluster, by key()
int n_mbarriers = 0;

// A barrier's key: its address in the window, and its block's rank in the high bits (every block of a cluster has
// its barriers at the same addresses).
uintptr_t key(const void* bar, int r) { return (uintptr_t)bar | (uintptr_t)r << 56; }
int rank_of(uintptr_t k) { return (int)(k >> 56); }

// ---- mbarriers ------------------------------------------------------------------------------------
// Whether what thread `by` did at (epoch, warp_epoch) is visible to the running thread: a __syncthreads since, or
// a warp collective since where both are lanes of one warp.
bool visible(int by, unsigned epoch, unsigned warp_epoch) {
  const Fiber& f = fibers[cur];
  return by == cur || f.epoch > epoch || (fibers[by].t.warp == f.t.warp && f.warp_epoch > warp_epoch);
}

// Block r's barrier at bar (another block's: reached through distributed shared memory, mapa).
Mbarrier& remote_barrier_at(unsigned long long* bar, int r, int line, const char* what) {
  auto it = mbarriers.find(key(bar, r));
  const Mbarrier* b = it == mbarriers.end() ? nullptr : &it->second;
  if (!b || !b->fenced || !cluster_init_visible(b->fence_cluster))
    fail("kind=cluster;line=%d;detail=%s uses the barrier of block rank %d of the cluster %s: on a GPU this thread "
         "may see the barrier's word as it was before that block's mbarrier_init (garbage: a hang, or a phase that "
         "completes at once);fix=after one thread's mbarrier_init calls and fence_mbarrier_init(), have every thread "
         "of every block call cluster_sync() (the cluster barrier) before any thread uses a peer's barrier, or "
         "multicasts to it",
         line, what, r,
         !b ? "before that block's mbarrier_init ran"
            : !b->fenced ? "whose mbarrier_init was not followed by fence_mbarrier_init() in its thread"
                         : "with no cluster barrier (cluster_sync) between that block's mbarrier_init and this use");
  return it->second;
}

Mbarrier& barrier_at(unsigned long long* bar, int line, const char* what, bool copy = false, int r = -1) {
  size_t off;
  if (!shared_window((uintptr_t)bar, off) || (uintptr_t)bar % 8)
    fail("kind=mbarrier;line=%d;detail=%s is given an address that is not an 8-byte aligned word of shared "
         "memory;fix=declare the barriers as __shared__ unsigned long long bar[N] (or uint64_t) and pass &bar[i]",
         line, what);
  if (r >= 0 && r != rank) return remote_barrier_at(bar, r, line, what);
  auto it = mbarriers.find(key(bar, rank));
  if (it == mbarriers.end())
    fail("kind=mbarrier;line=%d;detail=%s uses a barrier that no mbarrier_init has set up in this block (on a GPU "
         "its phase and counts are garbage: a hang or a wait that passes at once);fix=have one thread call "
         "mbarrier_init(&bar, count) for every barrier, then fence_mbarrier_init() and __syncthreads(), before any "
         "thread uses them",
         line, what);
  Mbarrier& b = it->second;
  char who[48];
  thread_label(b.initializer, who, sizeof who);
  if (!visible(b.initializer, b.init_epoch, b.init_warp_epoch))
    fail("kind=mbarrier;line=%d;detail=%s uses a barrier that thread %s initialized (mbarrier_init, line %d) with no "
         "__syncthreads() between the initialization and this use: on a GPU this thread may see the barrier's word "
         "as it was before mbarrier_init (garbage: a hang, or a wait that passes at once);fix=after one thread's "
         "mbarrier_init calls, call fence_mbarrier_init() in that thread, then __syncthreads() in every thread, "
         "before any thread uses the barriers",
         line, what, who, b.line);
  if (copy && !(b.fenced && visible(b.initializer, b.fence_epoch, b.fence_warp_epoch)))
    fail("kind=mbarrier;line=%d;detail=%s reports to a barrier whose mbarrier_init (line %d, thread %s) was not "
         "followed by fence_mbarrier_init() in that thread%s: the copy engine counts its bytes through the async "
         "proxy, which may still see the barrier uninitialized;fix=call fence_mbarrier_init() in the initializing "
         "thread after its mbarrier_init calls, then __syncthreads(), before the first copy",
         line, what, b.line, who, b.fenced ? " before a __syncthreads() that orders it before this copy" : "");
  return b;
}

// Lands a barrier's copies, one by one in issue order, each counting its bytes off the phase: once the announced
// bytes are in the phase completes, so a copy landing after that (or beyond them) is one the phase did not wait for.
void land_copies(Mbarrier& b) {
  while (!b.copies.empty()) {
    PendingCopy c = std::move(b.copies.front());
    b.copies.erase(b.copies.begin());
    std::memcpy(shared_of(c.rank, c.dst), c.bytes.data(), c.bytes.size());
    b.tx -= (long long)c.bytes.size();
    b.landed += (long long)c.bytes.size();
    if (b.missing == 0 && (b.tx < 0 || (b.tx == 0 && !b.copies.empty()))) {
      long long delivered = b.landed;
      for (const PendingCopy& rest : b.copies) delivered += (long long)rest.bytes.size();
      const int at = b.copies.empty() ? c.line : b.copies.front().line;
      int peer = c.from != b.rank ? c.from : -1;
      for (const PendingCopy& rest : b.copies) peer = peer < 0 && rest.from != b.rank ? rest.from : peer;
      char cluster[640] = "";
      if (peer >= 0)
        snprintf(cluster, sizeof cluster,
                 ". Among them is a multicast from block rank %d of the cluster: either this block's "
                 "mbarrier_arrive_expect_tx leaves out the boxes its peers multicast into it, or a peer multicast into "
                 "this stage for a later round before this block's consumers gave it back (the empty barrier a "
                 "producer waits on before a multicast counts the consumers of every block the box goes to)",
                 peer);
      fail("kind=mbarrier;line=%d;detail=mbarrier_arrive_expect_tx announced %lld bytes for this phase of the "
           "barrier (mbarrier_init at line %d), but the copies issued to it deliver %lld: the phase completes as soon "
           "as the announced bytes have landed, so on a GPU it completes while the copy of line %d may still be "
           "writing the stage (its readers see part of the old tile), and the bytes beyond are counted off the next "
           "phase (the transaction count goes negative)%s;fix=announce exactly the bytes of the copies issued to the "
           "barrier in each phase (a box of R x C floats is 4 R C bytes), in a cluster the peers' multicast boxes "
           "that land in this block too",
           b.expect_line, b.announced, b.line, delivered, at, cluster);
    }
  }
}

void wake_waiters_of(uintptr_t bar);

void complete_phase_if_done(Mbarrier& b, uintptr_t addr) {
  if (b.missing || b.tx > 0) return;
  ++b.phases;
  b.missing = b.count;
  b.announced = b.landed = 0;
  hb_barrier_complete(b.clocks, b.index, b.phases);
  wake_waiters_of(addr);
}

void arrive(Mbarrier& b, uintptr_t addr, int line, const char* what, unsigned tx_bytes) {
  if (b.missing == 0 && !b.copies.empty()) {  // a GPU's copies may have landed by now: they do, here
    land_copies(b);
    complete_phase_if_done(b, addr);
  }
  if (b.missing == 0)
    fail("kind=mbarrier;line=%d;detail=%s arrives at a barrier whose current phase already has all its %u "
         "arrivals and still waits for %lld announced bytes that no copy issued delivers;fix=init the barrier with "
         "the number of threads that arrive in each phase, and announce (mbarrier_arrive_expect_tx) exactly the "
         "bytes of the copies issued to it",
         line, what, b.count, b.tx);
  b.tx += tx_bytes;
  if (tx_bytes) b.announced += tx_bytes, b.expect_line = line;
  hb_barrier_arrive(b.clocks);
  --b.missing;
  complete_phase_if_done(b, addr);
  if (b.missing == 0 && b.tx > 0) wake_waiters_of(addr);  // only bytes are missing: a waiter lands the copies
}

void trace_event(int op, uintptr_t a, void* pc, int parity, int line) {
  if (!tracing) return;
  uintptr_t rel;
  const int space = shared_space(a, rel);
  trace_tagged(rel, 0, op, pc, space, parity, line);
}

uintptr_t waiting_for[kMaxCluster][kMaxThreads];  // the barrier (key) a thread in kWaitMbarrier waits for

void wake_waiters_of(uintptr_t k) {
  const int r = rank_of(k);
  Fiber* f = block_fibers[r];
  for (int i = 0; i < nthreads; ++i)
    if (f[i].state == kWaitMbarrier && waiting_for[r][i] == k) f[i].state = kRunnable;
}

// What a TF32 tensor map delivers: round to nearest, ties to even, which no document states but an H100 did bit by bit
// (tools/experiments/probe_tma_tf32.py: results/stage_10_12_h100_2026-11-27_beta/probe_tma_tf32.json; errors alone
// cannot tell it from cvt.rna's ties-away). tests/stages/test_12.py holds this model to that file.
float tf32_nearest(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + (u >> 13 & 1u)) & 0xffffe000u;
  std::memcpy(&v, &u, 4);
  return v;
}
}  // namespace

void reset_mbarriers() {
  mbarriers.clear();
  n_mbarriers = 0;
}

void mbarrier_proxy_fence() {
  const Fiber& f = fibers[cur];
  for (auto& [k, b] : mbarriers)
    if (b.rank == rank && b.initializer == cur && !b.fenced)
      b.fenced = true, b.fence_epoch = f.epoch, b.fence_warp_epoch = f.warp_epoch,
      b.fence_cluster = f.cluster_arrivals + 1;
}

const char* mbarrier_deadlock_hint(char* out, size_t n) {
  const char* fix = nullptr;
  size_t used = std::strlen(out);
  std::vector<uintptr_t> told;
  for (int i = 0; i < nthreads && used + 200 < n; ++i) {
    const uintptr_t k = waiting_for[rank][i];
    if (fibers[i].state != kWaitMbarrier || std::find(told.begin(), told.end(), k) != told.end()) continue;
    told.push_back(k);
    auto it = mbarriers.find(k);
    if (it == mbarriers.end()) continue;
    const Mbarrier& b = it->second;
    if (b.missing == 0 && b.tx > 0 && b.copies.empty())
      used += (size_t)snprintf(out + used, n - used,
                               ". The barrier of mbarrier_init at line %d has all its arrivals but waits for %lld more "
                               "bytes than its copies delivered: mbarrier_arrive_expect_tx (line %d) announced %lld "
                               "for the phase, the copies issued to it %lld, so the phase never completes",
                               b.line, b.tx, b.expect_line, b.announced, b.landed),
      fix = "announce exactly the bytes of the copies issued to the barrier in each phase (a box of R x C floats "
            "is 4 R C bytes)";
    else if (b.missing)
      used += (size_t)snprintf(out + used, n - used,
                               ". The barrier of mbarrier_init at line %d still misses %u of its %u arrivals in phase "
                               "%u", b.line, b.missing, b.count, b.phases);
  }
  return fix;
}
}  // namespace emu

using namespace emu;

extern "C" void __emu_mbarrier_init(unsigned long long* bar, unsigned count, int line) {
  size_t off;
  if (!shared_window((uintptr_t)bar, off) || (uintptr_t)bar % 8)
    fail("kind=mbarrier;line=%d;detail=mbarrier_init is given an address that is not an 8-byte aligned word of "
         "shared memory;fix=declare the barriers as __shared__ unsigned long long bar[N] and pass &bar[i]",
         line);
  if (count < 1 || count > (1u << 20) - 1)
    fail("kind=mbarrier;line=%d;detail=mbarrier_init(bar, %u): a barrier counts 1 to 2^20 - 1 arrivals per "
         "phase;fix=pass the number of threads (or warps) that arrive in each phase",
         line, count);
  Mbarrier& b = mbarriers[key(bar, rank)];
  if (b.count == 0) b.index = n_mbarriers++, b.rank = rank;
  if (hb_on && b.index >= kMaxBarriers)
    fail("kind=mbarrier;line=%d;detail=more than %d mbarriers in one block: the emulator's race check follows "
         "at most that many",
         line, kMaxBarriers);
  b.count = b.missing = count, b.tx = 0, b.phases = 0, b.line = line;
  b.initializer = cur, b.init_epoch = fibers[cur].epoch, b.init_warp_epoch = fibers[cur].warp_epoch;
  b.fenced = false, b.fence_cluster = 0, b.announced = b.landed = 0, b.expect_line = 0;
  b.copies.clear();
  hb_barrier_init(b.clocks);
  *bar = 0;  // the word itself: what a GPU keeps there is opaque
}

extern "C" void __emu_mbarrier_arrive(unsigned long long* bar, unsigned tx_bytes, int line) {
  Mbarrier& b = barrier_at(bar, line, tx_bytes ? "mbarrier_arrive_expect_tx" : "mbarrier_arrive");
  trace_event(6, (uintptr_t)bar, __builtin_return_address(0), (int)(b.phases & 1), line);
  arrive(b, key(bar, rank), line, tx_bytes ? "mbarrier_arrive_expect_tx" : "mbarrier_arrive", tx_bytes);
}

extern "C" void __emu_mbarrier_wait(unsigned long long* bar, unsigned parity, int line) {
  void* pc = __builtin_return_address(0);
  if (parity > 1)
    fail("kind=mbarrier;line=%d;detail=mbarrier_wait(bar, %u): the parity is 0 or 1 (phases alternate);fix=pass "
         "(round & 1), round counting the passes through the ring of barriers",
         line, parity);
  for (;;) {
    Mbarrier& b = barrier_at(bar, line, "mbarrier_wait");
    if ((b.phases & 1u) != parity) {  // the phase of that parity has completed
      hb_barrier_wait(b.clocks);
      trace_event(7, (uintptr_t)bar, pc, (int)parity, line);
      return;
    }
    if (b.missing == 0 && !b.copies.empty()) {  // only the copies are missing: they land now
      land_copies(b);
      complete_phase_if_done(b, key(bar, rank));
      continue;
    }
    fibers[cur].state = kWaitMbarrier;
    fibers[cur].line = line;
    waiting_for[rank][cur] = key(bar, rank);
    block_current();
  }
}

namespace {
// A TMA copy of one box: into the running block (mask 0), or, multicast, into every block of the cluster whose bit
// is set in mask, each at dst and reporting to its own barrier at bar.
void tma_copy(const char* what, void* dst, const void* map_arg, unsigned long long* bar, int row, int col,
              unsigned mask, int line, void* pc) {
  const EmuTensorMap m = tensor_map_at(map_arg, what, line);
  size_t off;
  if (!shared_window((uintptr_t)dst, off) || off % 128)
    fail("kind=tma;line=%d;detail=the destination of %s is not a 128-byte aligned address in shared "
         "memory%s;fix=point it at a shared-memory tile aligned to 1024 bytes (the 128-byte swizzle's pattern "
         "repeats every 1024)",
         line, what, shared_window((uintptr_t)dst, off) ? "" : " (it copies global memory into shared memory)");
  const size_t row_bytes = (size_t)m.box_cols * 4, bytes = row_bytes * m.box_rows;
  long long dyn;
  if (!in_dynamic((uintptr_t)dst, dyn) || dyn < 0 || (size_t)dyn + bytes > req.dyn_smem)
    fail("kind=tma;line=%d;detail=the box of %s, %u x %u floats (%zu bytes), does not lie inside the "
         "block's dynamic shared memory (%zu bytes from byte %lld);fix=launch with enough dynamic shared memory for "
         "every stage and the bytes skipped to align them",
         line, what, m.box_rows, m.box_cols, bytes, req.dyn_smem, dyn);
  if (mask && (mask >> cluster_size || mask >= 1u << 16))
    fail("kind=cluster;line=%d;detail=%s's mask 0x%x names block ranks beyond the cluster's %d blocks (PTX: the "
         "behaviour is undefined);fix=set bit r of the mask for each rank r (0 .. %d) the box goes to",
         line, what, mask, cluster_size, cluster_size - 1);
  const unsigned targets = mask ? mask : 1u << rank;
  for (int r = 0; r < cluster_size; ++r)  // every barrier and peer checked before any byte moves
    if (targets >> r & 1u) {
      barrier_at(bar, line, what, true, r);
      if (r != rank) cluster_remote_use(r, line, what);
    }
  std::vector<unsigned char> box(bytes, 0);
  const Buffer& src = buffers[m.buffer];
  for (uint32_t r = 0; r < m.box_rows; ++r)
    for (uint32_t k = 0; k < m.box_cols; ++k) {
      const long long gr = (long long)row + r, gc = (long long)col + k;
      float v = 0.0f;
      if (gr >= 0 && gc >= 0 && (uint64_t)gr < m.rows && (uint64_t)gc < m.cols) {
        const char* p = src.base + (size_t)gr * m.pitch + (size_t)gc * 4;
        std::memcpy(&v, p, 4);
        if (m.tf32) v = tf32_nearest(v);
        if (tracing && k % 4 == 0) {  // the copy engine's reads, 16 bytes at a time, tagged 2: no warp's request
          const size_t n = std::min<size_t>(16, (size_t)(m.cols - (uint64_t)gc) * 4);
          trace_tagged((uintptr_t)(p - src.base), n, 0, pc, 0, 2, 0, (int)m.buffer);
        }
      }
      const uintptr_t at = (uintptr_t)dst + r * row_bytes + k * 4;
      const size_t phys = m.swizzle == 128 ? swizzle128(at) : at;
      std::memcpy(box.data() + (phys - (uintptr_t)dst), &v, 4);
    }
  for (int r = 0; r < cluster_size; ++r) {
    if (!(targets >> r & 1u)) continue;
    Mbarrier& b = barrier_at(bar, line, what, true, r);
    char into[400];
    snprintf(into, sizeof into,
             "TMA multicast copy into block rank %d of the cluster (whose stage was given back before its consumers "
             "were done: its empty barrier counts both blocks' consumers, or whose full barrier completed before this "
             "box landed: its expect_tx counts the peers' boxes too)", r);
    wgmma_check_overwrite_in(r, (uintptr_t)dst, bytes, pc, line, r == rank ? "TMA copy" : into);
    hb_copy_issued(r, (uintptr_t)dst, bytes, pc, b.index, b.phases + 1, line);
    if (r == rank) trace_event(5, (uintptr_t)bar, pc, (int)(b.phases & 1), line);  // names the barrier: the stage
    b.copies.push_back(PendingCopy{(char*)dst, r, rank, box, cur, pc, line});
    if (b.missing == 0) wake_waiters_of(key(bar, r));
  }
}
}  // namespace

extern "C" void __emu_tma_load_2d(void* dst, const void* map_arg, unsigned long long* bar, int row, int col,
                                  int line) {
  tma_copy("tma_load_2d", dst, map_arg, bar, row, col, 0, line, __builtin_return_address(0));
}

extern "C" void __emu_fence_mbarrier_init(int line) {
  (void)line;
  ++fibers[cur].proxy_fences;  // kernels/tma.cuh's fence_mbarrier_init includes fence.proxy.async
  hb_proxy_fence();
  mbarrier_proxy_fence();
}

EmuTensorMap emu::tensor_map_at(const void* map_arg, const char* what, int line) {
  EmuTensorMap m;
  std::memcpy(&m, map_arg, sizeof m);
  if (m.magic != kTensorMapMagic || m.buffer >= buffers.size())
    fail("kind=tma;line=%d;detail=%s is given something that is not a tensor map built by the host;fix=pass "
         "the address of the kernel's `const __grid_constant__ TensorMap` parameter, built by "
         "helpers.run.tensor_maps (on a GPU a garbage map is an illegal instruction)",
         line, what);
  return m;
}

extern "C" void __emu_tma_check_map(const void* map_arg, int line) { tensor_map_at(map_arg, "tma_prefetch_map", line); }

// ---- clusters: a peer block's barriers and multicast copies (runtime_cluster.cpp runs the cluster) ----------------
extern "C" void __emu_tma_load_2d_multicast(void* dst, const void* map_arg, unsigned long long* bar, int row, int col,
                                            unsigned short mask, int line) {
  if (!mask)
    fail("kind=cluster;line=%d;detail=tma_load_2d_multicast's mask is 0: the box goes to no block;fix=set bit r of "
         "the mask for each rank r of the cluster the box goes to",
         line);
  tma_copy("tma_load_2d_multicast", dst, map_arg, bar, row, col, mask, line, __builtin_return_address(0));
}

extern "C" void __emu_mbarrier_arrive_cluster(unsigned long long* bar, unsigned r, int line) {
  if (r >= (unsigned)cluster_size)
    fail("kind=cluster;line=%d;detail=mbarrier_arrive_cluster names block rank %u, but the cluster has %d blocks "
         "(mapa of a rank outside the cluster is undefined);fix=pass a rank from 0 to %d",
         line, r, cluster_size, cluster_size - 1);
  Mbarrier& b = barrier_at(bar, line, "mbarrier_arrive_cluster", false, (int)r);
  if ((int)r != rank) cluster_remote_use((int)r, line, "mbarrier_arrive_cluster");
  else trace_event(6, (uintptr_t)bar, __builtin_return_address(0), (int)(b.phases & 1), line);
  arrive(b, key(bar, (int)r), line, "mbarrier_arrive_cluster", 0);
}

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
  char* dst;
  std::vector<unsigned char> bytes;  // the box as it will lie in shared memory
  int issuer;
  void* pc;
  int line;
};

struct Mbarrier {
  int index;                  // its pseudo-thread in the race check's clocks: nthreads + index
  unsigned count, missing;    // arrivals per phase, and still missing in the current one
  long long tx;               // transaction bytes announced and not yet landed
  unsigned phases;            // completed
  int line;                   // of its mbarrier_init
  int initializer;            // the thread that called it, and its __syncthreads and warp collectives then
  unsigned init_epoch, init_warp_epoch;
  bool fenced;                // the initializer's fence_mbarrier_init (or fence.proxy.async) followed it
  unsigned fence_epoch, fence_warp_epoch;
  long long announced, landed;  // bytes announced (expect_tx) and landed in the current phase
  int expect_line;            // the last mbarrier_arrive_expect_tx of the current phase
  std::vector<PendingCopy> copies;
  BarrierClocks clocks;       // released into the current phase, and by the last completed one
};
std::unordered_map<uintptr_t, Mbarrier> mbarriers;
int n_mbarriers = 0;

// ---- mbarriers ------------------------------------------------------------------------------------
// Whether what thread `by` did at (epoch, warp_epoch) is visible to the running thread: a __syncthreads since, or
// a warp collective since where both are lanes of one warp.
bool visible(int by, unsigned epoch, unsigned warp_epoch) {
  const Fiber& f = fibers[cur];
  return by == cur || f.epoch > epoch || (fibers[by].t.warp == f.t.warp && f.warp_epoch > warp_epoch);
}

Mbarrier& barrier_at(unsigned long long* bar, int line, const char* what, bool copy = false) {
  size_t off;
  if (!shared_window((uintptr_t)bar, off) || (uintptr_t)bar % 8)
    fail("kind=mbarrier;line=%d;detail=%s is given an address that is not an 8-byte aligned word of shared "
         "memory;fix=declare the barriers as __shared__ unsigned long long bar[N] (or uint64_t) and pass &bar[i]",
         line, what);
  auto it = mbarriers.find((uintptr_t)bar);
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
    std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
    b.tx -= (long long)c.bytes.size();
    b.landed += (long long)c.bytes.size();
    if (b.missing == 0 && (b.tx < 0 || (b.tx == 0 && !b.copies.empty()))) {
      long long delivered = b.landed;
      for (const PendingCopy& rest : b.copies) delivered += (long long)rest.bytes.size();
      const int at = b.copies.empty() ? c.line : b.copies.front().line;
      fail("kind=mbarrier;line=%d;detail=mbarrier_arrive_expect_tx announced %lld bytes for this phase of the "
           "barrier (mbarrier_init at line %d), but the copies issued to it deliver %lld: the phase completes as soon "
           "as the announced bytes have landed, so on a GPU it completes while the copy of line %d may still be "
           "writing the stage (its readers see part of the old tile), and the bytes beyond are counted off the next "
           "phase (the transaction count goes negative);fix=announce exactly the bytes of the copies issued to the "
           "barrier in each phase (a box of R x C floats is 4 R C bytes)",
           b.expect_line, b.announced, b.line, delivered, at);
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

uintptr_t waiting_for[kMaxThreads];  // the barrier a thread in kWaitMbarrier waits for

void wake_waiters_of(uintptr_t bar) {
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kWaitMbarrier && waiting_for[i] == bar) fibers[i].state = kRunnable;
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
  for (auto& [addr, b] : mbarriers)
    if (b.initializer == cur && !b.fenced) b.fenced = true, b.fence_epoch = f.epoch, b.fence_warp_epoch = f.warp_epoch;
}

const char* mbarrier_deadlock_hint(char* out, size_t n) {
  const char* fix = nullptr;
  size_t used = std::strlen(out);
  std::vector<uintptr_t> told;
  for (int i = 0; i < nthreads && used + 200 < n; ++i) {
    if (fibers[i].state != kWaitMbarrier || std::find(told.begin(), told.end(), waiting_for[i]) != told.end()) continue;
    told.push_back(waiting_for[i]);
    auto it = mbarriers.find(waiting_for[i]);
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
  Mbarrier& b = mbarriers[(uintptr_t)bar];
  if (b.count == 0) b.index = n_mbarriers++;
  if (hb_on && b.index >= kMaxBarriers)
    fail("kind=mbarrier;line=%d;detail=more than %d mbarriers in one block: the emulator's race check follows "
         "at most that many",
         line, kMaxBarriers);
  b.count = b.missing = count, b.tx = 0, b.phases = 0, b.line = line;
  b.initializer = cur, b.init_epoch = fibers[cur].epoch, b.init_warp_epoch = fibers[cur].warp_epoch;
  b.fenced = false, b.announced = b.landed = 0, b.expect_line = 0;
  b.copies.clear();
  hb_barrier_init(b.clocks);
  *bar = 0;  // the word itself: what a GPU keeps there is opaque
}

extern "C" void __emu_mbarrier_arrive(unsigned long long* bar, unsigned tx_bytes, int line) {
  Mbarrier& b = barrier_at(bar, line, tx_bytes ? "mbarrier_arrive_expect_tx" : "mbarrier_arrive");
  trace_event(6, (uintptr_t)bar, __builtin_return_address(0), (int)(b.phases & 1), line);
  arrive(b, (uintptr_t)bar, line, tx_bytes ? "mbarrier_arrive_expect_tx" : "mbarrier_arrive", tx_bytes);
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
      complete_phase_if_done(b, (uintptr_t)bar);
      continue;
    }
    fibers[cur].state = kWaitMbarrier;
    fibers[cur].line = line;
    waiting_for[cur] = (uintptr_t)bar;
    block_current();
  }
}

extern "C" void __emu_tma_load_2d(void* dst, const void* map_arg, unsigned long long* bar, int row, int col,
                                  int line) {
  void* pc = __builtin_return_address(0);
  EmuTensorMap m;
  std::memcpy(&m, map_arg, sizeof m);
  if (m.magic != kTensorMapMagic || m.buffer >= buffers.size())
    fail("kind=tma;line=%d;detail=tma_load_2d is given something that is not a tensor map built by the host;fix=pass "
         "the address of the kernel's `const __grid_constant__ TensorMap` parameter, built by "
         "helpers.run.tensor_maps (on a GPU a garbage map is an illegal instruction)",
         line);
  size_t off;
  if (!shared_window((uintptr_t)dst, off) || off % 128)
    fail("kind=tma;line=%d;detail=the destination of tma_load_2d is not a 128-byte aligned address in shared "
         "memory%s;fix=point it at a shared-memory tile aligned to 1024 bytes (the 128-byte swizzle's pattern "
         "repeats every 1024)",
         line, shared_window((uintptr_t)dst, off) ? "" : " (it copies global memory into shared memory)");
  const size_t row_bytes = (size_t)m.box_cols * 4, bytes = row_bytes * m.box_rows;
  long long dyn;
  if (!in_dynamic((uintptr_t)dst, dyn) || dyn < 0 || (size_t)dyn + bytes > req.dyn_smem)
    fail("kind=tma;line=%d;detail=the box of tma_load_2d, %u x %u floats (%zu bytes), does not lie inside the "
         "block's dynamic shared memory (%zu bytes from byte %lld);fix=launch with enough dynamic shared memory for "
         "every stage and the bytes skipped to align them",
         line, m.box_rows, m.box_cols, bytes, req.dyn_smem, dyn);
  Mbarrier& b = barrier_at(bar, line, "tma_load_2d", true);
  wgmma_check_overwrite((uintptr_t)dst, bytes, pc, line, "TMA copy");
  PendingCopy c{(char*)dst, std::vector<unsigned char>(bytes, 0), cur, pc, line};
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
      std::memcpy(c.bytes.data() + (phys - (uintptr_t)dst), &v, 4);
    }
  hb_copy_issued((uintptr_t)dst, bytes, pc, b.index, b.phases + 1, line);
  trace_event(5, (uintptr_t)bar, pc, (int)(b.phases & 1), line);  // names the barrier: the stage
  b.copies.push_back(std::move(c));
  if (b.missing == 0) wake_waiters_of((uintptr_t)bar);
}

extern "C" void __emu_fence_mbarrier_init(int line) {
  (void)line;
  ++fibers[cur].proxy_fences;  // kernels/tma.cuh's fence_mbarrier_init includes fence.proxy.async
  hb_proxy_fence();
  mbarrier_proxy_fence();
}

extern "C" void __emu_tma_check_map(const void* map_arg, int line) {
  EmuTensorMap m;
  std::memcpy(&m, map_arg, sizeof m);
  if (m.magic != kTensorMapMagic || m.buffer >= buffers.size())
    fail("kind=tma;line=%d;detail=tma_prefetch_map is given something that is not a tensor map built by the host;"
         "fix=pass the address of the kernel's `const __grid_constant__ TensorMap` parameter",
         line);
}

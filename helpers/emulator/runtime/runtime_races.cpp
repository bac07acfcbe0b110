// Tile by Tile CPU emulator runtime: the happens-before race check of shared memory, in traced
// blocks only. runtime_internal.h describes the runtime's files.
//
// Vector clocks over the block's threads (a cluster's: every block's), one pseudo-thread per mbarrier (its
// completed phases) and one per warpgroup's tensor cores (its completed wgmma groups). Each block of a cluster has
// its own shared words; a multicast copy is checked in every block it writes, and a remote arrival releases what
// its thread knew to the peer's barrier, so that a race between blocks is found as one within a block. Every shared word remembers
// its last write (a thread's store, an asynchronous copy's landing, or a TMA copy, which happens
// "at" the completion of its phase) and the reads since (a thread's loads; the tensor cores',
// from a wgmma's issue to the wait that completes its group). A read or write not ordered after
// the last write, or a write (a TMA copy's: at its issue) not ordered after the reads since, is a
// race: the runtime records the two accesses in the trace (ops 3 and 4, the second with its
// RaceCause), and helpers.measure.memory.races reports them with their lines. Orderings:
// __syncthreads and the warp collectives (runtime_warps.cpp), mbarrier arrive -> the phase's
// completion -> wait (runtime_tma.cpp), wgmma_wait_group -> the completion of the groups it waits
// for (runtime_wgmma.cpp). A warpgroup's wgmma calls order no memory between its threads (PTX:
// wgmma.fence orders register accesses only).
//
// Proxies: the tensor cores (wgmma) and the copy engine (TMA) reach shared memory through the async
// proxy, threads' stores and cp.async through the generic proxy. A generic write read or overwritten
// by the async proxy must be followed, in its writer's program order, by fence.proxy.async
// (fence_proxy_async_shared, or fence_mbarrier_init, which includes it), and that fence ordered
// before the async access; else it is a race (kCauseUnfenced) even where a barrier orders the two.
#include <algorithm>

#include "runtime_internal.h"

namespace emu {

bool hb_on = false;

namespace {
std::vector<std::vector<uint32_t>> clocks;  // per thread of the cluster (thread_agent): width() entries
std::vector<std::vector<uint32_t>> fences;  // per thread: its clock at each fence.proxy.async, ascending
struct Access {
  uint32_t clock;
  uint16_t who;     // a thread_agent; barrier_agent for a TMA copy; tensor_agent for a wgmma's read
  uint16_t thread;  // the thread_agent that made it (a copy, a wgmma: the one that issued it)
  uint8_t kind;     // 0 load, 1 store, 2 copy engine write, 3 tensor core read, 4 copy engine read (a TMA store)
  int line;         // the call's line where the runtime knows it (copies, wgmma), else 0 (from pc)
  void* pc;
};
struct WordShadow {
  Access write;
  bool written;
  uint8_t nreads;
  Access reads[6];
};
std::vector<WordShadow> shadows[kMaxCluster];  // per block: one per 4-byte word of the shared window in use
size_t shadow_static_words = 0;
bool reported_plain = false, reported_async = false;  // one race of each kind per block (cluster): the first

int all_threads() { return nthreads * cluster_size; }
size_t width() { return (size_t)all_threads() + kMaxBarriers + (size_t)kMaxWarpgroups * cluster_size; }
size_t thread_agent(int r, int i) { return (size_t)(r * nthreads + i); }
size_t me() { return thread_agent(rank, cur); }
int barrier_agent(int barrier) { return all_threads() + barrier; }
int tensor_agent(int wg) { return all_threads() + kMaxBarriers + rank * kMaxWarpgroups + wg; }

size_t hb_word(const std::vector<WordShadow>& shadow, uintptr_t a, bool& ok) {
  size_t off;
  ok = shared_window(a, off);
  if (!ok) return 0;
  size_t w = off < kDynamicWindow ? off / 4 : shadow_static_words + (off - kDynamicWindow) / 4;
  ok = w < shadow.size();
  return w;
}

void join_into(std::vector<uint32_t>& to, const std::vector<uint32_t>& from) {
  for (size_t i = 0; i < to.size(); ++i) to[i] = std::max(to[i], from[i]);
}

bool ordered(const Access& a, const std::vector<uint32_t>& vc) { return vc[a.who] >= a.clock; }

// A thread's generic write is fenced for the async proxy, as seen by clocks vc: its writer's first
// fence.proxy.async after it is ordered before vc.
bool fenced(const Access& w, const std::vector<uint32_t>& vc) {
  const std::vector<uint32_t>& f = fences[w.who];
  auto it = std::lower_bound(f.begin(), f.end(), w.clock);
  return it != f.end() && vc[w.who] >= *it;
}

// What the reader of a TMA copy's bytes knew of the copy's barrier: it had waited for the phase before
// the copy's (a reader of the stage's previous contents whom the copy overwrote: the issuer did not wait
// for it), or not (a reader that did not wait for the copy).
int copy_cause(uint32_t copy_phase, uint32_t reader_knows) {
  return copy_phase >= 2 && reader_knows + 1 >= copy_phase ? kCauseCopyTooEarly : kCauseNoWaitForCopy;
}

void record_race(const Access& first, const Access& second, uintptr_t a, int cause) {
  const bool async = cause != kCausePlain || first.kind >= 2 || second.kind >= 2;
  bool& reported = async ? reported_async : reported_plain;
  if (reported) return;
  reported = true;
  uintptr_t rel;
  const int space = shared_space(a, rel);
  const int saved = cur;
  Fiber* const saved_fibers = fibers;
  const unsigned saved_block = trace_block;
  for (const Access* x : {&first, &second}) {
    // the record names the thread that made the access (a copy: its issuer), and its block
    const int r = x->thread / nthreads;
    cur = x->thread % nthreads, fibers = block_fibers[r];
    trace_block = block_index[r].x + req.grid[0] * (block_index[r].y + req.grid[1] * block_index[r].z);
    trace_tagged(rel, x == &first ? 4 : (size_t)cause, x == &first ? 3 : 4, x->pc, space, x->kind, x->line);
  }
  cur = saved, fibers = saved_fibers, trace_block = saved_block;
  __emu_cur = &fibers[cur].t;
}

// Why `first` (earlier) and `second` race, given the clocks of second's side.
int cause_of(const Access& first, const Access& second, const std::vector<uint32_t>& vc) {
  if (first.kind == 3 && (second.kind == 1 || second.kind == 2)) return kCauseTensorInFlight;
  if (first.kind == 4 && (second.kind == 1 || second.kind == 2)) return kCauseStoreInFlight;
  if (first.kind == 2 && (second.kind == 0 || second.kind == 3))  // read before the copy's phase was waited for
    return copy_cause(first.clock, vc[first.who]);
  if ((first.kind == 0 || first.kind == 3) && second.kind == 2)  // a copy over a read not known to be done
    return copy_cause(second.clock, clocks[first.thread][second.who]);
  return kCausePlain;
}

// One access of n bytes at a (of block r's shared memory) by `who` (a thread, a copy's or the tensor cores'
// pseudo-thread) whose clocks are vc.
void hb_check(uintptr_t a, size_t n, int kind, void* pc, int who, uint32_t clock, const std::vector<uint32_t>& vc,
              int line = 0, int r = -1) {
  const bool writes = kind == 1 || kind == 2, async = kind >= 2;
  std::vector<WordShadow>& shadow = shadows[r < 0 ? rank : r];
  for (uintptr_t p = a & ~(uintptr_t)3; p < a + n; p += 4) {
    bool ok;
    size_t w = hb_word(shadow, p, ok);
    if (!ok) continue;
    WordShadow& s = shadow[w];
    Access me = {clock, (uint16_t)who, (uint16_t)emu::me(), (uint8_t)kind, line, pc};
    if (s.written && s.write.who != who) {
      if (!ordered(s.write, vc)) record_race(s.write, me, p, cause_of(s.write, me, vc));
      else if (async && s.write.kind == 1 && !fenced(s.write, vc)) record_race(s.write, me, p, kCauseUnfenced);
    }
    if (writes) {
      for (int r = 0; r < s.nreads; ++r)
        if (s.reads[r].who != who && !ordered(s.reads[r], vc)) record_race(s.reads[r], me, p, cause_of(s.reads[r], me, vc));
      s.write = me, s.written = true, s.nreads = 0;
    } else {
      int slot = -1;
      for (int r = 0; r < s.nreads; ++r)
        if (s.reads[r].who == who) slot = r;
      if (slot < 0) slot = s.nreads < 6 ? s.nreads++ : 5;  // full: the newest replaces the last
      s.reads[slot] = me;
    }
  }
}
}  // namespace

void hb_reset() {
  hb_on = tracing;
  reported_plain = reported_async = false;
  if (!hb_on) return;
  clocks.assign((size_t)all_threads(), std::vector<uint32_t>(width(), 0));
  for (int i = 0; i < all_threads(); ++i) clocks[(size_t)i][(size_t)i] = 1;
  fences.assign((size_t)all_threads(), {});
  shadow_static_words = sizeof __emu_static_smem / 4;
  for (int r = 0; r < cluster_size; ++r) shadows[r].assign(shadow_static_words + (req.dyn_smem + 3) / 4, WordShadow{});
}

// Threads first .. first+n-1 of the running block have met (a barrier): each now knows what all knew.
void hb_meet(int first, int n) {
  if (!hb_on) return;
  const size_t base = thread_agent(rank, 0);
  std::vector<uint32_t> all(width(), 0);
  for (size_t i = base + first; i < base + first + n; ++i) join_into(all, clocks[i]);
  for (size_t i = base + first; i < base + first + n; ++i) {
    clocks[i] = all;
    ++clocks[i][i];
  }
}

void hb_meet_cluster() {
  if (!hb_on) return;
  std::vector<uint32_t> all(width(), 0);
  for (auto& c : clocks) join_into(all, c);
  for (size_t i = 0; i < clocks.size(); ++i) {
    clocks[i] = all;
    ++clocks[i][i];
  }
}

void hb_meet_lanes(int first, unsigned mask) {
  if (!hb_on) return;
  const size_t base = thread_agent(rank, first);
  std::vector<uint32_t> all(width(), 0);
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) join_into(all, clocks[base + l]);
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) {
      clocks[base + l] = all;
      ++clocks[base + l][base + l];
    }
}

// A thread's own load or store of shared memory (from the checks, traced blocks only).
void hb_access(uintptr_t a, size_t n, int store, void* pc) {
  if (!hb_on) return;
  hb_check(a, n, store ? 1 : 0, pc, (int)me(), clocks[me()][me()], clocks[me()]);
}

void hb_proxy_fence() {
  if (!hb_on) return;
  fences[me()].push_back(clocks[me()][me()]);
  ++clocks[me()][me()];  // a write after the fence is not covered by it
}

void hb_meet_threads(const int* threads, int n) {
  if (!hb_on) return;
  std::vector<uint32_t> all(width(), 0);
  for (int i = 0; i < n; ++i) join_into(all, clocks[thread_agent(rank, threads[i])]);
  for (int i = 0; i < n; ++i) {
    const size_t t = thread_agent(rank, threads[i]);
    clocks[t] = all;
    ++clocks[t][t];
  }
}

// ---- TMA stores: the copy engine reads shared memory through the async proxy ----------------------
void hb_store_issue(uintptr_t a, size_t n, void* pc, int line) {
  if (!hb_on) return;
  const std::vector<uint32_t>& vc = clocks[me()];
  const Access self = {vc[me()], (uint16_t)me(), (uint16_t)me(), 4, line, pc};
  const std::vector<WordShadow>& shadow = shadows[rank];
  for (uintptr_t p = a & ~(uintptr_t)3; p < a + n; p += 4) {
    bool ok;
    const size_t w = hb_word(shadow, p, ok);
    if (!ok || !shadow[w].written) continue;
    const Access& last = shadow[w].write;
    if (!ordered(last, vc)) record_race(last, self, p, cause_of(last, self, vc));
    else if (last.kind == 1 && !fenced(last, vc)) record_race(last, self, p, kCauseUnfenced);  // its own writes too
  }
}

void hb_store_read(uintptr_t a, size_t n, void* pc, int line) {
  if (!hb_on) return;
  hb_check(a, n, 4, pc, (int)me(), clocks[me()][me()], clocks[me()], line);
}

void hb_store_overwritten(uintptr_t a, void* pc, int line) {
  if (!hb_on) return;
  bool ok;
  const std::vector<WordShadow>& shadow = shadows[rank];
  const size_t w = hb_word(shadow, a, ok);
  if (!ok || !shadow[w].written) return;
  const Access self = {clocks[me()][me()], (uint16_t)me(), (uint16_t)me(), 4, line, pc};
  record_race(self, shadow[w].write, a & ~(uintptr_t)3, kCauseStoreInFlight);
}

// Tensor-core reads of a wgmma's B tile, from its issue: ordered after what any of the warpgroup's threads knew.
void hb_tensor_issue(int wg, const char* rows, int n, int k0, unsigned group, void* pc, int line) {
  if (!hb_on) return;
  std::vector<uint32_t> vc(width(), 0);
  for (int i = wg * kWarpgroupThreads; i < (wg + 1) * kWarpgroupThreads; ++i) join_into(vc, clocks[thread_agent(rank, i)]);
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < 8; k += 4) {  // one check per 16-byte chunk the tensor cores read
      const uintptr_t logical = (uintptr_t)rows + (size_t)c * 128 + (size_t)(k0 + k) * 4;
      hb_check(swizzle128(logical), 16, 3, pc, tensor_agent(wg), group + 1, vc, line);
    }
}

void hb_tensor_complete(int wg, unsigned groups_done) {
  if (!hb_on) return;
  const size_t agent = (size_t)tensor_agent(wg);
  for (int i = wg * kWarpgroupThreads; i < (wg + 1) * kWarpgroupThreads; ++i)
    clocks[thread_agent(rank, i)][agent] = std::max(clocks[thread_agent(rank, i)][agent], (uint32_t)groups_done);
}

// ---- mbarriers: arrive -> the phase's completion -> wait ---------------------------------------
void hb_barrier_init(BarrierClocks& c) {
  if (hb_on) c.acc.assign(width(), 0), c.done = c.acc;
}

void hb_barrier_arrive(BarrierClocks& c) {
  if (!hb_on) return;
  join_into(c.acc, clocks[me()]);
  ++clocks[me()][me()];
}

void hb_barrier_wait(const BarrierClocks& c) {
  if (hb_on) join_into(clocks[me()], c.done);
}

void hb_barrier_complete(BarrierClocks& c, int barrier, unsigned phases) {
  if (!hb_on) return;
  c.acc[(size_t)barrier_agent(barrier)] = phases;  // the copies of this phase "happen" here
  c.done = c.acc;
  std::fill(c.acc.begin(), c.acc.end(), 0u);
}

// The copy writes its words "at" its phase's completion, issued after what its issuer knew.
void hb_copy_issued(int r, uintptr_t dst, size_t bytes, void* pc, int barrier, unsigned phase, int line) {
  if (!hb_on) return;
  std::vector<uint32_t> vc = clocks[me()];
  hb_check(dst, bytes, 2, pc, barrier_agent(barrier), phase, vc, line, r);
  ++clocks[me()][me()];
}

}  // namespace emu

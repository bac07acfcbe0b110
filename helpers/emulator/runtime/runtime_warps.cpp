// Tile by Tile CPU emulator runtime: __syncthreads, named barriers (bar.sync id, count) and the warp
// collectives (__syncwarp, shuffles, ballots, __activemask), with the divergence they check: every thread of
// the block at the same __syncthreads, whole warps at a named barrier, every lane of a collective's mask at the
// same call, none of them finished.
// runtime_internal.h describes the runtime's files.
#include <algorithm>

#include "runtime_internal.h"

namespace emu {
namespace {
struct WarpState {
  unsigned arrived, mask;
  int line;
  unsigned long long slot[32];
};
WarpState warps[kMaxWarps];
int block_arrived = 0, block_line = 0;
int reduce_acc[3], reduce_result = 0;
int active_waiting[kMaxWarps];

void check_no_exited_threads(const char* what, int line) {
  if (done_count == 0) return;
  int exited = -1;
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kDone) { exited = i; break; }
  fail("kind=divergence;line=%d;detail=%s at line %d is reached by thread %d but %d thread(s) of the "
       "block, thread %d first, have already finished without reaching it",
       line, what, line, cur, done_count, exited);
}
}  // namespace

// The other blocks of a cluster keep theirs here while one runs (enter_block).
namespace {
struct SavedBarriers {
  WarpState warps[kMaxWarps];
  int block_arrived, block_line, reduce_acc[3], reduce_result;
  int active_waiting[kMaxWarps];
};
SavedBarriers saved_barriers[kMaxCluster];
}  // namespace

void barriers_swap_block(int from, int to) {
  SavedBarriers& a = saved_barriers[from];
  std::memcpy(a.warps, warps, sizeof warps);
  std::memcpy(a.active_waiting, active_waiting, sizeof active_waiting);
  std::memcpy(a.reduce_acc, reduce_acc, sizeof reduce_acc);
  a.block_arrived = block_arrived, a.block_line = block_line, a.reduce_result = reduce_result;
  const SavedBarriers& b = saved_barriers[to];
  std::memcpy(warps, b.warps, sizeof warps);
  std::memcpy(active_waiting, b.active_waiting, sizeof active_waiting);
  std::memcpy(reduce_acc, b.reduce_acc, sizeof reduce_acc);
  block_arrived = b.block_arrived, block_line = b.block_line, reduce_result = b.reduce_result;
}

// Named barriers (bar.sync id, count): the threads arrived at each, in arrival order, and the count they wait for.
constexpr int kNamedBarriers = 16;
struct NamedBarrier {
  unsigned count;
  int line, first, waiting;  // the first thread waiting (for messages), and how many wait
  unsigned lanes[kMaxWarps];  // each warp's lanes waiting there
  std::vector<int> whole;     // the warps whose every live lane waits there, in the order they became whole
};
NamedBarrier named[kNamedBarriers];

void reset_barriers() {
  for (NamedBarrier& b : named) b.count = 0, b.waiting = 0, std::memset(b.lanes, 0, sizeof b.lanes), b.whole.clear();
  std::memset(warps, 0, sizeof warps);
  std::memset(active_waiting, 0, sizeof active_waiting);
  block_arrived = 0;
}

// __activemask(): lanes of a warp run one after another here, so a lane cannot know which of
// the others will reach the same point until each of them has either blocked somewhere or
// finished ("the warp has settled"). Then every group of lanes waiting at one __activemask
// line gets the mask of that group, as converged lanes do on a GPU.
void settle_activemask(unsigned warp) {
  if (!active_waiting[warp]) return;
  int first = (int)warp * 32, last = first + 32 < nthreads ? first + 32 : nthreads;
  for (int i = first; i < last; ++i)
    if (fibers[i].state == kRunnable) return;
  for (int i = first; i < last; ++i) {
    if (fibers[i].state != kWaitActive) continue;
    unsigned mask = 0;
    for (int j = i; j < last; ++j)
      if (fibers[j].state == kWaitActive && fibers[j].line == fibers[i].line) mask |= 1u << (j - first);
    for (int j = i; j < last; ++j)
      if (mask >> (j - first) & 1u) fibers[j].state = kRunnable, fibers[j].result = mask, --active_waiting[warp];
  }
}

void barriers_thread_exit(const Fiber& f) {
  if (block_arrived > 0) {
    int waiting = -1;
    for (int i = 0; i < nthreads; ++i)
      if (fibers[i].state == kWaitBlock) { waiting = i; break; }
    char label[48];
    thread_label(waiting, label, sizeof label);
    fail("kind=divergence;line=%d;detail=thread %s waits at __syncthreads (line %d), which this thread "
         "never reached before it finished",
         fibers[waiting].line, label, fibers[waiting].line);
  }
  WarpState& w = warps[f.t.warp];
  if (w.arrived && (w.mask >> f.t.lane & 1u))
    fail("kind=divergence;line=%d;detail=a warp collective at line %d names lane %u in its mask, but that "
         "lane finished without reaching it",
         w.line, w.line, f.t.lane);
}

void named_barrier_deadlock_hint(char* out, size_t n) {
  size_t used = std::strlen(out);
  for (int id = 1; id < kNamedBarriers && used + 160 < n; ++id)
    if (named[id].waiting)
      used += (size_t)snprintf(out + used, n - used,
                               ". Barrier %d (named_barrier_sync at line %d) has %zu whole warps of the %u threads it "
                               "waits for (%d threads wait there)",
                               id, named[id].line, named[id].whole.size(), named[id].count, named[id].waiting);
}

// ---- barriers ---------------------------------------------------------------------------
namespace {
void release_block_barrier() {
  block_arrived = 0;
  hb_meet(0, nthreads);
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kWaitBlock) fibers[i].state = kRunnable;
}

void arrive_block_barrier(int line, const char* what) {
  check_no_exited_threads(what, line);
  if (block_arrived == 0) {
    block_line = line;
  } else if (line != block_line) {
    fail("kind=divergence;line=%d;detail=threads of one block wait at different barriers: line %d and "
         "line %d (every thread must reach the same __syncthreads)",
         line, block_line, line);
  }
  if (++block_arrived == nthreads) {
    release_block_barrier();
    return;
  }
  fibers[cur].state = kWaitBlock;
  fibers[cur].line = line;
  block_current();
}
}  // namespace
}  // namespace emu

using namespace emu;

extern "C" void __emu_syncthreads(int line) {
  arrive_block_barrier(line, "__syncthreads");
  ++fibers[cur].epoch;
  trace_pending_async_copies();
}

extern "C" int __emu_syncthreads_reduce(int line, int op, int predicate) {
  if (block_arrived == 0) reduce_acc[0] = 0, reduce_acc[1] = 1, reduce_acc[2] = 0;
  reduce_acc[0] += predicate;
  reduce_acc[1] &= predicate;
  reduce_acc[2] |= predicate;
  if (block_arrived + 1 == nthreads) reduce_result = reduce_acc[op];
  arrive_block_barrier(line, "__syncthreads_count/and/or");
  ++fibers[cur].epoch;
  trace_pending_async_copies();
  return reduce_result;
}

// ---- warp collectives -----------------------------------------------------------------------
namespace {
unsigned warp_lanes(unsigned warp) {
  unsigned first = warp * 32u, n = (unsigned)nthreads - first;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

void warp_barrier(unsigned mask, int line) {
  Fiber& f = fibers[cur];
  unsigned lane = f.t.lane, bit = 1u << lane;
  WarpState& w = warps[f.t.warp];
  mask &= warp_lanes(f.t.warp);  // lanes beyond the block's last thread do not exist
  if (!(mask & bit))
    fail("kind=divergence;line=%d;detail=lane %u calls a warp collective whose mask 0x%08x leaves it out", line,
         lane, mask);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && fibers[f.t.warp * 32 + l].state == kDone)
      fail("kind=divergence;line=%d;detail=the mask 0x%08x of the warp collective at line %d names lane %u, "
           "which has already finished",
           line, mask, line, l);
  if (w.arrived == 0) {
    w.mask = mask;
    w.line = line;
  } else if (w.mask != mask || w.line != line) {
    fail("kind=divergence;line=%d;detail=lanes of one warp meet at different warp collectives: line %d "
         "(mask 0x%08x) and line %d (mask 0x%08x)",
         line, w.line, w.mask, line, mask);
  }
  w.arrived |= bit;
  if (w.arrived == w.mask) {
    w.arrived = 0;
    hb_meet_lanes((int)f.t.warp * 32, mask);  // __syncwarp orders memory between the lanes it names
    for (unsigned l = 0; l < 32; ++l)
      if (mask >> l & 1u) fibers[f.t.warp * 32 + l].state = kRunnable;
    return;
  }
  f.state = kWaitWarp;
  f.line = line;
  block_current();
}

// Every lane that passes a warp collective counts it (the tracer orders lanes of one warp by it).
void warp_sync_point(unsigned mask, int line) {
  warp_barrier(mask, line);
  ++fibers[cur].warp_epoch;
}
}  // namespace

extern "C" unsigned __emu_activemask(int line) {
  Fiber& f = fibers[cur];
  f.state = kWaitActive;
  f.line = line;
  ++active_waiting[f.t.warp];
  settle_activemask(f.t.warp);
  if (f.state != kRunnable) block_current();
  return f.result;
}

extern "C" void __emu_syncwarp(unsigned mask, int line) { warp_sync_point(mask, line); }

extern "C" unsigned long long __emu_shfl(unsigned mask, unsigned long long value, int src_lane, int line) {
  Fiber& f = fibers[cur];
  WarpState& w = warps[f.t.warp];
  w.slot[f.t.lane] = value;
  warp_sync_point(mask, line);
  unsigned effective = mask & warp_lanes(f.t.warp);
  if (src_lane < 0 || src_lane > 31 || !(effective >> src_lane & 1u))
    fail("kind=shuffle_source;line=%d;detail=lane %u reads lane %d in a shuffle, but lane %d is not in the mask "
         "0x%08x",
         line, f.t.lane, src_lane, src_lane, mask);
  unsigned long long got = w.slot[src_lane];
  warp_sync_point(mask, line);  // nobody overwrites a slot before every lane has read
  return got;
}

extern "C" unsigned __emu_ballot(unsigned mask, int predicate, int line) {
  Fiber& f = fibers[cur];
  WarpState& w = warps[f.t.warp];
  w.slot[f.t.lane] = (unsigned long long)(predicate != 0);
  warp_sync_point(mask, line);
  unsigned effective = mask & warp_lanes(f.t.warp), bits = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((effective >> l & 1u) && w.slot[l]) bits |= 1u << l;
  warp_sync_point(mask, line);
  return bits;
}

// bar.sync id, count: a warp arrives when all its lanes have (.aligned), counting 32 threads, and the barrier
// completes when `count` threads' warps have arrived; it releases them.
extern "C" void __emu_named_barrier(unsigned id, unsigned count, int line) {
  // a named barrier's state is the running block's alone here (enter_block does not swap it): refused in a cluster
  // rather than shared between its blocks
  if (cluster_size > 1)
    fail("kind=unsupported;line=%d;detail=named barriers (bar.sync id, count) in a kernel launched in clusters", line);
  if (id == 0 || id >= (unsigned)kNamedBarriers)
    fail("kind=unsupported;line=%d;detail=named_barrier_sync(%u, %u): a block has hardware barriers 0 to 15, 0 being "
         "the one __syncthreads uses; the emulator runs named barriers 1 to 15 (use one of those)",
         line, id, count);
  if (count == 0 || count % 32 || count > (unsigned)nthreads)
    fail("kind=barrier;line=%d;detail=named_barrier_sync(%u, %u): the count is a number of threads in whole warps, a "
         "multiple of 32 from 32 to the block's %d threads%s;fix=pass the number of threads that meet there (128 for "
         "a warpgroup)",
         line, id, count, nthreads, count > (unsigned)nthreads ? " (a barrier waiting for more can never complete)" : "");
  NamedBarrier& b = named[id];
  if (b.waiting && b.count != count) {
    char other[48];
    thread_label(b.first, other, sizeof other);
    fail("kind=barrier;line=%d;detail=threads meet at barrier %u with different counts: thread %s with %u (line %d), "
         "this one with %u (on a GPU the barrier completes at whichever count it holds: too early or never);fix=give "
         "every call on one barrier id the same count",
         line, id, other, b.count, b.line, count);
  }
  if (!b.waiting) b.count = count, b.line = line, b.first = cur;
  ++b.waiting;
  Fiber& f = fibers[cur];
  const unsigned w = f.t.warp;
  b.lanes[w] |= 1u << f.t.lane;
  unsigned live = 0;
  for (unsigned l = 0; l < 32 && w * 32 + l < (unsigned)nthreads; ++l)
    if (fibers[w * 32 + l].state != kDone) live |= 1u << l;
  if ((b.lanes[w] & live) == live) b.whole.push_back((int)w);  // the warp has arrived (32 threads of the count)
  if (b.whole.size() * 32 >= count) {  // the first count / 32 whole warps meet, and go on
    std::vector<int> met;
    for (size_t k = 0; k < count / 32; ++k) {
      const int ww = b.whole[k];
      for (int l = 0; l < 32; ++l)
        if (b.lanes[ww] >> l & 1u) met.push_back(ww * 32 + l);
      b.lanes[ww] = 0;
    }
    b.whole.erase(b.whole.begin(), b.whole.begin() + count / 32);
    b.waiting -= (int)met.size();
    hb_meet_threads(met.data(), (int)met.size());
    bool me = false;
    for (int t : met) {
      if (t == cur) me = true;
      else fibers[t].state = kRunnable;
    }
    if (me) {
      ++f.warp_epoch;
      return;
    }
  }
  f.state = kWaitNamed;  // until a completion releases this thread's warp
  f.line = line;
  block_current();
  ++f.warp_epoch;  // the tracer orders a warp's lanes by their collectives; the barrier orders them too
}

// <mma.h>'s wmma calls are warp collectives too (__syncwarp); their misuse is reported here.
extern "C" void __emu_wmma_misuse(const char* what, int line) {
  fail("kind=wmma;line=%d;detail=%s", line, what);
}

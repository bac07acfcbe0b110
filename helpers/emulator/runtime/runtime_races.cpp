// Tile by Tile CPU emulator runtime: the happens-before race check of shared memory, in traced
// blocks only. runtime_internal.h describes the runtime's files.
//
// Vector clocks over the block's threads and one pseudo-thread per mbarrier (its completed
// phases). Every shared word remembers its last write (a thread's store, or a TMA copy, which
// happens "at" the completion of its phase) and the reads since. A read or write not ordered
// after the last write, or a write (a copy's: at its issue) not ordered after the reads since, is
// a race: the runtime records the two accesses in the trace (ops 3 and 4), and
// helpers.measure.memory.races reports them with their lines. Orderings: __syncthreads
// (runtime_warps.cpp), each warpgroup collective (runtime_wgmma.cpp), mbarrier arrive -> the
// phase's completion -> wait (runtime_tma.cpp).
#include <algorithm>

#include "runtime_internal.h"

namespace emu {

bool hb_on = false;

namespace {
std::vector<std::vector<uint32_t>> clocks;  // per thread: nthreads + kMaxBarriers entries
struct Access {
  uint32_t clock;
  uint16_t who;     // a thread, or nthreads + barrier index for a copy
  uint16_t thread;  // the thread that made it (a copy: the one that issued it)
  uint8_t kind;     // 0 load, 1 store, 2 copy engine write, 3 tensor core read
  int line;         // the call's line where the runtime knows it (copies, wgmma), else 0 (from pc)
  void* pc;
};
struct WordShadow {
  Access write;
  bool written;
  uint8_t nreads;
  Access reads[6];
};
std::vector<WordShadow> shadow;  // one per 4-byte word of the shared window in use
size_t shadow_static_words = 0;
bool hb_reported = false;  // one race per block is recorded: the first, with both lines

size_t hb_word(uintptr_t a, bool& ok) {
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

void record_race(const Access& first, const Access& second, uintptr_t a) {
  if (hb_reported) return;
  hb_reported = true;
  uintptr_t rel;
  const int space = shared_space(a, rel);
  const int saved = cur;
  for (const Access* x : {&first, &second}) {
    cur = x->thread;  // the record names the thread that made the access (a copy: its issuer)
    trace_tagged(rel, 4, x == &first ? 3 : 4, x->pc, space, x->kind, x->line);
  }
  cur = saved;
  __emu_cur = &fibers[cur].t;
}

// One access of n bytes at a by `who` (a thread, or a copy's pseudo-thread) whose clocks are vc.
void hb_check(uintptr_t a, size_t n, int kind, void* pc, int who, uint32_t clock, const std::vector<uint32_t>& vc,
              int line = 0) {
  const bool writes = kind == 1 || kind == 2;
  for (uintptr_t p = a & ~(uintptr_t)3; p < a + n; p += 4) {
    bool ok;
    size_t w = hb_word(p, ok);
    if (!ok) continue;
    WordShadow& s = shadow[w];
    Access me = {clock, (uint16_t)who, (uint16_t)cur, (uint8_t)kind, line, pc};
    if (s.written && s.write.who != who && !ordered(s.write, vc)) record_race(s.write, me, p);
    if (writes) {
      for (int r = 0; r < s.nreads; ++r)
        if (s.reads[r].who != who && !ordered(s.reads[r], vc)) record_race(s.reads[r], me, p);
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
  hb_reported = false;
  if (!hb_on) return;
  const size_t width = (size_t)nthreads + kMaxBarriers;
  clocks.assign((size_t)nthreads, std::vector<uint32_t>(width, 0));
  for (int i = 0; i < nthreads; ++i) clocks[(size_t)i][(size_t)i] = 1;
  shadow_static_words = sizeof __emu_static_smem / 4;
  shadow.assign(shadow_static_words + (req.dyn_smem + 3) / 4, WordShadow{});
}

// Threads first .. first+n-1 have met (a barrier or a collective): each now knows what all knew.
void hb_meet(int first, int n) {
  if (!hb_on) return;
  std::vector<uint32_t> all((size_t)nthreads + kMaxBarriers, 0);
  for (int i = first; i < first + n; ++i) join_into(all, clocks[(size_t)i]);
  for (int i = first; i < first + n; ++i) {
    clocks[(size_t)i] = all;
    ++clocks[(size_t)i][(size_t)i];
  }
}

// A thread's own load or store of shared memory (from the checks, traced blocks only).
void hb_access(uintptr_t a, size_t n, int store, void* pc) {
  if (!hb_on) return;
  hb_check(a, n, store ? 1 : 0, pc, cur, clocks[(size_t)cur][(size_t)cur], clocks[(size_t)cur]);
}

// An access the runtime makes for the running thread at a known line: an mbarrier's setup (a store of its word)
// and each use of it (a load), so that a use no barrier orders after the setup is a race, as on a GPU.
void hb_access_at(uintptr_t a, size_t n, int store, void* pc, int line) {
  if (!hb_on) return;
  hb_check(a, n, store ? 1 : 0, pc, cur, clocks[(size_t)cur][(size_t)cur], clocks[(size_t)cur], line);
}

// Tensor-core reads of a wgmma's B tile, at its completion.
void hb_tensor_read(const char* rows, int n, int k0, void* pc, int line) {
  if (!hb_on) return;
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < 8; k += 4) {  // one check per 16-byte chunk the tensor cores read
      const uintptr_t logical = (uintptr_t)rows + (size_t)c * 128 + (size_t)(k0 + k) * 4;
      hb_check(swizzle128(logical), 16, 3, pc, cur, clocks[(size_t)cur][(size_t)cur], clocks[(size_t)cur], line);
    }
}

// ---- mbarriers: arrive -> the phase's completion -> wait ---------------------------------------
void hb_barrier_init(BarrierClocks& c) {
  if (hb_on) c.acc.assign((size_t)nthreads + kMaxBarriers, 0), c.done = c.acc;
}

void hb_barrier_arrive(BarrierClocks& c) {
  if (!hb_on) return;
  join_into(c.acc, clocks[(size_t)cur]);
  ++clocks[(size_t)cur][(size_t)cur];
}

void hb_barrier_wait(const BarrierClocks& c) {
  if (hb_on) join_into(clocks[(size_t)cur], c.done);
}

void hb_barrier_complete(BarrierClocks& c, int barrier, unsigned phases) {
  if (!hb_on) return;
  c.acc[(size_t)nthreads + (size_t)barrier] = phases;  // the copies of this phase "happen" here
  c.done = c.acc;
  std::fill(c.acc.begin(), c.acc.end(), 0u);
}

// The copy writes its words "at" its phase's completion, issued after what its issuer knew.
void hb_copy_issued(uintptr_t dst, size_t bytes, void* pc, int barrier, unsigned phase, int line) {
  if (!hb_on) return;
  std::vector<uint32_t> vc = clocks[(size_t)cur];
  hb_check(dst, bytes, 2, pc, nthreads + barrier, phase, vc, line);
  ++clocks[(size_t)cur][(size_t)cur];
}

}  // namespace emu

// Tile by Tile CPU emulator runtime, part 2: Hopper's TMA copies and mbarriers (kernels/tma.cuh),
// and the happens-before race check that knows them. Included by runtime.cpp after the wgmma
// section; it uses that file's fibers, checks and trace.
//
// - An mbarrier is the runtime's record, keyed by the 8 bytes' address in shared memory: its
//   arrival count, the arrivals and transaction bytes still missing in the current phase, and the
//   phases completed. mbarrier_wait(bar, parity) returns once the phase of that parity has
//   completed (the number of completed phases has the other parity), as try_wait.parity does.
// - A TMA copy reads its box of global memory when it is issued (into the copy's own buffer,
//   swizzled and zero-filled as the copy engine would), and writes it to shared memory only when
//   a thread waits for the barrier phase it completes: the latest moment a GPU allows. A kernel
//   that reads a stage before waiting for its copy sees the old contents.
// - Race check (traced blocks only): vector clocks over the block's threads and one pseudo-thread
//   per barrier (its completed phases). Every shared word remembers its last write (a thread's store,
//   or a copy, which happens "at" the completion of its phase) and the reads since. A read or write
//   not ordered after the last write, or a write (a copy's: at its issue) not ordered after the reads
//   since, is a race: the runtime records the two accesses in the trace (ops 3 and 4), and
//   helpers.measure.memory.races reports them with their lines. Orderings: __syncthreads, each
//   warpgroup collective (wgmma calls), mbarrier arrive -> the phase's completion -> wait.
// - Traces also record, as events (ops 5-7), each copy issued, each arrival and each wait passed,
//   for the pipeline's timeline (helpers.measure.hopper).
#pragma once

namespace {
// ---- the emulator's tensor map (helpers/emulator/tensor_map.py writes the same layout) ------------
struct EmuTensorMap {
  uint32_t magic, buffer;
  uint64_t rows, cols, pitch;
  uint32_t box_rows, box_cols, tf32, swizzle;
};
constexpr uint32_t kTensorMapMagic = 0x50414d54u;  // "TMAP"
constexpr int kMaxBarriers = 256;                   // per block, for the race check's clocks

struct PendingCopy {
  char* dst;
  std::vector<unsigned char> bytes;  // the box as it will lie in shared memory
  int issuer;
  void* pc;
};

struct Mbarrier {
  int index;                  // its pseudo-thread in the clocks: nthreads + index
  unsigned count, missing;    // arrivals per phase, and still missing in the current one
  long long tx;               // transaction bytes announced and not yet landed
  unsigned phases;            // completed
  int line;                   // of its mbarrier_init
  std::vector<PendingCopy> copies;
  std::vector<uint32_t> acc, done;  // clocks released into the current phase, and by the last completed one
};
std::unordered_map<uintptr_t, Mbarrier> mbarriers;
int n_mbarriers = 0;

// ---- vector clocks and shared-memory shadow (race check, traced blocks only) ---------------------
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
bool hb_on = false;
bool hb_reported = false;  // one race per block is recorded: the first, with both lines

size_t hb_word(uintptr_t a, bool& ok) {
  size_t off;
  ok = shared_window(a, off);
  if (!ok) return 0;
  size_t w = off < kDynamicWindow ? off / 4 : shadow_static_words + (off - kDynamicWindow) / 4;
  ok = w < shadow.size();
  return w;
}

void hb_reset() {
  hb_on = tracing;
  hb_reported = false;
  mbarriers.clear();
  n_mbarriers = 0;
  if (!hb_on) return;
  const size_t width = (size_t)nthreads + kMaxBarriers;
  clocks.assign((size_t)nthreads, std::vector<uint32_t>(width, 0));
  for (int i = 0; i < nthreads; ++i) clocks[(size_t)i][(size_t)i] = 1;
  shadow_static_words = sizeof __emu_static_smem / 4;
  shadow.assign(shadow_static_words + (req.dyn_smem + 3) / 4, WordShadow{});
}

void join_into(std::vector<uint32_t>& to, const std::vector<uint32_t>& from) {
  for (size_t i = 0; i < to.size(); ++i) to[i] = std::max(to[i], from[i]);
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

bool ordered(const Access& a, const std::vector<uint32_t>& vc) { return vc[a.who] >= a.clock; }

// A trace record whose `repeat` field carries a tag (events and race records), and where the runtime knows the
// call's line (a copy, an mbarrier call, a wgmma), that line in the offset's high 32 bits (helpers/measure/trace.py
// reads it there: a return address's line depends on the compiler).
void trace_tagged(uintptr_t off, size_t n, int op, void* pc, int space, int tag, int line = 0) {
  trace(off | (uintptr_t)line << 32, n, op, pc, space, -1);
  if (trace_header->count <= trace_header->capacity) trace_records[trace_header->count - 1].repeat = (uint8_t)tag;
}

int barrier_space(uintptr_t a, uintptr_t& rel) {
  size_t off;
  shared_window(a, off);
  rel = off < kDynamicWindow ? off : off - kDynamicWindow;
  return off < kDynamicWindow ? 1 : 2;
}

void record_race(const Access& first, const Access& second, uintptr_t a) {
  if (hb_reported) return;
  hb_reported = true;
  uintptr_t rel;
  const int space = barrier_space(a, rel);
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

// A thread's own load or store of shared memory (from access(), traced blocks only).
void hb_access(uintptr_t a, size_t n, int store, void* pc) {
  if (!hb_on) return;
  hb_check(a, n, store ? 1 : 0, pc, cur, clocks[(size_t)cur][(size_t)cur], clocks[(size_t)cur]);
}

// ---- mbarriers ------------------------------------------------------------------------------------
Mbarrier& barrier_at(unsigned long long* bar, int line, const char* what) {
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
  return it->second;
}

void land_copies(Mbarrier& b) {
  for (PendingCopy& c : b.copies) {
    std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
    b.tx -= (long long)c.bytes.size();
  }
  b.copies.clear();
}

void wake_waiters_of(uintptr_t bar);

void complete_phase_if_done(Mbarrier& b, uintptr_t addr) {
  if (b.missing || b.tx > 0) return;
  ++b.phases;
  b.missing = b.count;
  if (hb_on) {
    b.acc[(size_t)nthreads + (size_t)b.index] = b.phases;  // the copies of this phase "happen" here
    b.done = b.acc;
    std::fill(b.acc.begin(), b.acc.end(), 0u);
  }
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
  if (hb_on) {
    join_into(b.acc, clocks[(size_t)cur]);
    ++clocks[(size_t)cur][(size_t)cur];
  }
  --b.missing;
  complete_phase_if_done(b, addr);
  if (b.missing == 0 && b.tx > 0) wake_waiters_of(addr);  // only bytes are missing: a waiter lands the copies
}

void trace_event(int op, uintptr_t a, void* pc, int parity, int line) {
  if (!tracing) return;
  uintptr_t rel;
  const int space = barrier_space(a, rel);
  trace_tagged(rel, 0, op, pc, space, parity, line);
}

uintptr_t waiting_for[kMaxThreads];  // the barrier a thread in kWaitMbarrier waits for

void wake_waiters_of(uintptr_t bar) {
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kWaitMbarrier && waiting_for[i] == bar) fibers[i].state = kRunnable;
}

// 16-byte chunk c of a 128-byte row goes to chunk c ^ (row % 8), on the shared address's bits.
size_t swizzle128(uintptr_t address) { return address ^ ((address >> 7 & 7) << 4); }

float tf32_nearest(float v) {  // what a TF32 tensor map delivers: round to nearest, ties to even
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + (u >> 13 & 1u)) & 0xffffe000u;
  std::memcpy(&v, &u, 4);
  return v;
}
}  // namespace

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
  b.copies.clear();
  if (hb_on) b.acc.assign((size_t)nthreads + kMaxBarriers, 0), b.done = b.acc;
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
      if (hb_on) {
        join_into(clocks[(size_t)cur], b.done);
      }
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
  Mbarrier& b = barrier_at(bar, line, "tma_load_2d");
  PendingCopy c{(char*)dst, std::vector<unsigned char>(bytes, 0), cur, pc};
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
          trace((uintptr_t)(p - src.base), n, 0, pc, 0, (int)m.buffer);
          if (trace_header->count <= trace_header->capacity) trace_records[trace_header->count - 1].repeat = 2;
        }
      }
      const uintptr_t at = (uintptr_t)dst + r * row_bytes + k * 4;
      const size_t phys = m.swizzle == 128 ? swizzle128(at) : at;
      std::memcpy(c.bytes.data() + (phys - (uintptr_t)dst), &v, 4);
    }
  if (hb_on) {  // the copy writes its words "at" its phase's completion, issued after what its issuer knew
    std::vector<uint32_t> vc = clocks[(size_t)cur];
    hb_check((uintptr_t)dst, bytes, 2, pc, nthreads + b.index, b.phases + 1, vc, line);
    ++clocks[(size_t)cur][(size_t)cur];
  }
  trace_event(5, (uintptr_t)bar, pc, (int)(b.phases & 1), line);  // names the barrier: the stage
  b.copies.push_back(std::move(c));
  if (b.missing == 0) wake_waiters_of((uintptr_t)bar);
}

namespace {
// Tensor-core reads of a wgmma's B tile, at its completion (traced blocks only).
void hb_tensor_read(const char* rows, int n, int k0, void* pc, int line) {
  if (!hb_on) return;
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < 8; k += 4) {  // one check per 16-byte chunk the tensor cores read
      const uintptr_t logical = (uintptr_t)rows + (size_t)c * 128 + (size_t)(k0 + k) * 4;
      hb_check(swizzle128(logical), 16, 3, pc, cur, clocks[(size_t)cur][(size_t)cur], clocks[(size_t)cur], line);
    }
}
}  // namespace

extern "C" void __emu_setmaxnreg(int regs, int line) {
  if (regs < 24 || regs > 256 || regs % 8)
    fail("kind=wgmma;line=%d;detail=setmaxnreg to %d registers: the count is a multiple of 8 from 24 to 256", line,
         regs);
  warpgroup_sync(line, "setmaxnreg");
}

extern "C" void __emu_tma_check_map(const void* map_arg, int line) {
  EmuTensorMap m;
  std::memcpy(&m, map_arg, sizeof m);
  if (m.magic != kTensorMapMagic || m.buffer >= buffers.size())
    fail("kind=tma;line=%d;detail=tma_prefetch_map is given something that is not a tensor map built by the host;"
         "fix=pass the address of the kernel's `const __grid_constant__ TensorMap` parameter",
         line);
}

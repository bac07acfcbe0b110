// Tile by Tile CPU emulator runtime: Hopper's warpgroup MMA (runtime/include/wgmma.cuh) and the
// other warpgroup collectives (setmaxnreg). The 128 threads of a warpgroup make each call
// together; a product is issued with A and the accumulators' addresses, joins the open group,
// and is computed, reading B from shared memory through its descriptor, when a wait completes
// its group. Also __cvta_generic_to_shared, the shared window's offsets the descriptors name.
// runtime_internal.h describes the runtime's files.
//
// PTX's rules for wgmma, each checked with the line that breaks it (a GPU gives wrong results or hangs):
// - wgmma_fence before the first wgmma of a warpgroup, and between ordinary code's writes of a wgmma's
//   registers (its A fragment, its accumulators) and the wgmma: each thread's registers that wgmma used are
//   remembered as of its last issue, completion or fence, and a value changed since is named.
// - The registers of a wgmma in flight (issued, its group not yet completed by a wait) are not touched: its
//   accumulators hold a NaN pattern until it completes (a read of them gives NaN, as it gives garbage on a
//   GPU), a write of them or of its A fragment is named at the next wgmma or the wait.
// - The shared memory a wgmma reads is not written until a wait completes it: a copy issued over it is named
//   with both lines; any other change is found when it completes (B's bytes are kept from its issue).
// - Generic-proxy writes (cp.async's landed bytes, here; stores too, in the race check of traced blocks) are
//   read by the tensor cores only after the writer's fence_proxy_async_shared.
// - setmaxnreg: a warpgroup's count moves up (inc) or down (dec) only, and the block's warpgroups share the
//   registers it had at launch: an increase waits until decreases (or finished warpgroups) free enough, and
//   one that never can is a deadlock, reported with the registers it waits for.
// Traced blocks leave the checks of shared memory to the race check (runtime_races.cpp), which names both
// lines of every one of them.
#include "runtime_internal.h"

namespace emu {
namespace {
// The emulator's matrix descriptor: the tile's address / 16 in bits 0-43, as the GPU's address
// field (adding 2 to a descriptor moves it 32 bytes along K there and here), the address's low 4
// bits in 44-47 (the GPU drops them; here they are checked), the swizzle mode in 62-63.
constexpr unsigned long long kDescAddress = (1ull << 44) - 1, kSwizzle128 = 1ull << 62;

constexpr int kWarpgroup = kWarpgroupThreads;
constexpr uint32_t kInFlight = 0x7fc0dead;  // what in-flight accumulators hold: a quiet NaN
constexpr int kRegisterFile = 65536;        // registers of an SM (sm_90)

// One wgmma_m64k8_tf32, issued and not yet completed. A and the accumulators' addresses are
// taken when it is issued; B is read from shared memory when its group completes.
struct WgmmaOp {
  float a[64][8];                // A, TF32 bits
  float a_raw[kWarpgroup][4];    // each thread's A fragment as issued, and where it lies
  const float* a_ptr[kWarpgroup];
  float* d[kWarpgroup];          // each thread's accumulators
  const char* rows;              // B's tile: its first row, 1024-byte aligned
  unsigned char b_seen[256 * 32];  // the 32 bytes of each row it reads, at its issue
  unsigned long long desc;
  int n, k0, line;               // k0: the first float of each row it reads (0, 8, 16, 24)
  int chain;                     // its accumulators (Warpgroup::chains)
  void* pc;                      // its call, for the race check's reports
  unsigned group;                // wgmma_commit_group calls before it: its group once committed
};

// A warpgroup's accumulators that wgmma adds into: their value as the tensor cores hold it.
struct Chain {
  float* d[kWarpgroup];
  int n;                        // wgmma's N: n / 2 accumulators a thread
  std::vector<float> value;     // kWarpgroup x n / 2
  int pending;                  // operations in flight on them
};

struct Warpgroup {
  int arrived, line, first;      // the collective call being gathered: threads there, its line, the first
  const char* what;              // and its name
  int done;                      // threads finished
  unsigned commits;              // wgmma_commit_group calls
  bool fenced;                   // a wgmma_fence has run
  std::vector<WgmmaOp> ops;      // in issue order
  std::vector<Chain> chains;
  int regs;                      // setmaxnreg's count (0: the launch's)
  int want, want_line, want_inc; // a setmaxnreg waiting for registers (want = 0: none)
  unsigned grants;               // setmaxnreg calls completed
};
Warpgroup warpgroups[kMaxWarpgroups];

// A thread's registers that wgmma used, as wgmma last saw them (issue, completion) or its last fence.
struct Seen {
  const float* p;
  int n;
  std::vector<float> v;
};
std::vector<Seen> seen[kMaxThreads];

// cp.async's landed words (generic-proxy writes), for the untraced blocks' fence check.
struct GenericWrite {
  uint32_t block, fences, value;
  int writer;
  void* pc;
};
std::vector<GenericWrite> generic_writes;
uint32_t block_serial = 0;

int warpgroup_of(int thread) { return thread / kWarpgroup; }

void label(int i, char* out, size_t n) { thread_label(i, out, n); }

Seen* find_seen(int thread, const float* p, int n) {
  for (Seen& s : seen[thread])
    if (s.p == p && s.n == n) return &s;
  return nullptr;
}

void remember(int thread, const float* p, int n) {
  Seen* s = find_seen(thread, p, n);
  if (!s) {
    if (seen[thread].size() >= 64) seen[thread].erase(seen[thread].begin());
    seen[thread].push_back({p, n, {}});
    s = &seen[thread].back();
  }
  s->v.assign(p, p + n);
}

bool changed(const float* p, const float* v, int n) { return std::memcmp(p, v, (size_t)n * 4) != 0; }

// The running thread arrives at a warpgroup-collective call ("sync.aligned" in PTX): the 128
// threads of its warpgroup must all make the same call. The caller adds its share of the
// call's work, then waits in warpgroup_wait; the last to arrive acts for the warpgroup.
Warpgroup& warpgroup_arrive(int line, const char* what) {
  if (nthreads % kWarpgroup)
    fail("kind=wgmma;line=%d;detail=%s is made by a warpgroup, 128 consecutive threads, but the block has %d "
         "threads;fix=launch blocks of a multiple of 128 threads, one warpgroup per 128",
         line, what, nthreads);
  Warpgroup& g = warpgroups[warpgroup_of((int)fibers[cur].t.linear)];
  char me[48], other[48];
  if (g.done) {
    int i = warpgroup_of((int)fibers[cur].t.linear) * kWarpgroup;
    while (fibers[i].state != kDone) ++i;
    thread_label(cur, me, sizeof me);
    thread_label(i, other, sizeof other);
    fail("kind=divergence;line=%d;detail=%s at line %d is reached by thread %s, but thread %s of its warpgroup has "
         "already finished without reaching it (the 128 threads of a warpgroup make every wgmma call together)",
         line, what, line, me, other);
  }
  if (g.arrived == 0) {
    g.line = line, g.first = cur, g.what = what;
  } else if (g.line != line) {
    thread_label(cur, me, sizeof me);
    thread_label(g.first, other, sizeof other);
    fail("kind=divergence;line=%d;detail=threads of warpgroup %u meet at different wgmma calls: thread %s at %s "
         "(line %d) and thread %s at %s (line %d). The 128 threads of a warpgroup make every wgmma call together",
         line, fibers[cur].t.linear / kWarpgroup, other, g.what, g.line, me, what, line);
  }
  ++g.arrived;
  return g;
}

// The warpgroup's threads meet, which orders no memory between them (PTX: wgmma.fence orders register accesses).
void warpgroup_wait(Warpgroup& g) {
  Fiber& f = fibers[cur];
  if (g.arrived == kWarpgroup) {
    g.arrived = 0;
    int first = (int)f.t.linear / kWarpgroup * kWarpgroup;
    for (int i = first; i < first + kWarpgroup; ++i)
      if (fibers[i].state == kWaitWarpgroup) fibers[i].state = kRunnable;
  } else {
    f.state = kWaitWarpgroup;
    f.line = g.line;
    block_current();
  }
  ++f.warp_epoch;  // its warp's lanes have met: the tracer orders them by it
}

float tf32_bits(float v) {  // what the tensor cores read of an input: the low 13 mantissa bits dropped
  unsigned u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) <= 0x7f800000u) u &= 0xffffe000u;  // a NaN stays a NaN
  std::memcpy(&v, &u, 4);
  return v;
}

// The physical address of logical 16-byte chunk j of row c of a tile whose rows start at `rows` (1024-aligned).
const char* chunk_at(const char* rows, int c, int j) { return rows + (size_t)c * 128 + (size_t)((j ^ (c % 8)) * 16); }

// The rows of B's tile that a descriptor names, checked against the rules of the 128-byte
// swizzle and the block's shared memory.
const char* wgmma_rows(unsigned long long desc, int n, int line, int& k0) {
  const uintptr_t p = (desc & kDescAddress) << 4 | (desc >> 44 & 15);
  size_t off;
  if ((desc & ~(kDescAddress | 15ull << 44)) != kSwizzle128 || !shared_window(p, off))
    fail("kind=wgmma;line=%d;detail=the descriptor of wgmma_m64k8_tf32 does not name a tile in shared memory: "
         "wgmma reads B from shared memory only;fix=make the descriptor with wgmma_desc_sw128(tile), tile a "
         "pointer into a __shared__ or extern __shared__ array",
         line);
  const size_t into_row = off % 128, base = off - into_row;
  if (into_row % 32 || base % 1024)
    fail("kind=wgmma;line=%d;detail=wgmma_desc_sw128's tile is %zu bytes past a 1024-byte boundary of shared "
         "memory (__cvta_generic_to_shared(tile) %% 1024 == %zu), but in the 128-byte swizzle the tile's first row "
         "must be 1024-byte aligned and the tile may start 0, 32, 64 or 96 bytes into it (k0 = 0, 8, 16 or 24 "
         "floats);fix=align the tiles to 1024 bytes in shared memory (__align__(1024) on a __shared__ array, or "
         "round dynamic shared memory's start up by __cvta_generic_to_shared(p) %% 1024), then point at row 0, "
         "float k0 of a tile. On a GPU the tensor cores would read the wrong 16-byte chunks of the rows",
         line, off % 1024, off % 1024);
  const char* rows = (const char*)p - into_row;
  const size_t bytes = (size_t)n * 128;
  long long dyn;
  if (in_dynamic((uintptr_t)rows, dyn)) {
    if (dyn < 0 || (size_t)dyn + bytes > req.dyn_smem)
      fail("kind=wgmma;line=%d;detail=the B tile of wgmma_m64k8_tf32<%d>, %d rows of 128 bytes from byte %lld of "
           "dynamic shared memory, does not lie inside the %zu bytes the launch gave it;fix=launch with enough "
           "dynamic shared memory (shared_mem=) for every tile and the up to 1024 bytes skipped to align them",
           line, n, n, dyn, req.dyn_smem);
  } else {
    const SharedVar* v = shared_var_at((size_t)(rows - smem_lo));
    if (!v || rows + bytes > smem_lo + v->offset + v->size)
      fail("kind=wgmma;line=%d;detail=the B tile of wgmma_m64k8_tf32<%d>, %d rows of 128 bytes, does not lie inside "
           "one __shared__ array%s%s;fix=make the array hold all %d rows of the tile",
           line, n, n, v ? ": it runs past the end of " : "", v ? v->name : "", n);
  }
  k0 = (int)into_row / 4;
  return rows;
}

void keep_b(WgmmaOp& op) {
  for (int c = 0; c < op.n; ++c)
    for (int h = 0; h < 2; ++h) std::memcpy(op.b_seen + c * 32 + h * 16, chunk_at(op.rows, c, op.k0 / 4 + h), 16);
}

size_t window_word(uintptr_t a, bool& ok) {
  size_t off;
  ok = shared_window(a, off);
  if (!ok) return 0;
  const size_t w = off < kDynamicWindow ? off / 4 : kStaticSmemBytes / 4 + (off - kDynamicWindow) / 4;
  ok = w < generic_writes.size();
  return w;
}

// Untraced blocks: B's words that an asynchronous copy wrote and its thread has not fenced since they landed.
void check_fenced(const WgmmaOp& op) {
  for (int c = 0; c < op.n; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 4; ++w) {
        const char* p = chunk_at(op.rows, c, op.k0 / 4 + h) + 4 * w;
        bool ok;
        const size_t i = window_word((uintptr_t)p, ok);
        if (!ok) continue;
        const GenericWrite& g = generic_writes[i];
        uint32_t now;
        std::memcpy(&now, p, 4);
        if (g.block != block_serial || fibers[g.writer].proxy_fences != g.fences || now != g.value) continue;
        char who[48];
        label(g.writer, who, sizeof who);
        fail("kind=wgmma;pc=%p;detail=the tensor cores read, for the wgmma_m64k8_tf32 at line %d, bytes that this "
             "asynchronous copy of thread %s wrote, and thread %s has called no fence_proxy_async_shared() since they "
             "landed: the tensor cores read shared memory through the async proxy, and a generic-proxy write (a "
             "store, a cp.async) is visible to it only after its writer's fence.proxy.async;fix=after waiting for "
             "its copies (__pipeline_wait_prior) and writing what the tensor cores will read, each thread calls "
             "fence_proxy_async_shared(), before the barrier that publishes its writes",
             g.pc, op.line, who, who);
      }
}

// The registers of the operation being issued (all 128 threads have arrived): fenced, and not touched in flight.
void check_registers(Warpgroup& g, WgmmaOp& op, int first) {
  char who[48];
  for (int i = 0; i < kWarpgroup; ++i) {
    const Seen* s = find_seen(first + i, op.a_ptr[i], 4);
    if (s && changed(op.a_ptr[i], s->v.data(), 4)) {
      label(first + i, who, sizeof who);
      fail("kind=wgmma;line=%d;detail=thread %s's A fragment of this wgmma_m64k8_tf32 was written since the "
           "warpgroup's last wgmma_fence() (or since a wgmma read it): PTX requires wgmma.fence between ordinary "
           "code's writes of a wgmma's registers and the wgmma that reads them;fix=call wgmma_fence() after "
           "writing the fragments (and accumulators), right before the products",
           op.line, who);
    }
    remember(first + i, op.a_ptr[i], 4);
  }
  Chain* ch = nullptr;
  for (Chain& c : g.chains)
    if (c.n == op.n && std::memcmp(c.d, op.d, sizeof c.d) == 0) ch = &c;
  const int per = op.n / 2;
  if (!ch) {  // new accumulators: a chain none of whose products is in flight serves, else a new one
    for (Chain& c : g.chains)
      if (!c.pending) ch = &c;
    if (!ch) g.chains.emplace_back(), ch = &g.chains.back();
    std::memcpy(ch->d, op.d, sizeof ch->d);
    ch->n = op.n, ch->pending = 0;
    ch->value.assign((size_t)kWarpgroup * per, 0.0f);
  }
  op.chain = (int)(ch - g.chains.data());
  for (int i = 0; i < kWarpgroup; ++i) {
    float* d = op.d[i];
    if (ch->pending) {  // in flight: they must still hold what the emulator put there
      for (int e = 0; e < per; ++e) {
        uint32_t u;
        std::memcpy(&u, d + e, 4);
        if (u != kInFlight) {
          label(first + i, who, sizeof who);
          fail("kind=wgmma;line=%d;detail=thread %s wrote its accumulators while a wgmma adding into them was in "
               "flight (issued, its group not yet completed by a wgmma_wait_group): PTX leaves a wgmma's "
               "accumulator registers untouchable until a wait completes it;fix=call wgmma_wait_group<0>() (or "
               "the wait that completes those products) before reading or writing the accumulators",
               op.line, who);
        }
      }
      continue;
    }
    const Seen* s = find_seen(first + i, d, per);
    if (s && changed(d, s->v.data(), per)) {
      label(first + i, who, sizeof who);
      fail("kind=wgmma;line=%d;detail=thread %s's accumulators were written since the warpgroup's last "
           "wgmma_fence() (or since a wgmma last wrote them): PTX requires wgmma.fence between ordinary code's "
           "writes of a wgmma's registers and the wgmma;fix=call wgmma_fence() after setting the accumulators "
           "(zeroing them for a new tile, say) and before the first product that adds into them",
           op.line, who);
    }
    std::memcpy(&ch->value[(size_t)i * per], d, (size_t)per * 4);
    for (int e = 0; e < per; ++e) std::memcpy(d + e, &kInFlight, 4);
  }
  ++ch->pending;
}

// D += A B for one operation, every thread's elements (wgmma.cuh's layout), FP32 sums, k in order.
void run_wgmma(Warpgroup& g, const WgmmaOp& op, int first, int wait_line) {
  char who[48];
  Chain& ch = g.chains[(size_t)op.chain];
  const int per = op.n / 2;
  for (int i = 0; i < kWarpgroup; ++i) {
    if (changed(op.a_ptr[i], op.a_raw[i], 4)) {
      label(first + i, who, sizeof who);
      fail("kind=wgmma;line=%d;detail=thread %s wrote the A fragment of the wgmma_m64k8_tf32 at line %d while it was "
           "in flight, before the wgmma_wait_group at line %d completed it: the tensor cores read A's registers "
           "until then (PTX leaves them untouchable);fix=keep a fragment per wgmma group in flight (two sets, "
           "used by even and odd tiles), or wait for the products that read a fragment before writing it again",
           op.line, who, op.line, wait_line);
    }
    for (int e = 0; e < per; ++e) {
      uint32_t u;
      std::memcpy(&u, op.d[i] + e, 4);
      if (u != kInFlight) {
        label(first + i, who, sizeof who);
        fail("kind=wgmma;line=%d;detail=thread %s wrote the accumulators of the wgmma_m64k8_tf32 at line %d while it "
             "was in flight, before the wgmma_wait_group at line %d completed it;fix=read or write the accumulators "
             "only after the wait that completes every product adding into them (wgmma_wait_group<0>())",
             op.line, who, op.line, wait_line);
      }
    }
  }
  static float b[8][256];  // not on the fiber's stack: one process runs one block at a time
  static unsigned char now[256 * 32];
  for (int c = 0; c < op.n; ++c)
    for (int h = 0; h < 2; ++h) std::memcpy(now + c * 32 + h * 16, chunk_at(op.rows, c, op.k0 / 4 + h), 16);
  if (!hb_on && std::memcmp(now, op.b_seen, (size_t)op.n * 32) != 0)
    fail("kind=wgmma;line=%d;detail=the shared memory this wgmma_m64k8_tf32 reads (its B tile) changed between its "
         "issue and the wgmma_wait_group at line %d that completed it: something wrote a tile while the tensor cores "
         "were reading it (a race on a GPU: they read the old bytes, the new, or a mix);fix=write a stage again "
         "(stores, copies) only after every warpgroup's wait that completes the products reading it, ordered "
         "before the writes by a barrier; trace the kernel with the race check to see which line wrote it",
         op.line, wait_line);
  for (int c = 0; c < op.n; ++c)
    for (int k = 0; k < 8; ++k) {
      float v;
      std::memcpy(&v, now + c * 32 + k * 4, 4);  // the two chunks hold k = 0..3 and 4..7 of the step
      b[k][c] = tf32_bits(v);
    }
  for (int i = 0; i < kWarpgroup; ++i) {
    const int w = i / 32, gq = i % 32 / 4, t = i % 4;
    float* acc = &ch.value[(size_t)i * per];
    for (int j = 0; j < op.n / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        const int r = 16 * w + gq + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
        float sum = acc[4 * j + e];
        for (int k = 0; k < 8; ++k) sum += op.a[r][k] * b[k][c];
        acc[4 * j + e] = sum;
      }
  }
  if (--ch.pending == 0)
    for (int i = 0; i < kWarpgroup; ++i) {
      std::memcpy(op.d[i], &ch.value[(size_t)i * per], (size_t)per * 4);
      remember(first + i, op.d[i], per);
    }
}

// Completes, in issue order, the operations of every committed group but the newest `keep`.
void complete_wgmma(Warpgroup& g, unsigned keep, int first, int wait_line) {
  size_t n = 0;
  for (; n < g.ops.size() && g.ops[n].group + keep < g.commits; ++n) run_wgmma(g, g.ops[n], first, wait_line);
  g.ops.erase(g.ops.begin(), g.ops.begin() + (long)n);
  if (g.commits > keep) hb_tensor_complete(warpgroup_of(first), g.commits - keep);
}

// ---- setmaxnreg: the block's registers at launch, shared by its warpgroups ----------------------------------------
int launch_regs() {  // the most a thread may have at launch with one block per SM (__launch_bounds__(threads, 1))
  int r = kRegisterFile / nthreads;
  r = r > 255 ? 255 : r;
  return r / 8 * 8;
}
int regs_of(const Warpgroup& g) { return g.done == kWarpgroup ? 0 : g.regs ? g.regs : launch_regs(); }

int registers_held(int except, int instead) {
  int total = 0;
  for (int w = 0; w < nthreads / kWarpgroup; ++w) total += w == except ? instead : regs_of(warpgroups[w]);
  return total * kWarpgroup;
}

// Grants, warpgroup by warpgroup, every waiting setmaxnreg whose registers the pool now holds.
void grant_registers() {
  for (int w = 0; w < nthreads / kWarpgroup; ++w) {
    Warpgroup& g = warpgroups[w];
    if (!g.want || (g.want_inc && registers_held(w, g.want) > launch_regs() * nthreads)) continue;
    g.regs = g.want, g.want = 0, ++g.grants;
    for (int i = w * kWarpgroup; i < (w + 1) * kWarpgroup; ++i)
      if (fibers[i].state == kWaitWarpgroup) fibers[i].state = kRunnable;
  }
}
}  // namespace

namespace {
// The other blocks of a cluster keep theirs here while one runs (enter_block).
struct SavedWarpgroups {
  Warpgroup warpgroups[kMaxWarpgroups];
  std::vector<Seen> seen[kMaxThreads];
  std::vector<GenericWrite> generic_writes;
  uint32_t block_serial = 0;
};
SavedWarpgroups* saved_warpgroups = nullptr;  // [kMaxCluster], made at the first swap
}  // namespace

void warpgroups_swap_block(int from, int to) {
  if (!saved_warpgroups) saved_warpgroups = new SavedWarpgroups[kMaxCluster];
  for (int k = 0; k < 2; ++k) {  // swap out into `from`'s place, then in from `to`'s
    SavedWarpgroups& a = saved_warpgroups[k ? to : from];
    for (int w = 0; w < kMaxWarpgroups; ++w) std::swap(a.warpgroups[w], warpgroups[w]);
    for (int i = 0; i < nthreads; ++i) std::swap(a.seen[i], seen[i]);
    std::swap(a.generic_writes, generic_writes);
    std::swap(a.block_serial, block_serial);
  }
}

void wgmma_check_overwrite_in(int r, uintptr_t lo, size_t n, void* pc, int line, const char* what) {
  if (r == rank) return wgmma_check_overwrite(lo, n, pc, line, what);
  const int was = rank;
  warpgroups_swap_block(was, r);  // block r's warpgroups in place for the check, then back
  struct Back {
    int was, r;
    ~Back() { warpgroups_swap_block(r, was); }
  } back{was, r};
  wgmma_check_overwrite(lo, n, pc, line, what);
}

void reset_warpgroups() {
  for (Warpgroup& g : warpgroups) {
    g.arrived = g.done = 0, g.commits = 0, g.fenced = false, g.ops.clear(), g.chains.clear();
    g.regs = g.want = 0, g.grants = 0;
  }
  for (int i = 0; i < nthreads; ++i) seen[i].clear();
  ++block_serial;
  const size_t words = kStaticSmemBytes / 4 + (req.dyn_smem + 3) / 4;
  if (generic_writes.size() != words) generic_writes.assign(words, GenericWrite{0, 0, 0, 0, nullptr});
}

void wgmma_thread_exit() {
  if (nthreads % kWarpgroup) return;  // no wgmma call could run
  Warpgroup& g = warpgroups[warpgroup_of((int)fibers[cur].t.linear)];
  ++g.done;
  if (g.arrived) {
    char who[48];
    thread_label(g.first, who, sizeof who);
    fail("kind=divergence;line=%d;detail=thread %s waits at %s (line %d), which this thread of its warpgroup never "
         "reached before it finished (the 128 threads of a warpgroup make every wgmma call together)",
         g.line, who, g.what, g.line);
  }
  if (g.done == kWarpgroup) grant_registers();  // a finished warpgroup's registers go back to the block
  if (g.ops.empty()) return;
  const WgmmaOp& op = g.ops.front();
  if (op.group == g.commits)
    fail("kind=wgmma;line=%d;detail=this thread finished with the wgmma_m64k8_tf32 of line %d issued but never "
         "committed nor waited for: its product never reached the accumulators;fix=close the products of each "
         "tile with wgmma_commit_group(), and call wgmma_wait_group<0>() before reading the accumulators",
         op.line, op.line);
  fail("kind=wgmma;line=%d;detail=this thread finished with wgmma products still running: a group of the "
       "wgmma_m64k8_tf32 at line %d was committed but never waited for, so the accumulators were read before it "
       "completed;fix=call wgmma_wait_group<0>() after the last wgmma_commit_group(), before reading the "
       "accumulators (on a GPU they hold unfinished sums)",
       op.line, op.line);
}

void wgmma_check_overwrite(uintptr_t lo, size_t n, void* pc, int line, const char* what) {
  if (hb_on || nthreads % kWarpgroup) return;  // traced blocks: the race check names it
  for (int w = 0; w < nthreads / kWarpgroup; ++w)
    for (const WgmmaOp& op : warpgroups[w].ops) {
      const uintptr_t rows = (uintptr_t)op.rows;
      if (lo >= rows + (size_t)op.n * 128 || lo + n <= rows) continue;
      for (int c = 0; c < op.n; ++c)
        for (int h = 0; h < 2; ++h) {
          const uintptr_t chunk = (uintptr_t)chunk_at(op.rows, c, op.k0 / 4 + h);
          if (lo >= chunk + 16 || lo + n <= chunk) continue;
          if (line)
            fail("kind=tma;line=%d;detail=this %s writes shared memory that the tensor cores are still reading: "
                 "the B tile of the wgmma_m64k8_tf32 at line %d, issued by warpgroup %d and not yet completed by a "
                 "wgmma_wait_group (PTX: a wgmma's shared-memory operand is not written until a wait completes "
                 "it);fix=give a stage back to the producer (an arrival on its empty barrier) only after the wait "
                 "that completes the products reading it, and have the producer wait for that before copying",
                 line, what, op.line, w);
          fail("kind=wgmma;pc=%p;detail=this %s writes shared memory that the tensor cores are still reading: the B "
               "tile of the wgmma_m64k8_tf32 at line %d, issued by warpgroup %d and not yet completed by a "
               "wgmma_wait_group (PTX: a wgmma's shared-memory operand is not written until a wait completes "
               "it);fix=refill a stage only after every warpgroup's wgmma_wait_group that completes the products "
               "reading it (wait_group<N> with N small enough), ordered before the copies by a barrier",
               pc, what, op.line, w);
        }
    }
}

void wgmma_generic_write(const char* dst, unsigned size, void* pc) {
  for (unsigned b = 0; b < size; b += 4) {
    bool ok;
    const size_t i = window_word((uintptr_t)(dst + b), ok);
    if (!ok) continue;
    uint32_t v;
    std::memcpy(&v, dst + b, 4);
    generic_writes[i] = {block_serial, fibers[cur].proxy_fences, v, cur, pc};
  }
}

const char* wgmma_deadlock_hint(char* out, size_t n) {
  const char* fix = nullptr;
  size_t used = std::strlen(out);
  for (int w = 0; w < nthreads / kWarpgroup && used + 160 < n; ++w) {
    const Warpgroup& g = warpgroups[w];
    if (!g.want) continue;
    used += (size_t)snprintf(out + used, n - used,
                             ". Warpgroup %d waits at setmaxnreg_inc<%d> (line %d) for registers that no warpgroup "
                             "gives back: with it the warpgroups would hold %d, more than the %d of the block at "
                             "launch (%d threads x %d registers, the most one block per SM allows), out of the SM's "
                             "%d",
                             w, g.want, g.want_line, registers_held(w, g.want), launch_regs() * nthreads, nthreads,
                             launch_regs(), kRegisterFile);
    fix = "choose setmaxnreg counts whose sum over the warpgroups, times 128, fits the block's registers at launch "
          "(with 384 threads: 40 + 232 + 232 = 504 = 3 x 168)";
  }
  return fix;
}
}  // namespace emu

using namespace emu;

extern "C" size_t __emu_cvta_generic_to_shared(const void* p, int line) {
  size_t off;
  if (!shared_window((uintptr_t)p, off))
    fail("kind=cvta;line=%d;detail=__cvta_generic_to_shared is given a pointer that is not in shared memory "
         "(undefined on a GPU);fix=pass it a pointer into a __shared__ or extern __shared__ array",
         line);
  return off;
}

extern "C" unsigned long long __emu_wgmma_desc_sw128(const float* tile) {
  const uintptr_t p = (uintptr_t)tile;
  return (p >> 4 & kDescAddress) | (unsigned long long)(p & 15) << 44 | kSwizzle128;
}

extern "C" void __emu_wgmma_fence(int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_fence");
  if (g.arrived == kWarpgroup) {
    g.fenced = true;
    const int first = warpgroup_of(cur) * kWarpgroup;
    for (int i = first; i < first + kWarpgroup; ++i)
      for (Seen& s : seen[i]) s.v.assign(s.p, s.p + s.n);  // what ordinary code wrote so far is fenced
  }
  warpgroup_wait(g);
}

extern "C" void __emu_fence_proxy_async(int line) {
  (void)line;
  ++fibers[cur].proxy_fences;
  hb_proxy_fence();
  mbarrier_proxy_fence();
}

extern "C" void __emu_wgmma_commit_group(int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_commit_group");
  if (g.arrived == kWarpgroup) ++g.commits;
  warpgroup_wait(g);
}

extern "C" void __emu_wgmma_wait_group(int pending, int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_wait_group");
  if (g.arrived == kWarpgroup) complete_wgmma(g, (unsigned)pending, warpgroup_of(cur) * kWarpgroup, line);
  warpgroup_wait(g);
}

extern "C" void __emu_wgmma_m64k8_tf32(float* d, const float* a, int n, unsigned long long desc, int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_m64k8_tf32");
  if (g.arrived == 1) {
    if (!g.fenced)
      fail("kind=wgmma;line=%d;detail=wgmma_m64k8_tf32 is issued with no wgmma_fence() before it in this warpgroup: "
           "PTX requires wgmma.fence before a warpgroup's first wgmma.mma_async (and between ordinary code's writes "
           "of a wgmma's registers and the wgmma);fix=call wgmma_fence() after writing the fragments and "
           "accumulators, right before the products",
           line);
    int k0;
    const char* rows = wgmma_rows(desc, n, line, k0);
    g.ops.emplace_back();  // 14 KiB: built in place, not on the fiber's stack
    WgmmaOp& op = g.ops.back();
    op.rows = rows, op.k0 = k0;
    op.desc = desc, op.n = n, op.line = line, op.group = g.commits, op.chain = -1;
    op.pc = __builtin_return_address(0);
  }
  WgmmaOp& op = g.ops.back();
  if (op.desc != desc)
    fail("kind=divergence;line=%d;detail=threads of one warpgroup give wgmma_m64k8_tf32 different descriptors (B "
         "tiles). The 128 threads of a warpgroup issue one product together, with the same B",
         line);
  const unsigned i = fibers[cur].t.linear % kWarpgroup, row = i / 32 * 16 + i % 32 / 4, t = i % 4;
  op.a[row][t] = tf32_bits(a[0]), op.a[row + 8][t] = tf32_bits(a[1]);
  op.a[row][t + 4] = tf32_bits(a[2]), op.a[row + 8][t + 4] = tf32_bits(a[3]);
  std::memcpy(op.a_raw[i], a, 16);
  op.a_ptr[i] = a;
  op.d[i] = d;
  if (g.arrived == kWarpgroup) {  // the warpgroup has issued it
    const int first = warpgroup_of(cur) * kWarpgroup;
    check_registers(g, op, first);
    if (!hb_on) check_fenced(op);
    keep_b(op);
    hb_tensor_issue(warpgroup_of(cur), op.rows, op.n, op.k0, op.group, op.pc, line);
  }
  warpgroup_wait(g);
}

// setmaxnreg_inc/dec (tma.cuh): as on a GPU, the count is valid, moves the way the call says, and the 128 threads of
// a warpgroup make the call together; an increase waits until the block's registers at launch can hold it.
extern "C" void __emu_setmaxnreg(int regs, int inc, int line) {
  const char* what = inc ? "setmaxnreg_inc" : "setmaxnreg_dec";
  if (regs < 24 || regs > 256 || regs % 8)
    fail("kind=wgmma;line=%d;detail=%s<%d>: the count is a multiple of 8 from 24 to 256;fix=pass a multiple of 8 from "
         "24 to 256",
         line, what, regs);
  Warpgroup& g = warpgroup_arrive(line, what);
  const unsigned before = g.grants;
  if (g.arrived == kWarpgroup) {
    g.arrived = 0;
    const int held = regs_of(g);
    if (inc ? regs < held : regs > held)
      fail("kind=wgmma;line=%d;detail=%s<%d> %s the warpgroup's %d registers a thread (PTX: .inc only raises the "
           "count and .dec only lowers it, and the launch gives a thread at most %d here);fix=use setmaxnreg_%s, or "
           "another count",
           line, what, regs, inc ? "would lower" : "would raise", held, launch_regs(), inc ? "dec" : "inc");
    g.want = regs, g.want_line = line, g.want_inc = inc;
    grant_registers();
  }
  Fiber& f = fibers[cur];
  while (g.grants == before) {
    f.state = kWaitWarpgroup;
    f.line = line;
    block_current();
  }
  ++f.warp_epoch;
}

// Tile by Tile CPU emulator runtime: Hopper's warpgroup MMA (runtime/include/wgmma.cuh) and the
// other warpgroup collectives (setmaxnreg). The 128 threads of a warpgroup make each call
// together; a product is issued with A and the accumulators' addresses, joins the open group,
// and is computed, reading B from shared memory through its descriptor, when a wait completes
// its group. Also __cvta_generic_to_shared, the shared window's offsets the descriptors name.
// runtime_internal.h describes the runtime's files.
#include "runtime_internal.h"

namespace emu {
namespace {
// The emulator's matrix descriptor: the tile's address / 16 in bits 0-43, as the GPU's address
// field (adding 2 to a descriptor moves it 32 bytes along K there and here), the address's low 4
// bits in 44-47 (the GPU drops them; here they are checked), the swizzle mode in 62-63.
constexpr unsigned long long kDescAddress = (1ull << 44) - 1, kSwizzle128 = 1ull << 62;

constexpr int kWarpgroup = 128;

// One wgmma_m64k8_tf32, issued and not yet completed. A and the accumulators' addresses are
// taken when it is issued; B is read from shared memory when its group completes.
struct WgmmaOp {
  float a[64][8];                // A, TF32 bits
  float* d[kWarpgroup];          // each thread's accumulators
  const char* rows;              // B's tile: its first row, 1024-byte aligned
  unsigned long long desc;
  int n, k0, line;               // k0: the first float of each row it reads (0, 8, 16, 24)
  void* pc;                      // its call, for the race check's reports
  unsigned group;                // wgmma_commit_group calls before it: its group once committed
};

struct Warpgroup {
  int arrived, line, first;      // the collective call being gathered: threads there, its line, the first
  const char* what;              // and its name
  int done;                      // threads finished
  unsigned commits;              // wgmma_commit_group calls
  std::vector<WgmmaOp> ops;      // in issue order
};
Warpgroup warpgroups[kMaxThreads / kWarpgroup];

// The running thread arrives at a warpgroup-collective call ("sync.aligned" in PTX): the 128
// threads of its warpgroup must all make the same call. The caller adds its share of the
// call's work, then waits in warpgroup_wait; the last to arrive acts for the warpgroup.
Warpgroup& warpgroup_arrive(int line, const char* what) {
  if (nthreads % kWarpgroup)
    fail("kind=wgmma;line=%d;detail=%s is made by a warpgroup, 128 consecutive threads, but the block has %d "
         "threads;fix=launch blocks of a multiple of 128 threads, one warpgroup per 128",
         line, what, nthreads);
  Warpgroup& g = warpgroups[fibers[cur].t.linear / kWarpgroup];
  char me[48], other[48];
  if (g.done) {
    int i = (int)fibers[cur].t.linear / kWarpgroup * kWarpgroup;
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

void warpgroup_wait(Warpgroup& g) {
  Fiber& f = fibers[cur];
  if (g.arrived == kWarpgroup) {
    g.arrived = 0;
    int first = (int)f.t.linear / kWarpgroup * kWarpgroup;
    hb_meet(first, kWarpgroup);
    for (int i = first; i < first + kWarpgroup; ++i)
      if (fibers[i].state == kWaitWarpgroup) fibers[i].state = kRunnable;
  } else {
    f.state = kWaitWarpgroup;
    f.line = g.line;
    block_current();
  }
  ++f.warp_epoch;  // its warp's lanes have met: the tracer orders them by it
}

void warpgroup_sync(int line, const char* what) { warpgroup_wait(warpgroup_arrive(line, what)); }

float tf32_bits(float v) {  // what the tensor cores read of an input: the low 13 mantissa bits dropped
  unsigned u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) <= 0x7f800000u) u &= 0xffffe000u;  // a NaN stays a NaN
  std::memcpy(&v, &u, 4);
  return v;
}

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

// D += A B for one operation, every thread's elements (wgmma.cuh's layout), FP32 sums, k in order.
void run_wgmma(const WgmmaOp& op) {
  hb_tensor_read(op.rows, op.n, op.k0, op.pc, op.line);
  float b[8][256];
  for (int c = 0; c < op.n; ++c)
    for (int k = 0; k < 8; ++k) {
      const size_t logical = (size_t)c * 128 + (size_t)(op.k0 + k) * 4;
      float v;
      std::memcpy(&v, op.rows + (logical ^ (logical >> 7 & 7) << 4), 4);  // 16-byte chunk j of row c at j ^ (c % 8)
      b[k][c] = tf32_bits(v);
    }
  for (int i = 0; i < kWarpgroup; ++i) {
    const int w = i / 32, g = i % 32 / 4, t = i % 4;
    for (int j = 0; j < op.n / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        const int r = 16 * w + g + 8 * (e >> 1), c = 8 * j + 2 * t + (e & 1);
        float acc = op.d[i][4 * j + e];
        for (int k = 0; k < 8; ++k) acc += op.a[r][k] * b[k][c];
        op.d[i][4 * j + e] = acc;
      }
  }
}

// Completes, in issue order, the operations of every committed group but the newest `keep`.
void complete_wgmma(Warpgroup& g, unsigned keep) {
  size_t n = 0;
  for (; n < g.ops.size() && g.ops[n].group + keep < g.commits; ++n) run_wgmma(g.ops[n]);
  g.ops.erase(g.ops.begin(), g.ops.begin() + (long)n);
}
}  // namespace

void reset_warpgroups() {
  for (Warpgroup& g : warpgroups) g.arrived = g.done = 0, g.commits = 0, g.ops.clear();
}

void wgmma_thread_exit() {
  if (nthreads % kWarpgroup) return;  // no wgmma call could run
  Warpgroup& g = warpgroups[fibers[cur].t.linear / kWarpgroup];
  ++g.done;
  if (g.arrived) {
    char label[48];
    thread_label(g.first, label, sizeof label);
    fail("kind=divergence;line=%d;detail=thread %s waits at %s (line %d), which this thread of its warpgroup never "
         "reached before it finished (the 128 threads of a warpgroup make every wgmma call together)",
         g.line, label, g.what, g.line);
  }
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

extern "C" void __emu_wgmma_fence(int line) { warpgroup_sync(line, "wgmma_fence"); }

extern "C" void __emu_wgmma_commit_group(int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_commit_group");
  if (g.arrived == kWarpgroup) ++g.commits;
  warpgroup_wait(g);
}

extern "C" void __emu_wgmma_wait_group(int pending, int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_wait_group");
  if (g.arrived == kWarpgroup) complete_wgmma(g, (unsigned)pending);
  warpgroup_wait(g);
}

extern "C" void __emu_wgmma_m64k8_tf32(float* d, const float* a, int n, unsigned long long desc, int line) {
  Warpgroup& g = warpgroup_arrive(line, "wgmma_m64k8_tf32");
  if (g.arrived == 1) {
    WgmmaOp op;
    op.rows = wgmma_rows(desc, n, line, op.k0);
    op.desc = desc, op.n = n, op.line = line, op.group = g.commits;
    op.pc = __builtin_return_address(0);
    g.ops.push_back(op);
  }
  WgmmaOp& op = g.ops.back();
  if (op.desc != desc)
    fail("kind=divergence;line=%d;detail=threads of one warpgroup give wgmma_m64k8_tf32 different descriptors (B "
         "tiles). The 128 threads of a warpgroup issue one product together, with the same B",
         line);
  const unsigned i = fibers[cur].t.linear % kWarpgroup, row = i / 32 * 16 + i % 32 / 4, t = i % 4;
  op.a[row][t] = tf32_bits(a[0]), op.a[row + 8][t] = tf32_bits(a[1]);
  op.a[row][t + 4] = tf32_bits(a[2]), op.a[row + 8][t + 4] = tf32_bits(a[3]);
  op.d[i] = d;
  warpgroup_wait(g);
}

// setmaxnreg_inc/dec (tma.cuh) move no registers here, but, as on a GPU, the count must be valid
// and the 128 threads of a warpgroup make the call together.
extern "C" void __emu_setmaxnreg(int regs, int line) {
  if (regs < 24 || regs > 256 || regs % 8)
    fail("kind=wgmma;line=%d;detail=setmaxnreg to %d registers: the count is a multiple of 8 from 24 to 256", line,
         regs);
  warpgroup_sync(line, "setmaxnreg");
}

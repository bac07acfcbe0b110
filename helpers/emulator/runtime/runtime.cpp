// Tile by Tile CPU emulator runtime: runs a CUDA grid on the CPU.
//
// One worker process per CPU core takes blocks from a shared counter. Inside a worker, every
// CUDA thread of the block is a fiber with its own stack; fibers switch only at barriers and
// warp collectives, so a block runs with no locks. Device buffers are shared memory-mapped
// files placed in a reserved arena with inaccessible gaps around each, and the kernel's
// translation unit is compiled with the compiler's address-sanitizer *call* instrumentation,
// whose callbacks (__asan_load4_noabort, ...) are defined here: every load and store of the
// kernel is bounds-checked (and, later, traced) with its source location.
//
// Protocol: the Python loader writes a request to stdin (see read_request) and passes the
// buffer files and a result file as inherited descriptors. Errors are written as one line of
// key=value fields into the result file, then the process exits with status 3.
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_emu.h"
#include "emu_entries.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// ---- the kernel module's entry table, emitted by the loader next to the kernel ------------
extern "C" const __emu_entry __emu_entries[];
extern "C" const int __emu_num_entries;
extern "C" const int __emu_inline_checks;  // 1 when the kernel was built with inline shadow checks

// ---- state visible to kernels -----------------------------------------------------------
extern "C" {
__emu_thread* __emu_cur = nullptr;
uint3 __emu_block_idx;
dim3 __emu_block_dim, __emu_grid_dim;
// Dynamic shared memory: the loader links every `extern __shared__ T name[]`, and
// __emu_dynamic_shared, into this array, as aligned as the kernel declares (at least 16 bytes)
// and no more: a GPU starts it where the static arrays end, rounded up to that alignment (an
// H100 puts a kernel's first shared byte at 1024 of its window). The pages past the launch's
// size are made inaccessible.
alignas(4096) char __emu_dynamic_smem[256 * 1024 + 4096];
extern char __emu_dynamic_shared[];
// Static shared memory: every `__shared__` variable of the kernel is placed here when its
// declaration first runs (the loader rewrites the declaration into __emu_shared_var), with an
// unaddressable redzone after each, so that running off the end of one array is caught.
alignas(4096) char __emu_static_smem[64 * 1024];
int __emu_atomic_depth = 0;  // inside an atomic operation: its accesses are traced as atomic
}

namespace {

constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr size_t kStackBytes = 128 * 1024;
constexpr size_t kPage = 4096;
constexpr uintptr_t kGap = uintptr_t(1) << 30;  // inaccessible bytes around every buffer
constexpr uintptr_t kRedzone = 64 * 1024;       // of which the shadow marks this much
constexpr size_t kDynSmemReserve = 256 * 1024;  // more than any GPU's per-block limit
constexpr int kExitKernelError = 3;

// ---- request --------------------------------------------------------------------------
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
  std::vector<unsigned> trace_blocks;  // when tracing: run only these blocks, in this order
  std::vector<int> buffer_fds;
  std::vector<size_t> buffer_bytes;
  std::vector<std::vector<unsigned char>> params;  // bytes of each kernel argument
  std::vector<int> param_buffer;                   // buffer index for pointers, else -1
  std::vector<size_t> param_offset;
};
Request req;
std::vector<Buffer> buffers;
std::vector<void*> arg_ptrs;
std::vector<char*> pointer_storage;

// ---- error reporting ------------------------------------------------------------------
struct ResultArea {
  int claimed;
  char text[8188];
};
ResultArea* result = nullptr;
volatile sig_atomic_t in_kernel = 0;

struct Fiber;
Fiber* fibers = nullptr;
int nthreads = 0;
int cur = 0;

void where(char* out, size_t n);

[[noreturn]] void fail(const char* fmt, ...) {
  char head[512];
  where(head, sizeof head);
  in_kernel = 0;
  if (result && __sync_bool_compare_and_swap(&result->claimed, 0, 1)) {
    va_list ap;
    va_start(ap, fmt);
    size_t used = (size_t)snprintf(result->text, sizeof result->text, "%s", head);
    if (used < sizeof result->text) vsnprintf(result->text + used, sizeof result->text - used, fmt, ap);
    va_end(ap);
  }
  fflush(stdout);
  _exit(kExitKernelError);
}

// ---- fibers ---------------------------------------------------------------------------
enum State { kRunnable, kWaitBlock, kWaitWarp, kWaitActive, kWaitWarpgroup, kWaitMbarrier, kDone };

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
  std::vector<AsyncCopy> copies;    // in issue order
};
char* stacks = nullptr;  // one stack per thread of the block, each above an inaccessible guard page
size_t stacks_span = 0;
void* main_sp = nullptr;
const __emu_entry* entry = nullptr;

struct WarpState {
  unsigned arrived, mask;
  int line;
  unsigned long long slot[32];
};
WarpState warps[kMaxWarps];
int block_arrived = 0, block_line = 0, done_count = 0;
int reduce_acc[3], reduce_result = 0;

extern "C" void emu_switch(void** save_sp, void* new_sp);
extern "C" void emu_fiber_trampoline();
extern "C" void emu_fiber_main(Fiber* f);

#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores its pointer in *save_sp and
// resumes the stack new_sp. The x87/SSE control words are the same in every fiber.
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size emu_switch, .-emu_switch
.globl emu_fiber_trampoline
.type emu_fiber_trampoline,@function
emu_fiber_trampoline:
  movq %r12, %rdi
  call emu_fiber_main
  ud2
.size emu_fiber_trampoline, .-emu_fiber_trampoline
)");

void* fiber_initial_sp(Fiber* f, char* stack_top) {
  uintptr_t top = (uintptr_t)stack_top & ~uintptr_t(15);
  void** sp = (void**)(top - 56);
  for (int i = 0; i < 6; ++i) sp[i] = nullptr;  // r15 r14 r13 r12 rbx rbp
  sp[3] = f;                                     // r12: the fiber, for the trampoline
  sp[6] = (void*)&emu_fiber_trampoline;          // return address; rsp ends 16-aligned
  return sp;
}
void fiber_switch(void** save_sp, void* new_sp) { emu_switch(save_sp, new_sp); }
#else
// Portable fallback: ucontext (slower; the x86-64 path above is the tuned one).
ucontext_t* contexts = nullptr;
ucontext_t main_context;
void* fiber_initial_sp(Fiber* f, char* stack_top) {
  int i = (int)(f - fibers);
  ucontext_t* c = &contexts[i];
  getcontext(c);
  c->uc_stack.ss_sp = stack_top - kStackBytes;
  c->uc_stack.ss_size = kStackBytes;
  c->uc_link = nullptr;
  makecontext(c, (void (*)())emu_fiber_main, 1, f);
  return c;
}
void fiber_switch(void** save_sp, void* new_sp) {
  ucontext_t* from = (save_sp == &main_sp) ? &main_context : (ucontext_t*)*save_sp;
  if (save_sp == &main_sp) main_sp = &main_context;
  swapcontext(from, (ucontext_t*)new_sp);
}
#endif

inline void switch_to(int next) {
  Fiber* from = &fibers[cur];
  cur = next;
  __emu_cur = &fibers[next].t;
  // The fiber after this one usually runs next: start loading its saved registers and the
  // top of its frames now, so that the switch to it does not wait for memory.
  int after = next + 1 < nthreads ? next + 1 : 0;
  const char* top = (const char*)fibers[after].sp;
  for (int line = 0; line < 12; ++line) __builtin_prefetch(top + 64 * line);
  fiber_switch(&from->sp, fibers[next].sp);
}

void describe_waits(char* out, size_t n);
void land_async_copies(Fiber& f, unsigned keep_groups);
void trace_pending_async_copies();
void reset_warpgroups();
void wgmma_thread_exit();
void hb_meet(int first, int n);                                // runtime_tma.h: the race check's clocks
void hb_access(uintptr_t a, size_t n, int store, void* pc);
void hb_tensor_read(const char* rows, int n, int k0, void* pc, int line);
void hb_reset();

// __activemask(): lanes of a warp run one after another here, so a lane cannot know which of
// the others will reach the same point until each of them has either blocked somewhere or
// finished ("the warp has settled"). Then every group of lanes waiting at one __activemask
// line gets the mask of that group, as converged lanes do on a GPU.
int active_waiting[kMaxWarps];
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

// Blocks the running fiber and runs the next runnable one, in ring order.
void block_current() {
  settle_activemask(fibers[cur].t.warp);
  for (int k = 1; k < nthreads; ++k) {
    int i = cur + k;
    if (i >= nthreads) i -= nthreads;
    if (fibers[i].state == kRunnable) {
      switch_to(i);
      return;
    }
  }
  char waits[1024];
  describe_waits(waits, sizeof waits);
  fail("kind=deadlock;detail=no thread of the block can go on: %s", waits);
}

void check_no_exited_threads(const char* what, int line) {
  if (done_count == 0) return;
  int exited = -1;
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kDone) { exited = i; break; }
  fail("kind=divergence;line=%d;detail=%s at line %d is reached by thread %d but %d thread(s) of the "
       "block, thread %d first, have already finished without reaching it",
       line, what, line, cur, done_count, exited);
}

void thread_label(int i, char* out, size_t n) {
  const __emu_thread& t = fibers[i].t;
  snprintf(out, n, "(%u,%u,%u)", t.tid.x, t.tid.y, t.tid.z);
}

void describe_waits(char* out, size_t n) {
  size_t used = 0;
  int shown = 0;
  for (int i = 0; i < nthreads && used + 96 < n && shown < 6; ++i) {
    const Fiber& f = fibers[i];
    if (f.state == kRunnable) continue;
    if (i > 0 && fibers[i - 1].state == f.state && fibers[i - 1].line == f.line) continue;
    char label[48];
    thread_label(i, label, sizeof label);
    const char* what = f.state == kWaitBlock       ? "waits at __syncthreads"
                       : f.state == kWaitWarp      ? "waits at a warp collective"
                       : f.state == kWaitActive    ? "waits at __activemask"
                       : f.state == kWaitWarpgroup ? "waits at a wgmma call"
                       : f.state == kWaitMbarrier  ? "waits at mbarrier_wait"
                                                   : "has finished";
    used += (size_t)snprintf(out + used, n - used, "%sthread %s %s", shown ? ", " : "", label, what);  // ';' ends a field
    if (f.state != kDone) used += (size_t)snprintf(out + used, n - used, " (line %d)", f.line);
    ++shown;
  }
}

}  // namespace

extern "C" void emu_fiber_main(Fiber* f) {
  entry->invoke(arg_ptrs.data());
  wgmma_thread_exit();
  land_async_copies(*f, 0);  // copies complete even if the thread never waited for them
  f->state = kDone;
  ++done_count;
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
  WarpState& w = warps[f->t.warp];
  if (w.arrived && (w.mask >> f->t.lane & 1u))
    fail("kind=divergence;line=%d;detail=a warp collective at line %d names lane %u in its mask, but that "
         "lane finished without reaching it",
         w.line, w.line, f->t.lane);
  if (done_count == nthreads) {
    in_kernel = 0;
    fiber_switch(&f->sp, main_sp);
  }
  block_current();  // settles a pending __activemask of this warp too
  __builtin_unreachable();
}

// ---- barriers ---------------------------------------------------------------------------
static void release_block_barrier() {
  block_arrived = 0;
  hb_meet(0, nthreads);
  for (int i = 0; i < nthreads; ++i)
    if (fibers[i].state == kWaitBlock) fibers[i].state = kRunnable;
}

static void arrive_block_barrier(int line, const char* what) {
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

static unsigned warp_lanes(unsigned warp) {
  unsigned first = warp * 32u, n = (unsigned)nthreads - first;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

extern "C" unsigned __emu_activemask(int line) {
  Fiber& f = fibers[cur];
  f.state = kWaitActive;
  f.line = line;
  ++active_waiting[f.t.warp];
  settle_activemask(f.t.warp);
  if (f.state != kRunnable) block_current();
  return f.result;
}

static void warp_barrier(unsigned mask, int line) {
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
    for (unsigned l = 0; l < 32; ++l)
      if (mask >> l & 1u) fibers[f.t.warp * 32 + l].state = kRunnable;
    return;
  }
  f.state = kWaitWarp;
  f.line = line;
  block_current();
}

// Every lane that passes a warp collective counts it (the tracer orders lanes of one warp by it).
static void warp_sync_point(unsigned mask, int line) {
  warp_barrier(mask, line);
  ++fibers[cur].warp_epoch;
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

extern "C" void __emu_wmma_misuse(const char* what, int line) {
  fail("kind=wmma;line=%d;detail=%s", line, what);
}

extern "C" void __emu_unsupported(const char* what, int line) {
  fail("kind=unsupported;line=%d;detail=%s", line, what);
}

// ---- memory checks: the compiler calls these before every load and store of the kernel -----
namespace {
char* smem_lo = __emu_static_smem;
size_t smem_size = 0;  // bytes handed out to __shared__ variables, redzones included
constexpr size_t kStaticSmemLimit = 48 * 1024;  // as nvcc and NVRTC enforce
constexpr size_t kSmemRedzone = 32;  // at least this many unaddressable bytes between arrays
constexpr size_t kBlockSmemLimit = 227 * 1024;  // static + dynamic, per block on sm_90
struct SharedVar {
  size_t offset, size;
  const char* name;
  int line;
};
SharedVar shared_vars[256];
int n_shared_vars = 0;

const SharedVar* shared_var_at(size_t off) {
  for (int i = 0; i < n_shared_vars; ++i)
    if (off >= shared_vars[i].offset && off < shared_vars[i].offset + shared_vars[i].size) return &shared_vars[i];
  return nullptr;
}
const SharedVar* shared_var_before(size_t off) {
  const SharedVar* best = nullptr;
  for (int i = 0; i < n_shared_vars; ++i)
    if (shared_vars[i].offset <= off) best = &shared_vars[i];
  return best;
}
char* dyn_lo = nullptr;
char* arena = nullptr;
size_t arena_slot = 0, arena_span = 0;

// Bytes from the start of dynamic shared memory (negative before it, in the bytes skipped to
// align it); false outside the array that holds it.
bool in_dynamic(uintptr_t a, long long& off) {
  if (a - (uintptr_t)__emu_dynamic_smem >= sizeof __emu_dynamic_smem) return false;
  off = (long long)(a - (uintptr_t)dyn_lo);
  return true;
}

void where(char* out, size_t n) {
  if (!in_kernel || !fibers) {
    out[0] = 0;
    return;
  }
  const __emu_thread& t = fibers[cur].t;
  snprintf(out, n, "block=%u,%u,%u;thread=%u,%u,%u;", __emu_block_idx.x, __emu_block_idx.y, __emu_block_idx.z,
           t.tid.x, t.tid.y, t.tid.z);
}

[[noreturn]] void out_of_bounds(uintptr_t a, size_t n, int store, void* pc) {
  const char* op = store < 0 ? "access" : store ? "store" : "load";  // -1: a fault, kind unknown
  if (a - (uintptr_t)arena < arena_span) {
    size_t b = (a - (uintptr_t)arena) / arena_slot;
    fail("kind=oob;space=global;buffer=%zu;offset=%lld;size=%zu;op=%s;pc=%p", b,
         (long long)(a - (uintptr_t)buffers[b].base), n, op, pc);
  }
  long long dyn;
  if (in_dynamic(a, dyn))
    fail("kind=oob;space=dynamic_shared;offset=%lld;size=%zu;limit=%zu;op=%s;pc=%p", dyn, n, req.dyn_smem, op, pc);
  uintptr_t off = a - (uintptr_t)smem_lo;
  const SharedVar* v = shared_var_before(off);
  if (v)
    fail("kind=oob;space=shared;var=%s;var_offset=%lld;var_size=%zu;size=%zu;op=%s;pc=%p", v->name,
         (long long)(off - v->offset), v->size, n, op, pc);
  fail("kind=oob;space=shared;offset=%lld;size=%zu;limit=%zu;op=%s;pc=%p", (long long)off, n, smem_size, op, pc);
}

// ---- memory trace: every shared and global access of the traced blocks, in program order ------
struct TraceRecord {  // 40 bytes; helpers/trace.py reads the same layout
  uint64_t pc;
  int64_t offset;  // bytes from the buffer's start, or from the start of shared memory
  uint32_t block, epoch, warp_epoch, seq;
  uint16_t thread;
  int8_t buffer;  // which device buffer (global accesses), else -1
  uint8_t space;  // 0 global, 1 static shared, 2 dynamic shared
  uint8_t size, op;  // op: 0 load, 1 store, 2 atomic
  uint8_t repeat;    // 1: an in-flight asynchronous copy's store, recorded again (see below)
  uint8_t pad;
};
struct TraceHeader {
  uint64_t count, capacity;
};
TraceHeader* trace_header = nullptr;
TraceRecord* trace_records = nullptr;
bool tracing = false;  // the running block is one of the traced ones
bool tracing_repeat = false;  // the records being written repeat an earlier one (async copies)
unsigned trace_block = 0;

void trace(uintptr_t off, size_t n, int store, void* pc, int space, int buffer) {
  Fiber& f = fibers[cur];
  uint64_t i = trace_header->count++;
  if (i >= trace_header->capacity) return;  // counted, not kept: the reader reports the overflow
  TraceRecord& r = trace_records[i];
  r.pc = (uint64_t)pc;
  r.offset = (int64_t)off;
  r.block = trace_block;
  r.epoch = f.epoch;
  r.warp_epoch = f.warp_epoch;
  r.seq = f.seq++;
  r.thread = (uint16_t)f.t.linear;
  r.buffer = (int8_t)buffer;
  r.space = (uint8_t)space;
  r.size = (uint8_t)n;
  r.op = (uint8_t)(__emu_atomic_depth ? 2 : store);
  r.repeat = tracing_repeat;
}

inline void access(uintptr_t a, size_t n, int store, void* pc) {
  uintptr_t off = a - (uintptr_t)smem_lo;
  if (off < sizeof __emu_static_smem) {
    const SharedVar* v = shared_var_at(off);
    if (!v || off + n > v->offset + v->size) out_of_bounds(a, n, store, pc);
    if (tracing) trace(off, n, store, pc, 1, -1), hb_access(a, n, store || __emu_atomic_depth, pc);
    return;
  }
  long long dyn;
  if (in_dynamic(a, dyn)) {
    if (dyn < 0 || (size_t)dyn + n > req.dyn_smem) out_of_bounds(a, n, store, pc);
    if (tracing) trace((uintptr_t)dyn, n, store, pc, 2, -1), hb_access(a, n, store || __emu_atomic_depth, pc);
    return;
  }
  off = a - (uintptr_t)arena;
  if (off < arena_span) {
    size_t index = off / arena_slot;
    const Buffer& b = buffers[index];
    if (a < (uintptr_t)b.base || a + n > (uintptr_t)b.base + b.nbytes) out_of_bounds(a, n, store, pc);
    if (tracing) trace(a - (uintptr_t)b.base, n, store, pc, 0, (int)index);
  }
  // Anything else is the thread's own stack or the runtime's data.
}
}  // namespace

// ---- asynchronous copies (<cuda_pipeline.h>): global -> shared, landing when waited for --------
namespace {
void land_async_copies(Fiber& f, unsigned keep_groups) {
  size_t kept = 0;
  for (AsyncCopy& c : f.copies) {
    if (c.group + keep_groups < f.groups) std::memcpy(c.dst, c.bytes, c.size);
    else f.copies[kept++] = c;
  }
  f.copies.resize(kept);
}

// A copy in flight may write its shared bytes at any moment until it lands, so a trace records
// its store again in every barrier interval it spans: an access of another thread anywhere in
// that window is a race.
void trace_pending_async_copies() {
  if (!tracing) return;
  tracing_repeat = true;  // for the race check only: the instruction ran once
  for (const AsyncCopy& c : fibers[cur].copies) access((uintptr_t)c.dst, c.size, 1, c.pc);
  tracing_repeat = false;
}

bool in_shared(uintptr_t a) {
  long long dyn;
  return a - (uintptr_t)smem_lo < sizeof __emu_static_smem || in_dynamic(a, dyn);
}
}  // namespace

extern "C" void __emu_pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill) {
  void* pc = __builtin_return_address(0);
  uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  if (size != 4 && size != 8 && size != 16)
    fail("kind=async_copy;pc=%p;detail=__pipeline_memcpy_async copies 4, 8 or 16 bytes, not %zu", pc, size);
  if (zfill > size)
    fail("kind=async_copy;pc=%p;detail=__pipeline_memcpy_async zero-fills %zu of its %zu bytes: the zero fill "
         "is at most the copy's size", pc, zfill, size);
  if (!in_shared(d))
    fail("kind=async_copy;pc=%p;detail=the destination of __pipeline_memcpy_async is not shared memory (it "
         "copies global memory into a __shared__ array)", pc);
  if (zfill < size && s - (uintptr_t)arena >= arena_span)
    fail("kind=async_copy;pc=%p;detail=the source of __pipeline_memcpy_async is not one of the kernel's "
         "arrays in global memory", pc);
  if ((d | (zfill < size ? s : 0)) & (size - 1))
    fail("kind=async_copy;pc=%p;detail=a %zu-byte __pipeline_memcpy_async needs source and destination "
         "addresses that are multiples of %zu (misaligned address): the source is %zu bytes and the "
         "destination %zu bytes past one", pc, size, size, (size_t)(s % size), (size_t)(d % size));
  if (zfill < size) access(s, size - zfill, 0, pc);  // the GPU reads no source byte it zero-fills
  access(d, size, 1, pc);
  Fiber& f = fibers[cur];
  if (f.copies.size() >= 65536)
    fail("kind=async_copy;pc=%p;detail=this thread has 65536 asynchronous copies in flight: wait for them "
         "(__pipeline_commit, then __pipeline_wait_prior)", pc);
  AsyncCopy c = {(char*)dst, {}, (unsigned)size, f.groups, pc};
  std::memcpy(c.bytes, src, size - zfill);
  std::memset(c.bytes + (size - zfill), 0, zfill);
  f.copies.push_back(c);
}

extern "C" void __emu_pipeline_commit() { ++fibers[cur].groups; }

// All but the `prior` most recently committed groups have landed; copies issued since the last
// commit belong to no group yet and are not waited for (as cp.async.wait_group).
extern "C" void __emu_pipeline_wait_prior(size_t prior) {
  land_async_copies(fibers[cur], prior > 8 ? 8u : (unsigned)prior);  // <cuda_pipeline.h> caps it at 8
}

// ---- shared window and Hopper's warpgroup MMA (wgmma.cuh) ------------------------------------
namespace {
// A block's shared window, as __cvta_generic_to_shared numbers it: the static arena from 0, the
// dynamic one from kDynamicWindow. Both arenas are 4096-aligned, so an offset is aligned to 1024
// bytes exactly when its pointer is, as on a GPU.
constexpr size_t kDynamicWindow = sizeof __emu_static_smem;

bool shared_window(uintptr_t a, size_t& off) {
  long long dyn;
  if (a - (uintptr_t)smem_lo < sizeof __emu_static_smem) return off = a - (uintptr_t)smem_lo, true;
  if (in_dynamic(a, dyn)) return off = kDynamicWindow + (a - (uintptr_t)__emu_dynamic_smem), true;
  return false;
}

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

void reset_warpgroups() {
  for (Warpgroup& g : warpgroups) g.arrived = g.done = 0, g.commits = 0, g.ops.clear();
}

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
}  // namespace

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

#include "runtime_tma.h"  // TMA copies, mbarriers and the race check that knows them

// Two ways the compiler reaches these checks (compiler.py picks one per build):
//  - "inline": it tests a shadow byte per 8 bytes before each access and calls
//    __asan_report_* only when the shadow marks the bytes as outside every object (fast);
//  - "calls": it calls __asan_loadN/storeN before every access (slower; the tracer's hook).
#define EMU_CHECK(n)                                                                                  \
  extern "C" void __asan_load##n##_noabort(uintptr_t a) { access(a, n, 0, __builtin_return_address(0)); } \
  extern "C" void __asan_store##n##_noabort(uintptr_t a) { access(a, n, 1, __builtin_return_address(0)); } \
  extern "C" void __asan_report_load##n##_noabort(uintptr_t a) {                                     \
    out_of_bounds(a, n, 0, __builtin_return_address(0));                                             \
  }                                                                                                   \
  extern "C" void __asan_report_store##n##_noabort(uintptr_t a) {                                    \
    out_of_bounds(a, n, 1, __builtin_return_address(0));                                             \
  }
EMU_CHECK(1)
EMU_CHECK(2)
EMU_CHECK(4)
EMU_CHECK(8)
EMU_CHECK(16)
extern "C" void __asan_loadN_noabort(uintptr_t a, size_t n) { access(a, n, 0, __builtin_return_address(0)); }
extern "C" void __asan_storeN_noabort(uintptr_t a, size_t n) { access(a, n, 1, __builtin_return_address(0)); }
extern "C" void __asan_report_load_n_noabort(uintptr_t a, size_t n) {
  out_of_bounds(a, n, 0, __builtin_return_address(0));
}
extern "C" void __asan_report_store_n_noabort(uintptr_t a, size_t n) {
  out_of_bounds(a, n, 1, __builtin_return_address(0));
}

// ---- shadow memory for the inline checks: one byte per 8 bytes of address space -------------
// The layout of user-space AddressSanitizer on x86-64 Linux: shadow(a) = (a >> 3) + 0x7fff8000,
// reserved (not committed) for the whole 47-bit address space before any kernel code runs.
namespace {
constexpr uintptr_t kShadowOffset = 0x7fff8000;
constexpr uintptr_t kShadowEnd = (uintptr_t(1) << 44) + kShadowOffset;
bool shadow_ready = false;
inline signed char* shadow_of(uintptr_t a) { return (signed char*)((a >> 3) + kShadowOffset); }

__attribute__((constructor(101))) void map_shadow() {
  void* p = mmap((void*)kShadowOffset, kShadowEnd - kShadowOffset, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  shadow_ready = p == (void*)kShadowOffset;
}

// Marks [lo, hi) as outside every object (lo, hi multiples of 8).
void poison(uintptr_t lo, uintptr_t hi) {
  if (shadow_ready && hi > lo) std::memset(shadow_of(lo), (signed char)0xF9, (hi - lo) >> 3);
}
// Marks [lo, lo + n) as addressable, with the partial last granule the hardware-free way ASan does.
void unpoison(uintptr_t lo, size_t n) {
  if (!shadow_ready) return;
  std::memset(shadow_of(lo), 0, n >> 3);
  if (n & 7) *shadow_of(lo + (n & ~size_t(7))) = (signed char)(n & 7);
}
}  // namespace

extern "C" void __asan_handle_no_return(void) {}
extern "C" void __asan_before_dynamic_init(const char*) {}
extern "C" void __asan_after_dynamic_init(void) {}

// The storage of one `__shared__` variable, the first time its declaration runs in this process.
extern "C" void* __emu_shared_alloc(size_t size, size_t align, const char* name, int line) {
  // 128-byte starts: the shadow's 8-byte granules need aligned starts, and every array then
  // begins at bank 0, so the banks of its words read the same as on a GPU with the array alone.
  if (align < 128) align = 128;
  size_t off = smem_size ? (smem_size + kSmemRedzone + align - 1) / align * align : 0;
  if (off + size > kStaticSmemLimit || n_shared_vars == (int)(sizeof shared_vars / sizeof shared_vars[0]))
    fail("kind=too_much_shared;line=%d;detail=the __shared__ variable %s (%zu bytes) takes the block's static "
         "shared memory past %zu bytes, the limit nvcc and NVRTC enforce",
         line, name, size, kStaticSmemLimit);
  if (off + size + req.dyn_smem > kBlockSmemLimit)
    fail("kind=too_much_shared;line=%d;detail=the __shared__ variable %s (%zu bytes) and the launch's %zu bytes "
         "of dynamic shared memory exceed the %zu bytes a block may have",
         line, name, size, req.dyn_smem, kBlockSmemLimit);
  shared_vars[n_shared_vars++] = {off, size, name, line};
  smem_size = off + size;
  std::memset(smem_lo + off, 0xFF, size);  // never zero, as on a GPU
  unpoison((uintptr_t)smem_lo + off, size);
  return smem_lo + off;
}

// ---- signals: crashes and time limits become reports -------------------------------------
namespace {
void on_signal(int sig, siginfo_t* info, void* ctx) {
  void* pc = nullptr;
  uintptr_t sp = 0;
#if defined(__x86_64__)
  pc = (void*)((ucontext_t*)ctx)->uc_mcontext.gregs[REG_RIP];
  sp = (uintptr_t)((ucontext_t*)ctx)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  pc = (void*)((ucontext_t*)ctx)->uc_mcontext.pc;
  sp = (uintptr_t)((ucontext_t*)ctx)->uc_mcontext.sp;
#endif
  if (sig == SIGALRM)
    fail("kind=timeout;limit_ms=%ld;pc=%p", req.timeout_ms, pc);
  if (!in_kernel) fail("kind=internal;signal=%d;pc=%p", sig, pc);
  uintptr_t a = (uintptr_t)info->si_addr;
  if (sig == SIGSEGV || sig == SIGBUS) {
    // A fault in the stacks' region, or with the stack pointer already below the running
    // thread's own stack (a frame larger than the guard page jumps over it), is an overflow.
    uintptr_t own_lo = (uintptr_t)stacks + (size_t)cur * (kStackBytes + kPage) + kPage;
    if (stacks && (a - (uintptr_t)stacks < stacks_span || (sp && sp < own_lo && own_lo - sp < (uintptr_t(1) << 32))))
      fail("kind=stack_overflow;pc=%p;limit=%zu", pc, kStackBytes);
    long long dyn;
    if ((arena && a - (uintptr_t)arena < arena_span) || (dyn_lo && in_dynamic(a, dyn)))
      out_of_bounds(a, 1, -1, pc);
    fail("kind=crash;signal=%d;addr=%p;pc=%p", sig, info->si_addr, pc);
  }
  fail("kind=crash;signal=%d;pc=%p", sig, pc);
}

void install_signal_handlers() {
  static char altstack[64 * 1024];
  stack_t ss = {};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa = {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGALRM}) sigaction(sig, &sa, nullptr);
}

// ---- setup --------------------------------------------------------------------------------
[[noreturn]] void bad_request(const char* what) {
  fail("kind=internal;detail=bad launch request: %s", what);
}

void read_request() {
  char key[64];
  while (scanf("%63s", key) == 1) {
    std::string k = key;
    if (k == "entry") {
      if (scanf("%d", &req.entry) != 1) bad_request("entry");
    } else if (k == "grid" || k == "block") {
      unsigned* d = k == "grid" ? req.grid : req.block;
      if (scanf("%u %u %u", &d[0], &d[1], &d[2]) != 3) bad_request(key);
    } else if (k == "dynamic_smem") {
      if (scanf("%zu", &req.dyn_smem) != 1) bad_request(key);
    } else if (k == "workers") {
      if (scanf("%d", &req.workers) != 1) bad_request(key);
    } else if (k == "timeout_ms") {
      if (scanf("%ld", &req.timeout_ms) != 1) bad_request(key);
    } else if (k == "result_fd") {
      if (scanf("%d", &req.result_fd) != 1) bad_request(key);
    } else if (k == "trace") {
      if (scanf("%d %zu", &req.trace_fd, &req.trace_capacity) != 2) bad_request(key);
    } else if (k == "trace_block") {
      unsigned b;
      if (scanf("%u", &b) != 1) bad_request(key);
      req.trace_blocks.push_back(b);
    } else if (k == "buffer") {
      int fd;
      size_t n;
      if (scanf("%d %zu", &fd, &n) != 2) bad_request(key);
      req.buffer_fds.push_back(fd);
      req.buffer_bytes.push_back(n);
    } else if (k == "pointer") {
      int b;
      size_t off;
      if (scanf("%d %zu", &b, &off) != 2) bad_request(key);
      req.params.emplace_back(sizeof(void*));
      req.param_buffer.push_back(b);
      req.param_offset.push_back(off);
    } else if (k == "value") {
      static char hex[8200];  // up to 4 KiB of argument (a CUDA kernel's parameter limit), in hex
      if (scanf("%8199s", hex) != 1) bad_request(key);
      std::vector<unsigned char> bytes;
      for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
        unsigned v;
        sscanf(hex + i, "%2x", &v);
        bytes.push_back((unsigned char)v);
      }
      req.params.push_back(bytes);
      req.param_buffer.push_back(-1);
      req.param_offset.push_back(0);
    } else if (k == "run") {
      return;
    } else {
      bad_request(key);
    }
  }
  bad_request("missing 'run'");
}

void map_result() {
  void* p = mmap(nullptr, sizeof(ResultArea), PROT_READ | PROT_WRITE, MAP_SHARED, req.result_fd, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "emulator: cannot map the result file (%s)\n", strerror(errno));
    _exit(2);
  }
  result = (ResultArea*)p;
}

// Buffers sit in equal slots of one reserved arena, each between two inaccessible gaps, so that
// an access just outside a buffer is both attributable to it and unable to corrupt another.
void map_buffers() {
  size_t largest = kPage;
  for (size_t n : req.buffer_bytes) largest = n > largest ? n : largest;
  arena_slot = kGap + ((largest + kPage - 1) / kPage) * kPage + kGap;
  arena_span = arena_slot * (req.buffer_fds.empty() ? 1 : req.buffer_fds.size());
  void* a = mmap(nullptr, arena_span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (a == MAP_FAILED) fail("kind=internal;detail=cannot reserve %zu bytes of address space", arena_span);
  arena = (char*)a;
  for (size_t i = 0; i < req.buffer_fds.size(); ++i) {
    char* base = arena + i * arena_slot + kGap;
    size_t n = req.buffer_bytes[i];
    if (n && mmap(base, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, req.buffer_fds[i], 0) == MAP_FAILED)
      fail("kind=internal;detail=cannot map buffer %zu (%s)", i, strerror(errno));
    buffers.push_back({base, n});
    // Precise reports for accesses up to kRedzone outside; farther ones fault in the gap.
    uintptr_t lo = (uintptr_t)base, hi = (lo + n + 7) & ~uintptr_t(7);
    poison(lo - kRedzone, lo);
    poison(hi, hi + kRedzone);
    unpoison(lo, n);
  }
}

void map_shared_memory() {
  dyn_lo = __emu_dynamic_shared;
  if (req.dyn_smem > kDynSmemReserve) bad_request("dynamic shared memory larger than 256 KiB");
  char* end = __emu_dynamic_smem + sizeof __emu_dynamic_smem;
  char* used = (char*)(((uintptr_t)dyn_lo + req.dyn_smem + kPage - 1) / kPage * kPage);
  if (mprotect(used, (size_t)(end - used), PROT_NONE) != 0)
    fail("kind=internal;detail=cannot protect dynamic shared memory");
  poison((uintptr_t)__emu_dynamic_smem, (uintptr_t)end);
  unpoison((uintptr_t)dyn_lo, req.dyn_smem);
  poison((uintptr_t)__emu_static_smem, (uintptr_t)__emu_static_smem + sizeof __emu_static_smem);
  for (int i = 0; i < n_shared_vars; ++i)  // file-scope __shared__ variables exist already
    unpoison((uintptr_t)smem_lo + shared_vars[i].offset, shared_vars[i].size);
}

void allocate_fibers() {
  size_t per = kStackBytes + kPage;
  void* p = mmap(nullptr, per * nthreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) fail("kind=internal;detail=cannot allocate fiber stacks");
  stacks = (char*)p;
  stacks_span = per * nthreads;
  for (int i = 0; i < nthreads; ++i) mprotect(stacks + i * per, kPage, PROT_NONE);  // guard below
  fibers = new Fiber[kMaxThreads];
#if !defined(__x86_64__)
  contexts = new ucontext_t[kMaxThreads];
#endif
}

void bind_arguments() {
  const __emu_entry& e = *entry;
  if ((int)req.params.size() != e.nparams) bad_request("argument count");
  pointer_storage.resize(req.params.size());
  for (size_t i = 0; i < req.params.size(); ++i) {
    if (req.param_buffer[i] >= 0) {
      const Buffer& b = buffers[(size_t)req.param_buffer[i]];
      char* p = b.base + req.param_offset[i];
      std::memcpy(req.params[i].data(), &p, sizeof p);
    }
    // Each argument in storage aligned to 64 bytes: a parameter of an over-aligned type (a TMA tensor map,
    // alignas(64)) may be copied with aligned vector moves, which fault on a vector's 16-byte alignment.
    const size_t n = req.params[i].size(), bytes = (n + 63) / 64 * 64;
    void* q = aligned_alloc(64, bytes ? bytes : 64);
    if (!q) fail("kind=internal;detail=cannot allocate the kernel's arguments");
    std::memcpy(q, req.params[i].data(), n);
    arg_ptrs.push_back(q);
  }
}

// Shared memory is never zero on a GPU: fill it with 0xFF bytes (a NaN as float, -1 as int) so
// that reading what no thread wrote shows up in the results.
void poison_shared() {
  if (smem_size) std::memset(smem_lo, 0xFF, smem_size);
  if (req.dyn_smem) std::memset(dyn_lo, 0xFF, req.dyn_smem);
}

void run_block(unsigned linear) {
  unsigned gx = req.grid[0], gy = req.grid[1];
  __emu_block_idx = {linear % gx, (linear / gx) % gy, linear / (gx * gy)};
  poison_shared();
  unsigned bx = req.block[0], by = req.block[1];
  for (int i = 0; i < nthreads; ++i) {
    Fiber& f = fibers[i];
    unsigned u = (unsigned)i;
    f.t.tid = {u % bx, (u / bx) % by, u / (bx * by)};
    f.t.linear = u;
    f.t.lane = u % 32;
    f.t.warp = u / 32;
    f.state = kRunnable;
    f.line = 0;
    f.epoch = f.warp_epoch = f.seq = 0;
    f.groups = 0;
    f.copies.clear();
    // Stack tops staggered by cache lines: equally spaced tops would share L1 sets and evict
    // each other at every switch.
    f.sp = fiber_initial_sp(&f, stacks + (size_t)(i + 1) * (kStackBytes + kPage) - (size_t)(i % 64) * 64);
  }
  std::memset(warps, 0, sizeof warps);
  std::memset(active_waiting, 0, sizeof active_waiting);
  reset_warpgroups();
  hb_reset();
  block_arrived = done_count = 0;
  cur = 0;
  __emu_cur = &fibers[0].t;
  in_kernel = 1;
  fiber_switch(&main_sp, fibers[0].sp);
  in_kernel = 0;
}

struct Counter {
  unsigned next;
  int abort;
};

void set_time_limit() {
  struct itimerval t = {};
  t.it_value.tv_sec = req.timeout_ms / 1000;
  t.it_value.tv_usec = (req.timeout_ms % 1000) * 1000;
  setitimer(ITIMER_REAL, &t, nullptr);
}

void map_trace() {
  size_t bytes = sizeof(TraceHeader) + req.trace_capacity * sizeof(TraceRecord);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, req.trace_fd, 0);
  if (p == MAP_FAILED) fail("kind=internal;detail=cannot map the trace file (%s)", strerror(errno));
  trace_header = (TraceHeader*)p;
  trace_header->count = 0;
  trace_header->capacity = req.trace_capacity;
  trace_records = (TraceRecord*)(trace_header + 1);
}

// Tracing runs only the chosen blocks, one at a time, in one process.
void run_traced_blocks() {
  set_time_limit();
  unsigned nblocks = req.grid[0] * req.grid[1] * req.grid[2];
  for (unsigned b : req.trace_blocks) {
    if (b >= nblocks) bad_request("trace_block beyond the grid");
    trace_block = b;
    tracing = true;
    run_block(b);
    tracing = false;
  }
  fflush(stdout);
}

void run_blocks(Counter* counter, unsigned nblocks) {
  set_time_limit();
  for (;;) {
    unsigned b = __sync_fetch_and_add(&counter->next, 1u);
    if (b >= nblocks || counter->abort) break;
    run_block(b);
  }
  fflush(stdout);
}

// The grid's run time, without the process start, for the emulator's own benchmarks.
void report_success(const struct timespec& t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
  if (__sync_bool_compare_and_swap(&result->claimed, 0, 1)) {
    size_t used = (size_t)snprintf(result->text, sizeof result->text, "kind=ok;elapsed_ns=%lld;shared=", ns);
    for (int i = 0; i < n_shared_vars && used < sizeof result->text; ++i)
      used += (size_t)snprintf(result->text + used, sizeof result->text - used, "%s%s:%zu:%zu:%d", i ? "," : "",
                               shared_vars[i].name, shared_vars[i].offset, shared_vars[i].size, shared_vars[i].line);
  }
}

void describe_entries() {
  for (int i = 0; i < __emu_num_entries; ++i) {
    const __emu_entry& e = __emu_entries[i];
    printf("entry %d %d %s\n", i, e.nparams, e.name);
    for (int p = 0; p < e.nparams; ++p) {
      const __emu_param& q = e.params[p];
      printf("param %d %d %d %d %c %s\n", q.is_pointer, q.size, q.pointee_size, q.pointee_const, q.category,
             q.type_name);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--describe") {
    describe_entries();
    return 0;
  }
  read_request();
  map_result();
  install_signal_handlers();
  if (__emu_inline_checks && !shadow_ready)
    fail("kind=no_shadow;detail=cannot reserve the shadow memory for inline checks");
  if (req.entry < 0 || req.entry >= __emu_num_entries) bad_request("entry index");
  entry = &__emu_entries[req.entry];
  map_buffers();
  map_shared_memory();
  bind_arguments();
  __emu_grid_dim = dim3(req.grid[0], req.grid[1], req.grid[2]);
  __emu_block_dim = dim3(req.block[0], req.block[1], req.block[2]);
  nthreads = (int)(req.block[0] * req.block[1] * req.block[2]);
  if (nthreads < 1 || nthreads > kMaxThreads) bad_request("block size");
  allocate_fibers();
  unsigned nblocks = req.grid[0] * req.grid[1] * req.grid[2];

  Counter* counter =
      (Counter*)mmap(nullptr, sizeof(Counter), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  counter->next = 0;
  counter->abort = 0;
  int workers = req.workers < 1 ? 1 : req.workers;
  if ((unsigned)workers > nblocks) workers = (int)nblocks;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (req.trace_fd >= 0) {
    map_trace();
    run_traced_blocks();
    report_success(t0);
    return 0;
  }
  if (workers <= 1) {
    run_blocks(counter, nblocks);
    report_success(t0);
    return 0;
  }
  fflush(stdout);
  std::vector<pid_t> children;
  for (int w = 0; w < workers; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      run_blocks(counter, nblocks);
      _exit(0);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (size_t done = 0; done < children.size(); ++done) {
    int status;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && !failed) {
      failed = 1;
      counter->abort = 1;
      for (pid_t c : children)
        if (c != pid) kill(c, SIGKILL);
      if (WIFSIGNALED(status) && __sync_bool_compare_and_swap(&result->claimed, 0, 1))
        snprintf(result->text, sizeof result->text, "kind=crash;signal=%d;detail=a worker process was killed",
                 WTERMSIG(status));
    }
  }
  if (!failed) report_success(t0);
  return failed ? kExitKernelError : 0;
}

// Tile by Tile CPU emulator runtime: fibers and the launch. main() reads the request, maps the
// buffers, then runs the grid's blocks, in worker processes or, for a trace, the chosen blocks in
// this one; each block's threads are fibers switched by the scheduler here. Crashes and time
// limits become reports (the signal handler). runtime_internal.h describes the runtime's files.
#include "runtime_internal.h"

#include <algorithm>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// ---- state visible to kernels -----------------------------------------------------------
extern "C" {
__emu_thread* __emu_cur = nullptr;
uint3 __emu_block_idx;
dim3 __emu_block_dim, __emu_grid_dim;
}

namespace emu {

Request req;
Fiber* fibers = nullptr;
int nthreads = 0;
int cur = 0;
int done_count = 0;

namespace {
constexpr size_t kStackBytes = 128 * 1024;
constexpr int kExitKernelError = 3;

std::vector<void*> arg_ptrs;
std::vector<char*> pointer_storage;

// ---- error reporting ------------------------------------------------------------------
struct ResultArea {
  int claimed;
  char text[8188];
};
ResultArea* result = nullptr;
volatile sig_atomic_t in_kernel = 0;

void where(char* out, size_t n) {
  if (!in_kernel || !fibers) {
    out[0] = 0;
    return;
  }
  const __emu_thread& t = fibers[cur].t;
  snprintf(out, n, "block=%u,%u,%u;thread=%u,%u,%u;", __emu_block_idx.x, __emu_block_idx.y, __emu_block_idx.z,
           t.tid.x, t.tid.y, t.tid.z);
}
}  // namespace

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
namespace {
char* stacks = nullptr;  // one stack per thread of the block, each above an inaccessible guard page
size_t stacks_span = 0;
void* main_sp = nullptr;
const __emu_entry* entry = nullptr;
}  // namespace
}  // namespace emu

using namespace emu;

extern "C" void emu_switch(void** save_sp, void* new_sp);
extern "C" void emu_fiber_trampoline();
extern "C" void emu_fiber_main(Fiber* f);

namespace {
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

void describe_waits(char* out, size_t n) {
  size_t used = strlen(out);
  int shown = 0;
  if (cluster_size > 1)
    used += (size_t)snprintf(out + used, n - used, "%sin block (%u,%u,%u), rank %d of its cluster: ", used ? ". " : "",
                             block_index[rank].x, block_index[rank].y, block_index[rank].z, rank);
  for (int i = 0; i < nthreads && used + 96 < n && shown < 6; ++i) {
    const Fiber& f = fibers[i];
    if (f.state == kRunnable) continue;
    if (i > 0 && fibers[i - 1].state == f.state && fibers[i - 1].line == f.line) continue;
    char label[48];
    thread_label(i, label, sizeof label);
    const char* what = f.state == kWaitBlock       ? "waits at __syncthreads"
                       : f.state == kWaitCluster   ? "waits at the cluster barrier (cluster_wait)"
                       : f.state == kWaitWarp      ? "waits at a warp collective"
                       : f.state == kWaitActive    ? "waits at __activemask"
                       : f.state == kWaitWarpgroup ? "waits at a wgmma call"
                       : f.state == kWaitMbarrier  ? "waits at mbarrier_wait"
                       : f.state == kWaitNamed     ? "waits at a named barrier"
                                                   : "has finished";
    used += (size_t)snprintf(out + used, n - used, "%sthread %s %s", shown ? ", " : "", label, what);  // ';' ends a field
    if (f.state != kDone) used += (size_t)snprintf(out + used, n - used, " (line %d)", f.line);
    ++shown;
  }
}
}  // namespace

namespace emu {
// Blocks the running fiber and runs the next runnable one, in ring order: of its own block first, then of the
// cluster's next block that has one (its shared memory then moves into the window: enter_block).
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
  for (int k = 1; k < cluster_size; ++k) {
    const int r = (rank + k) % cluster_size;
    for (int i = 0; i < nthreads; ++i)
      if (block_fibers[r][i].state == kRunnable) {
        Fiber* from = &fibers[cur];
        enter_block(r);
        cur = i;
        __emu_cur = &fibers[i].t;
        fiber_switch(&from->sp, fibers[i].sp);
        return;
      }
  }
  char waits[4096] = "";
  const char *fix = nullptr, *bytes_fix = nullptr;
  const int stuck = rank;
  for (int k = 0; k < cluster_size; ++k) {  // every block of the cluster: what its threads wait for
    enter_block((stuck + k) % cluster_size);
    describe_waits(waits, sizeof waits);
    const char* f = wgmma_deadlock_hint(waits, sizeof waits);  // what a setmaxnreg or a barrier still waits for
    const char* b = mbarrier_deadlock_hint(waits, sizeof waits);
    fix = fix ? fix : f, bytes_fix = bytes_fix ? bytes_fix : b;
    named_barrier_deadlock_hint(waits, sizeof waits);
  }
  enter_block(stuck);
  fix = fix ? fix : bytes_fix;
  fail("kind=deadlock;detail=no thread of the %s can go on: %s%s%s", cluster_size > 1 ? "cluster" : "block", waits,
       fix ? ";fix=" : "", fix ? fix : "");
}

void thread_label(int i, char* out, size_t n) {
  const __emu_thread& t = fibers[i].t;
  snprintf(out, n, "(%u,%u,%u)", t.tid.x, t.tid.y, t.tid.z);
}
}  // namespace emu

extern "C" void emu_fiber_main(Fiber* f) {
  entry->invoke(arg_ptrs.data());
  wgmma_thread_exit();
  tma_store_thread_exit();
  land_async_copies(*f, 0);  // copies complete even if the thread never waited for them
  f->state = kDone;
  ++done_count;
  barriers_thread_exit(*f);
  cluster_thread_exit();
  if (done_count == nthreads) {
    block_finished();
    bool all = true;
    for (int r = 0; r < cluster_size; ++r) all &= (r == rank ? done_count : block_done[r]) == nthreads;
    if (all) {
      in_kernel = 0;
      fiber_switch(&f->sp, main_sp);
    }
  }
  block_current();  // settles a pending __activemask of this warp too
  __builtin_unreachable();
}

extern "C" void __emu_unsupported(const char* what, int line) {
  fail("kind=unsupported;line=%d;detail=%s", line, what);
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
    uintptr_t own_lo = (uintptr_t)stacks + (size_t)(rank * nthreads + cur) * (kStackBytes + kPage) + kPage;
    if (stacks && (a - (uintptr_t)stacks < stacks_span || (sp && sp < own_lo && own_lo - sp < (uintptr_t(1) << 32))))
      fail("kind=stack_overflow;pc=%p;limit=%zu", pc, kStackBytes);
    if (faults_as_out_of_bounds(a)) out_of_bounds(a, 1, -1, pc);
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
    auto is = [&key](const char* name) { return std::strcmp(key, name) == 0; };
    if (is("entry")) {
      if (scanf("%d", &req.entry) != 1) bad_request("entry");
    } else if (is("grid") || is("block")) {
      unsigned* d = is("grid") ? req.grid : req.block;
      if (scanf("%u %u %u", &d[0], &d[1], &d[2]) != 3) bad_request(key);
    } else if (is("dynamic_smem")) {
      if (scanf("%zu", &req.dyn_smem) != 1) bad_request(key);
    } else if (is("workers")) {
      if (scanf("%d", &req.workers) != 1) bad_request(key);
    } else if (is("timeout_ms")) {
      if (scanf("%ld", &req.timeout_ms) != 1) bad_request(key);
    } else if (is("result_fd")) {
      if (scanf("%d", &req.result_fd) != 1) bad_request(key);
    } else if (is("trace")) {
      if (scanf("%d %zu", &req.trace_fd, &req.trace_capacity) != 2) bad_request(key);
    } else if (is("cluster")) {
      if (scanf("%u %u %u", &req.cluster[0], &req.cluster[1], &req.cluster[2]) != 3) bad_request(key);
    } else if (is("trace_block")) {
      unsigned b;
      if (scanf("%u", &b) != 1) bad_request(key);
      req.trace_blocks.push_back(b);
    } else if (is("buffer")) {
      int fd;
      size_t n;
      if (scanf("%d %zu", &fd, &n) != 2) bad_request(key);
      req.buffer_fds.push_back(fd);
      req.buffer_bytes.push_back(n);
    } else if (is("pointer")) {
      int b;
      size_t off;
      if (scanf("%d %zu", &b, &off) != 2) bad_request(key);
      req.params.emplace_back(sizeof(void*));
      req.param_buffer.push_back(b);
      req.param_offset.push_back(off);
    } else if (is("value")) {
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
    } else if (is("run")) {
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

// A stack for every thread of a cluster's blocks (they all live at once).
void allocate_fibers() {
  size_t per = kStackBytes + kPage;
  const size_t all = (size_t)nthreads * (size_t)cluster_size;
  void* p = mmap(nullptr, per * all, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) fail("kind=internal;detail=cannot allocate fiber stacks");
  stacks = (char*)p;
  stacks_span = per * all;
  for (size_t i = 0; i < all; ++i) mprotect(stacks + i * per, kPage, PROT_NONE);  // guard below
  for (int r = 0; r < cluster_size; ++r) block_fibers[r] = new Fiber[kMaxThreads];
  fibers = block_fibers[0];
#if !defined(__x86_64__)
  contexts = new ucontext_t[kMaxThreads * kMaxCluster];
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

// The cluster's blocks in rank order (%cluster_ctarank: x fastest), as a GPU places a cluster in the grid.
unsigned cluster_count() {
  return req.grid[0] / req.cluster[0] * (req.grid[1] / req.cluster[1]) * (req.grid[2] / req.cluster[2]);
}
unsigned cluster_of(unsigned linear) {
  const unsigned gx = req.grid[0], gy = req.grid[1], x = linear % gx, y = linear / gx % gy, z = linear / (gx * gy);
  const unsigned cx = req.grid[0] / req.cluster[0], cy = req.grid[1] / req.cluster[1];
  return x / req.cluster[0] + cx * (y / req.cluster[1] + cy * (z / req.cluster[2]));
}

// Runs cluster c (without __cluster_dims__: block c) to completion, its blocks' threads in one scheduler.
void run_cluster(unsigned c) {
  const unsigned cx = req.grid[0] / req.cluster[0], cy = req.grid[1] / req.cluster[1];
  const unsigned ox = c % cx * req.cluster[0], oy = c / cx % cy * req.cluster[1], oz = c / (cx * cy) * req.cluster[2];
  start_cluster();
  unsigned bx = req.block[0], by = req.block[1];
  for (int r = 0; r < cluster_size; ++r) {
    const unsigned u = (unsigned)r;
    block_index[r] = {ox + u % req.cluster[0], oy + u / req.cluster[0] % req.cluster[1],
                      oz + u / (req.cluster[0] * req.cluster[1])};
    enter_block(r);
    poison_shared();
    for (int i = 0; i < nthreads; ++i) {
      Fiber& f = fibers[i];
      unsigned u = (unsigned)i;
      f.t.tid = {u % bx, (u / bx) % by, u / (bx * by)};
      f.t.linear = u;
      f.t.lane = u % 32;
      f.t.warp = u / 32;
      f.t.rank = (unsigned)r;
      f.state = kRunnable;
      f.line = 0;
      f.epoch = f.warp_epoch = f.seq = 0;
      f.groups = f.proxy_fences = 0;
      f.cluster_arrivals = f.cluster_waits = f.cluster_fence = 0;
      f.copies.clear();
      // Stack tops staggered by cache lines: equally spaced tops would share L1 sets and evict
      // each other at every switch.
      const size_t s = (size_t)(r * nthreads + i);
      f.sp = fiber_initial_sp(&f, stacks + (s + 1) * (kStackBytes + kPage) - (s % 64) * 64);
    }
    reset_barriers();
    reset_warpgroups();
    done_count = 0;
    block_done[r] = 0;
  }
  enter_block(0);
  reset_mbarriers();
  reset_tma_stores();
  hb_reset();
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

// Tracing runs only the chosen blocks, one at a time (in a cluster, with the blocks of its cluster), in one process.
void run_traced_blocks() {
  set_time_limit();
  unsigned nblocks = req.grid[0] * req.grid[1] * req.grid[2];
  std::vector<unsigned> done;
  for (unsigned b : req.trace_blocks) {
    if (b >= nblocks) bad_request("trace_block beyond the grid");
    const unsigned c = cluster_of(b);
    if (std::find(done.begin(), done.end(), c) != done.end()) continue;
    done.push_back(c);
    tracing = true;
    run_cluster(c);
    tracing = false;
  }
  fflush(stdout);
}

void run_blocks(Counter* counter, unsigned nclusters) {
  set_time_limit();
  for (;;) {
    unsigned c = __sync_fetch_and_add(&counter->next, 1u);
    if (c >= nclusters || counter->abort) break;
    run_cluster(c);
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
  if (argc > 1 && std::strcmp(argv[1], "--describe") == 0) {
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
  if (req.dyn_smem > kDynSmemReserve) bad_request("dynamic shared memory larger than 256 KiB");
  map_shared_memory();
  bind_arguments();
  __emu_grid_dim = dim3(req.grid[0], req.grid[1], req.grid[2]);
  __emu_block_dim = dim3(req.block[0], req.block[1], req.block[2]);
  nthreads = (int)(req.block[0] * req.block[1] * req.block[2]);
  if (nthreads < 1 || nthreads > kMaxThreads) bad_request("block size");
  cluster_size = (int)(req.cluster[0] * req.cluster[1] * req.cluster[2]);
  if (cluster_size < 1 || cluster_size > kMaxCluster) bad_request("cluster size");
  for (int d = 0; d < 3; ++d)
    if (req.grid[d] % req.cluster[d]) bad_request("a grid that is not a multiple of the cluster's dimensions");
  allocate_fibers();
  allocate_cluster();
  unsigned nblocks = cluster_count();  // clusters, handed out to the workers

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

// Tile by Tile CPU emulator runtime: memory checks and tracing. The memory a kernel sees (device
// buffers in an arena of inaccessible gaps, static and dynamic shared memory), the checks the
// compiler's address-sanitizer instrumentation calls before every load and store, the shadow
// memory of the inline checks, the trace writer, and asynchronous copies (<cuda_pipeline.h>).
// runtime_internal.h describes the runtime's files.
#include "runtime_internal.h"

#include <errno.h>
#include <sys/mman.h>

extern "C" {
alignas(4096) char __emu_dynamic_smem[kDynSmemReserve + 4096];
alignas(4096) char __emu_static_smem[kStaticSmemBytes];
int __emu_atomic_depth = 0;  // inside an atomic operation: its accesses are traced as atomic
}

namespace emu {

std::vector<Buffer> buffers;
SharedVar shared_vars[256];
int n_shared_vars = 0;
char* dyn_lo = nullptr;
bool tracing = false;
unsigned trace_block = 0;

namespace {
constexpr uintptr_t kGap = uintptr_t(1) << 30;  // inaccessible bytes around every buffer
constexpr uintptr_t kRedzone = 64 * 1024;       // of which the shadow marks this much
size_t smem_size = 0;  // bytes handed out to __shared__ variables, redzones included
constexpr size_t kStaticSmemLimit = 48 * 1024;  // as nvcc and NVRTC enforce
constexpr size_t kSmemRedzone = 32;  // at least this many unaddressable bytes between arrays
constexpr size_t kBlockSmemLimit = 227 * 1024;  // static + dynamic, per block on sm_90

const SharedVar* shared_var_before(size_t off) {
  const SharedVar* best = nullptr;
  for (int i = 0; i < n_shared_vars; ++i)
    if (shared_vars[i].offset <= off) best = &shared_vars[i];
  return best;
}
char* arena = nullptr;
size_t arena_slot = 0, arena_span = 0;
}  // namespace

const SharedVar* shared_var_at(size_t off) {
  for (int i = 0; i < n_shared_vars; ++i)
    if (off >= shared_vars[i].offset && off < shared_vars[i].offset + shared_vars[i].size) return &shared_vars[i];
  return nullptr;
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

bool faults_as_out_of_bounds(uintptr_t a) {
  long long dyn;
  return (arena && a - (uintptr_t)arena < arena_span) || (dyn_lo && in_dynamic(a, dyn));
}

// ---- memory trace: every shared and global access of the traced blocks, in program order ------
namespace {
struct TraceRecord {  // 40 bytes; helpers/measure/trace.py reads the same layout
  uint64_t pc;
  int64_t offset;  // bytes from the buffer's start, or from the start of shared memory
  uint32_t block, epoch, warp_epoch, seq;
  uint16_t thread;
  int8_t buffer;  // which device buffer (global accesses), else -1
  uint8_t space;  // 0 global, 1 static shared, 2 dynamic shared
  uint8_t size, op;  // op: 0 load, 1 store, 2 atomic
  uint8_t repeat;    // 1: an in-flight asynchronous copy's store, recorded again (see below); else trace_tagged's tag
  uint8_t pad;
};
struct TraceHeader {
  uint64_t count, capacity;
};
TraceHeader* trace_header = nullptr;
TraceRecord* trace_records = nullptr;
bool tracing_repeat = false;  // the records being written repeat an earlier one (async copies)
}  // namespace

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

void trace_tagged(uintptr_t off, size_t n, int op, void* pc, int space, int tag, int line, int buffer) {
  trace(off | (uintptr_t)line << 32, n, op, pc, space, buffer);
  if (trace_header->count <= trace_header->capacity) trace_records[trace_header->count - 1].repeat = (uint8_t)tag;
}

int shared_space(uintptr_t a, uintptr_t& rel) {
  size_t off;
  shared_window(a, off);
  rel = off < kDynamicWindow ? off : off - kDynamicWindow;
  return off < kDynamicWindow ? 1 : 2;
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

// ---- the checks: the compiler calls these before every load and store of the kernel ----------
namespace {
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
}  // namespace emu

using namespace emu;

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
namespace emu {
bool shadow_ready = false;
namespace {
constexpr uintptr_t kShadowOffset = 0x7fff8000;  // compiler.py's SHADOW_OFFSET, given to the compiler
constexpr uintptr_t kShadowEnd = (uintptr_t(1) << 44) + kShadowOffset;
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
}  // namespace emu

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

// ---- the memory of a launch ------------------------------------------------------------------
namespace emu {
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

// Shared memory is never zero on a GPU: fill it with 0xFF bytes (a NaN as float, -1 as int) so
// that reading what no thread wrote shows up in the results.
size_t shared_static_bytes() { return smem_size; }

void poison_shared() {
  if (smem_size) std::memset(smem_lo, 0xFF, smem_size);
  if (req.dyn_smem) std::memset(dyn_lo, 0xFF, req.dyn_smem);
}
}  // namespace emu

// ---- asynchronous copies (<cuda_pipeline.h>): global -> shared, landing when waited for --------
namespace emu {
void land_async_copies(Fiber& f, unsigned keep_groups) {
  size_t kept = 0;
  for (AsyncCopy& c : f.copies) {
    if (c.group + keep_groups < f.groups) {
      std::memcpy(c.dst, c.bytes, c.size);
      wgmma_generic_write(c.dst, c.size, c.pc);  // a generic-proxy write: the tensor cores need it fenced
      if (tracing) hb_access((uintptr_t)c.dst, c.size, 1, c.pc);  // written now, by this thread, in the race check
    } else {
      f.copies[kept++] = c;
    }
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

namespace {
bool in_shared(uintptr_t a) {
  long long dyn;
  return a - (uintptr_t)smem_lo < sizeof __emu_static_smem || in_dynamic(a, dyn);
}
}  // namespace
}  // namespace emu

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
  wgmma_check_overwrite(d, size, pc, 0, "asynchronous copy");  // may land at once: not into a tile wgmma reads
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

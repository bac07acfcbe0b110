// Tile by Tile CPU emulator runtime: Hopper's TMA stores, a box of shared memory to global memory
// (runtime/include/tma.cuh: tma_store_2d, tma_store_commit_group, tma_store_wait_read, tma_store_wait), and their
// bulk async-groups. runtime_internal.h describes the runtime's files.
//
// - A store is issued by one thread and kept, with its source's bytes as they were then, in that thread's list.
//   tma_store_commit_group closes a group of the thread's stores issued since its last commit; a wait returns once
//   at most N of its groups are pending, and the stores of the groups it completes read their shared memory then,
//   and write the array then: the latest moment a GPU allows (wait_group.read: the source may be written again;
//   wait_group: the writes are done; the emulator does both at either wait). The box is clipped at the array's
//   edges, as the copy engine clips it: nothing past its rows or columns is written.
// - PTX's rules, each stopped with its line (on a GPU: a store of either value, or of freed shared memory):
//   the source is not written between the issue and the wait that covers the store (its bytes at the wait must
//   be those at the issue); a thread does not finish while a store of its own may still read shared memory (a
//   store never committed into a group is never waited for: named too). In traced blocks the race check
//   (runtime_races.cpp) names the writer of a changed source instead, and also what untraced blocks cannot see:
//   a source word written by a thread that no barrier orders before the store's issue, or without that thread's
//   fence_proxy_async_shared between its write and the store (the copy engine reads through the async proxy), and
//   a write of the source after the wait that no barrier orders after it.
// - Traces record the copy engine's writes of global memory (16 bytes at a time, tagged 2 as the TMA loads' reads:
//   no warp's request), at the wait that lands them, with the store's line.
#include "runtime_internal.h"

namespace emu {
namespace {
struct PendingStore {
  const char* src;
  EmuTensorMap map;
  int row, col, line;
  void* pc;
  unsigned group;                       // the thread's commits before it: its group, once committed
  std::vector<unsigned char> snapshot;  // the source's bytes at its issue
};

struct StoreState {
  std::vector<PendingStore> stores;  // in issue order
  unsigned commits;
};
StoreState store_state[kMaxThreads];

size_t box_bytes(const EmuTensorMap& m) { return (size_t)m.box_rows * m.box_cols * 4; }

// Writes the box, read from shared memory now, into the array, clipped at its edges.
void land(const PendingStore& s, int wait_line) {
  const Buffer& dst = buffers[s.map.buffer];
  const size_t row_bytes = (size_t)s.map.box_cols * 4;
  for (size_t b = 0; b < s.snapshot.size(); ++b)  // the source as the copy engine reads it now, against its issue
    if (((const unsigned char*)s.src)[b] != s.snapshot[b]) {
      const uintptr_t at = (uintptr_t)s.src + b;
      if (hb_on) {
        hb_store_overwritten(at, s.pc, s.line);
        break;
      }
      char who[48];
      thread_label(cur, who, sizeof who);
      fail("kind=tma;line=%d;detail=the shared memory this tma_store_2d reads (byte %zu of its %u x %u box, issued by "
           "thread %s) was written after the store was issued and before the wait that covers it (line %d): the "
           "copy engine may read its source at any time until tma_store_wait_read returns, so on a GPU the store "
           "writes either value;fix=before any thread writes a staging buffer again, have the issuing thread wait "
           "for the store that reads it (tma_store_wait_read<N>() with N small enough), then a barrier (e.g. "
           "named_barrier_sync) ordering that wait before the writes",
           s.line, b, s.map.box_rows, s.map.box_cols, who, wait_line);
    }
  hb_store_read((uintptr_t)s.src, s.snapshot.size(), s.pc, s.line);
  for (uint32_t r = 0; r < s.map.box_rows; ++r) {
    const long long gr = (long long)s.row + r;
    if (gr < 0 || (uint64_t)gr >= s.map.rows) continue;
    for (uint32_t k = 0; k < s.map.box_cols; k += 4) {  // 16 bytes at a time, each clipped at the edge
      const long long gc = (long long)s.col + k;
      for (uint32_t e = 0; e < 4 && k + e < s.map.box_cols; ++e) {
        if (gc + e < 0 || (uint64_t)(gc + e) >= s.map.cols) continue;
        const uintptr_t at = (uintptr_t)s.src + r * row_bytes + (k + e) * 4;
        const uintptr_t phys = s.map.swizzle == 128 ? swizzle128(at) : at;
        std::memcpy(dst.base + (size_t)gr * s.map.pitch + (size_t)(gc + e) * 4, (const void*)phys, 4);
      }
      if (tracing && gc < (long long)s.map.cols && gc + 4 > 0) {
        const long long lo = gc < 0 ? 0 : gc, hi = std::min<long long>(gc + 4, (long long)s.map.cols);
        trace_tagged((uintptr_t)((size_t)gr * s.map.pitch + (size_t)lo * 4), (size_t)(hi - lo) * 4, 1, s.pc, 0, 2, 0,
                     (int)s.map.buffer);
      }
    }
  }
}

// The running thread's stores of every committed group but the newest `pending`, in issue order.
void complete(unsigned pending, int line) {
  StoreState& st = store_state[cur];
  const unsigned done = st.commits > pending ? st.commits - pending : 0;
  std::vector<PendingStore> keep;
  for (PendingStore& s : st.stores) {
    if (s.group < done) land(s, line);
    else keep.push_back(std::move(s));
  }
  st.stores.swap(keep);
}

EmuTensorMap map_of(const void* map_arg, int line) {
  const EmuTensorMap m = tensor_map_at(map_arg, "tma_store_2d", line);
  if (m.rows && (m.rows - 1) * m.pitch + m.cols * 4 > buffers[m.buffer].nbytes)
    fail("kind=tma;line=%d;detail=the tensor map of tma_store_2d describes %llu x %llu floats, rows %llu bytes apart, "
         "more than its array's %zu bytes;fix=build the map from the array's own sizes (helpers.run.tensor_maps)",
         line, (unsigned long long)m.rows, (unsigned long long)m.cols, (unsigned long long)m.pitch,
         buffers[m.buffer].nbytes);
  return m;
}
}  // namespace

void reset_tma_stores() {
  for (int i = 0; i < nthreads; ++i) store_state[i].stores.clear(), store_state[i].commits = 0;
}

void tma_store_thread_exit() {
  const StoreState& st = store_state[cur];
  if (st.stores.empty()) return;
  const PendingStore& s = st.stores.front();
  char who[48];
  thread_label(cur, who, sizeof who);
  const bool committed = s.group < st.commits;
  fail("kind=tma;line=%d;detail=thread %s finished with the TMA store of this line %s: the copy engine may still be "
       "reading its shared memory, which the block's end gives to another block (on a GPU the store may write "
       "another block's data);fix=%s",
       s.line, who, committed ? "not yet waited for" : "never committed into a group (a wait covers only committed "
       "groups)", committed ? "have the issuing thread call tma_store_wait<0>() (or tma_store_wait_read<0>()) "
       "before it finishes" : "call tma_store_commit_group() after the stores, then tma_store_wait<0>() before the "
       "thread finishes");
}
}  // namespace emu

using namespace emu;

extern "C" void __emu_tma_store_2d(const void* map_arg, const void* src, int row, int col, int line) {
  // the pending stores are the running block's alone here (enter_block does not swap them): refused in a cluster
  if (cluster_size > 1) fail("kind=unsupported;line=%d;detail=TMA stores in a kernel launched in clusters", line);
  void* pc = __builtin_return_address(0);
  const EmuTensorMap m = map_of(map_arg, line);
  size_t off;
  if (!shared_window((uintptr_t)src, off) || off % 128)
    fail("kind=tma;line=%d;detail=the source of tma_store_2d is not a 128-byte aligned address in shared memory%s;"
         "fix=point it at a shared-memory box aligned to 1024 bytes (the 128-byte swizzle's pattern repeats every "
         "1024)",
         line, shared_window((uintptr_t)src, off) ? "" : " (it copies shared memory into global memory)");
  const size_t bytes = box_bytes(m);
  long long dyn;
  if (!in_dynamic((uintptr_t)src, dyn) || dyn < 0 || (size_t)dyn + bytes > req.dyn_smem)
    fail("kind=tma;line=%d;detail=the box of tma_store_2d, %u x %u floats (%zu bytes), does not lie inside the "
         "block's dynamic shared memory (%zu bytes from byte %lld);fix=launch with enough dynamic shared memory for "
         "the staging buffers and the bytes skipped to align them",
         line, m.box_rows, m.box_cols, bytes, req.dyn_smem, dyn);
  hb_store_issue((uintptr_t)src, bytes, pc, line);
  StoreState& st = store_state[cur];
  PendingStore s{(const char*)src, m, row, col, line, pc, st.commits, {}};
  s.snapshot.assign((const unsigned char*)src, (const unsigned char*)src + bytes);
  st.stores.push_back(std::move(s));
}

extern "C" void __emu_tma_store_commit(int line) {
  (void)line;
  ++store_state[cur].commits;
}

extern "C" void __emu_tma_store_wait(int pending, int read_only, int line) {
  (void)read_only;  // the emulator lands the stores at either wait: their reads and their writes are done
  complete((unsigned)pending, line);
}

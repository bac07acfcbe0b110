// Tile by Tile CPU emulator runtime: thread block clusters (__cluster_dims__, runtime/include/tma.cuh's cluster
// section). runtime_internal.h describes the runtime's files.
//
// - A worker runs a cluster's blocks together: their threads are fibers of one scheduler (runtime_launch.cpp's
//   block_current moves to the next block only when none of the running block's threads can go on). Each block has
//   its own shared memory, state of barriers and warpgroups: the running block's shared memory is in the window the
//   kernel's unit addresses (__emu_static_smem, __emu_dynamic_smem), the others' in saved copies here, swapped
//   when the scheduler moves between blocks (enter_block). What a thread does to a peer block's shared memory
//   (a multicast copy landing, an arrival on its barrier) goes to wherever that block's bytes lie (shared_of).
// - The cluster barrier (barrier.cluster.arrive.release / wait.acquire): a thread's wait returns once every thread
//   of the cluster has arrived at that phase; it orders memory cluster-wide (the race check's clocks meet).
// - The rules of distributed shared memory, each stopped with its line (on a GPU: a hang, or a write into memory
//   another block may own by then):
//   - a block uses a peer's barrier (an arrival, a multicast reporting to it) only after a cluster barrier that
//     follows the peer's mbarrier_init and fence_mbarrier_init (runtime_tma.cpp's remote_barrier_at);
//   - a block finishes only after a cluster barrier that follows every peer's last use of its shared memory (the
//     multicast copies into it, the arrivals on its barriers): block_finished;
//   - a thread that finishes without arriving at a cluster barrier that others wait at, or arrives after a thread
//     of the cluster finished, is a divergence, as for __syncthreads.
#include "runtime_internal.h"

#include <sys/mman.h>

namespace emu {

int cluster_size = 1;
int rank = 0;
Fiber* block_fibers[kMaxCluster];
uint3 block_index[kMaxCluster];
int block_done[kMaxCluster];

namespace {
char* saved_shared[kMaxCluster];  // each block's shared memory while another one's is in the window
size_t dynamic_span = 0;          // bytes of __emu_dynamic_smem a block uses: to the end of its dynamic array

// The last use of each block's shared memory by a peer's thread: the most cluster barriers that thread had
// arrived at when it made it (it is ordered before the block's exit only by a later phase the block waits for).
struct RemoteUse {
  bool any;
  unsigned arrivals;
  int line, from;
  const char* what;
};
RemoteUse last_use[kMaxCluster];

// The cluster barrier.
unsigned cluster_arrived = 0, cluster_phases = 0;
BarrierClocks cluster_clocks;

char* saved_static(int r) { return saved_shared[r]; }
char* saved_dynamic(int r) { return saved_shared[r] + kStaticSmemBytes; }

unsigned linear_index(const uint3& b) { return b.x + req.grid[0] * (b.y + req.grid[1] * b.z); }

void describe_block(int r, char* out, size_t n) {
  snprintf(out, n, "block (%u,%u,%u), rank %d of the cluster", block_index[r].x, block_index[r].y, block_index[r].z,
           r);
}
}  // namespace

void allocate_cluster() {
  if (cluster_size == 1) return;
  dynamic_span = (size_t)(dyn_lo + req.dyn_smem - __emu_dynamic_smem);
  for (int r = 0; r < cluster_size; ++r) {
    void* p = mmap(nullptr, kStaticSmemBytes + dynamic_span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) fail("kind=internal;detail=cannot allocate the shared memory of a cluster's blocks");
    saved_shared[r] = (char*)p;
    std::memset(p, 0xFF, kStaticSmemBytes + dynamic_span);
  }
}

void start_cluster() {
  for (RemoteUse& u : last_use) u = RemoteUse{};
  cluster_arrived = cluster_phases = 0;
  cluster_clocks = BarrierClocks{};
}

void enter_block(int r) {
  if (r != rank) {
    barriers_swap_block(rank, r);
    warpgroups_swap_block(rank, r);
    const size_t used = shared_static_bytes();
    std::memcpy(saved_static(rank), __emu_static_smem, used);
    std::memcpy(saved_dynamic(rank), __emu_dynamic_smem, dynamic_span);
    std::memcpy(__emu_static_smem, saved_static(r), used);
    std::memcpy(__emu_dynamic_smem, saved_dynamic(r), dynamic_span);
    block_done[rank] = done_count;
    done_count = block_done[r];
    fibers = block_fibers[r];
    rank = r;
  }
  __emu_block_idx = block_index[r];
  trace_block = linear_index(block_index[r]);
}

char* shared_of(int r, char* p) {
  if (r == rank) return p;
  if ((uintptr_t)(p - __emu_static_smem) < kStaticSmemBytes) return saved_static(r) + (p - __emu_static_smem);
  return saved_dynamic(r) + (p - __emu_dynamic_smem);
}

bool cluster_init_visible(unsigned fence) { return fence && fibers[cur].cluster_waits >= fence; }

void cluster_remote_use(int r, int line, const char* what) {
  char peer[96];
  if (block_done[r] == nthreads) {
    describe_block(r, peer, sizeof peer);
    fail("kind=cluster;line=%d;detail=%s reaches the shared memory of %s, which has already finished: on a GPU its "
         "shared memory may belong to another block by now;fix=end the kernel with cluster_sync() in every thread of "
         "every block, after the last multicast copy and the last arrival on a peer's barrier",
         line, what, peer);
  }
  RemoteUse& u = last_use[r];
  const unsigned a = fibers[cur].cluster_arrivals;
  if (!u.any || a >= u.arrivals) u = RemoteUse{true, a, line, rank, what};
}

void block_finished() {
  block_done[rank] = nthreads;
  const RemoteUse& u = last_use[rank];
  if (cluster_size == 1 || !u.any) return;
  unsigned waited = 0;
  for (int i = 0; i < nthreads; ++i) waited = std::max(waited, fibers[i].cluster_waits);
  if (u.arrivals < waited) return;  // the phase after the use: this block waited for it
  char peer[96];
  describe_block(u.from, peer, sizeof peer);
  fail("kind=cluster;line=%d;detail=this block (rank %d of the cluster) finished while the %s of %s (line %d) may "
       "still reach its shared memory: no "
       "cluster barrier that the peer arrived at after it was waited for here before this block's threads finished "
       "(on a GPU the block's shared memory may then belong to another block when the copy lands or the arrival "
       "counts);fix=end the kernel with cluster_sync() in every thread of every block, after the last multicast copy "
       "and the last arrival on a peer's barrier",
       u.line, rank, u.what, peer, u.line);
}

void cluster_thread_exit() {
  if (cluster_size == 1 && cluster_arrived == 0) return;
  const Fiber& f = fibers[cur];
  if (cluster_arrived > 0 && f.cluster_arrivals <= cluster_phases)
    fail("kind=divergence;line=%d;detail=this thread finished without arriving at the cluster barrier that %u "
         "thread(s) of the cluster wait at: it never completes (every thread of every block of the cluster "
         "arrives);fix=have every thread of the cluster reach each cluster_sync()",
         f.line, cluster_arrived);
}

}  // namespace emu

using namespace emu;

extern "C" unsigned __emu_cluster_ctarank() { return (unsigned)rank; }
extern "C" unsigned __emu_cluster_nctarank() { return (unsigned)cluster_size; }

extern "C" void __emu_cluster_arrive(int line) {
  Fiber& f = fibers[cur];
  if (f.cluster_arrivals > f.cluster_waits)
    fail("kind=cluster;line=%d;detail=cluster_arrive() again before the cluster_wait() of the last arrival (PTX: each "
         "barrier.cluster.arrive is followed by a barrier.cluster.wait before the next);fix=call cluster_wait() "
         "between two cluster_arrive() calls, or cluster_sync() for both",
         line);
  for (int r = 0; r < cluster_size; ++r) {
    const int done = r == rank ? done_count : block_done[r];
    if (done)
      fail("kind=divergence;line=%d;detail=the cluster barrier at line %d is reached by this thread but %d thread(s) "
           "of block rank %d of the cluster have already finished without reaching it: it never completes;fix=have "
           "every thread of every block of the cluster reach each cluster_sync() (return only after the last one)",
           line, line, done, r);
  }
  if (hb_on && cluster_clocks.acc.empty()) hb_barrier_init(cluster_clocks);
  hb_barrier_arrive(cluster_clocks);
  ++f.cluster_arrivals;
  if (++cluster_arrived < (unsigned)(nthreads * cluster_size)) return;
  cluster_arrived = 0;
  ++cluster_phases;
  if (hb_on) cluster_clocks.done = cluster_clocks.acc, std::fill(cluster_clocks.acc.begin(), cluster_clocks.acc.end(), 0u);
  for (int r = 0; r < cluster_size; ++r)
    for (int i = 0; i < nthreads; ++i)
      if (block_fibers[r][i].state == kWaitCluster) block_fibers[r][i].state = kRunnable;
}

extern "C" void __emu_cluster_wait(int line) {
  if (fibers[cur].cluster_arrivals == fibers[cur].cluster_waits)
    fail("kind=cluster;line=%d;detail=cluster_wait() with no cluster_arrive() before it (PTX: barrier.cluster.wait "
         "waits for the phase this thread arrived at);fix=call cluster_arrive() first, or cluster_sync() for both",
         line);
  while (cluster_phases < fibers[cur].cluster_arrivals) {
    fibers[cur].state = kWaitCluster;
    fibers[cur].line = line;
    block_current();
  }
  Fiber& f = fibers[cur];
  f.cluster_waits = f.cluster_arrivals;
  ++f.epoch;  // every thread of its block has met, as at a __syncthreads
  hb_barrier_wait(cluster_clocks);
  trace_pending_async_copies();
}

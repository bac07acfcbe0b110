"""What the thread-tiling exercises (04, 05, 06) measure in the trace of block 0 of the learner's kernel:
which elements of C each thread stores (its thread tile), how many times its threads load each
__shared__ array (one load per access the source writes: the emulator traces the kernel unoptimized),
and the warp requests of one shared array with their bank conflicts (helpers.measure.memory.banks)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from helpers.measure import accesses, memory
from helpers.measure.trace import SPACES, Trace


# ---- the thread tile: which elements of C each thread stores ------------------------------------------
@dataclass(frozen=True)
class ThreadTiles:
    """The stores to C of block 0, per thread."""
    threads: int                  # threads of the block
    storing: int                  # threads that store to C
    results: int                  # distinct elements of C the block stores
    shape: tuple[int, int]        # (rows, columns) of C the most common storing thread spans
    uniform: bool                 # every storing thread fills a shape[0] x shape[1] rectangle, each element once
    example: tuple[int, int, int]  # (thread, rows, columns) of a thread that differs (else of thread 0)
    line: int | None              # the source line of the stores
    # how far apart the rows and the columns of the example thread lie: 1 neighbouring, s every s-th,
    # None unevenly (or only one)
    steps: tuple[int | None, int | None] = (None, None)

    def words(self) -> str:
        """'4 × 4 (rows × columns): 4 neighbouring rows, 4 columns 16 apart': what the thread tile is, as the
        learner's kernel made it."""
        rows, cols = self.shape
        parts = [f"{n} neighbouring {what}" if step == 1 else f"{n} {what} {step} apart" if step else
                 f"{n} {what}, unevenly spaced" for n, step, what in ((rows, self.steps[0], "rows"),
                                                                       (cols, self.steps[1], "columns")) if n > 1]
        return f"{rows} × {cols} (rows × columns)" + (f": {', '.join(parts)}" if parts else "")

    @property
    def strided(self) -> bool:
        """Whether the thread's rows or columns are spread (not neighbours)."""
        return any(s is not None and s > 1 for s in self.steps)


def thread_tiles(tr: Trace, M: int, N: int) -> ThreadTiles:
    """Block 0's stores to the M x N matrix C, per thread: how many rows and columns each spans."""
    block = tr.blocks[0]
    ids = [b for b, name in tr.buffers.items() if name == "C"]
    r = tr.records
    sel = (r["space"] == SPACES.index("global")) & (r["op"] == 1) & (r["block"] == block) & (r["repeat"] == 0)
    sel &= np.isin(r["buffer"], ids)
    stores = r[sel]
    if stores.size == 0:
        return ThreadTiles(tr.threads_per_block, 0, 0, (0, 0), False, (0, 0, 0), None)
    element = stores["offset"] // tr.itemsize[ids[0]]
    rows, cols = np.divmod(element, N)
    spans, steps = {}, {}
    for t in np.unique(stores["thread"]):
        mine = stores["thread"] == t
        r, c = np.unique(rows[mine]), np.unique(cols[mine])
        spans[int(t)] = (r.size, c.size, int(mine.sum()), np.unique(element[mine]).size)
        steps[int(t)] = (_step(r), _step(c))
    shape = Counter((a, b) for a, b, _, _ in spans.values()).most_common(1)[0][0]
    odd = [t for t, (a, b, n, distinct) in spans.items() if (a, b) != shape or n != a * b or distinct != n]
    t = odd[0] if odd else min(spans)
    line = Counter(int(x) for x in stores["line"]).most_common(1)[0][0]
    return ThreadTiles(tr.threads_per_block, len(spans), int(np.unique(element).size), shape, not odd,
                       (t, spans[t][0], spans[t][1]), line or None, steps[t])


def _step(values: np.ndarray) -> int | None:
    """The distance between sorted distinct values where it is the same throughout, else None (one value: None)."""
    if values.size < 2:
        return None
    d = np.unique(np.diff(values))
    return int(d[0]) if d.size == 1 else None


# ---- shared loads, per __shared__ array -----------------------------------------------------------------
@dataclass(frozen=True)
class SharedLoads:
    """Block 0's loads from shared memory: one per thread and access the source writes."""
    threads: int
    K: int
    count: dict[str, int]         # __shared__ array -> loads
    line: dict[str, int]          # __shared__ array -> the source line of most of its loads
    arrays: tuple[str, ...]       # every __shared__ variable of the kernel

    @property
    def total(self) -> int:
        return sum(self.count.values())

    def per_thread_per_k(self, name: str) -> float:
        """Loads of `name` by one thread in one step k (all threads and steps: the mean)."""
        return self.count.get(name, 0) / (self.threads * self.K)


def shared_loads(tr: Trace, K: int) -> SharedLoads:
    block = tr.blocks[0]
    r = tr.records
    sel = ((r["space"] == SPACES.index("shared")) | (r["space"] == SPACES.index("dynamic shared")))
    r = r[sel & (r["op"] == 0) & (r["block"] == block) & (r["repeat"] == 0)]
    count, line = {}, {}
    for v in tr.shared_variables:
        mine = r[(r["space"] == SPACES.index("shared")) & (r["offset"] >= v.offset) & (r["offset"] < v.offset + v.size)]
        if mine.size:
            count[v.name] = int(mine.size)
            line[v.name] = Counter(int(x) for x in mine["line"]).most_common(1)[0][0]
    dynamic = int(np.count_nonzero(r["space"] == SPACES.index("dynamic shared")))
    if dynamic:
        count["extern __shared__"] = dynamic
    return SharedLoads(tr.threads_per_block, K, count, line, tuple(v.name for v in tr.shared_variables))


def missing_tile(loads: SharedLoads, name: str, matrix: str) -> str:
    """Why the multiply-adds of block 0 take no operand of `matrix` from the shared array `name`."""
    if name not in loads.arrays:
        found = ", ".join(loads.arrays) or "none"
        return (f"the kernel has no __shared__ array named {name} (its __shared__ arrays: {found}); the check "
                f"measures the tile of {matrix} by that name, as the starter declares it")
    return f"block 0 never reads {name}: the multiply-adds take no operand of {matrix} from shared memory"


# ---- bank conflicts of one shared array's loads ---------------------------------------------------------
@dataclass(frozen=True)
class Conflicts:
    """The warp requests of block 0 that load one __shared__ array, and their bank conflicts."""
    array: str
    requests: int
    ways: int                     # the worst conflict of any of them: 1 is none
    excess: int                   # wavefronts beyond the conflict-free minimum, all requests together
    wavefronts: int
    conflicted: int               # requests with a conflict
    worst: memory.Request | None  # the first request with the worst conflict
    worst_lanes: str              # its lanes, words and banks, counted from the array's start

    def words(self) -> str:
        if not self.requests:
            return f"{self.array}: no load requests"
        how = "no bank conflict" if self.ways == 1 else f"worst {self.ways}-way"
        return (f"{self.array}: {self.requests} warp load requests, {how}, {self.wavefronts} wavefronts "
                f"({self.excess} beyond the conflict-free minimum); {self.conflicted} requests conflict")


def conflicts(tr: Trace, array: str) -> Conflicts:
    """Bank conflicts of every warp request of block 0 that loads the __shared__ array `array`."""
    block = tr.blocks[0]
    reqs = [q for q in memory.requests(tr, "shared") if q.op == "load" and q.array == array and q.block == block]
    if not reqs:
        return Conflicts(array, 0, 1, 0, 0, 0, None, "")
    reports = [memory.banks(q) for q in reqs]
    ways = max(b.ways for b in reports)
    worst = next(q for q, b in zip(reqs, reports) if b.ways == ways)
    lanes = accesses.bank_view(tr, worst).lane_groups() if ways > 1 else ""
    return Conflicts(array, len(reqs), ways, sum(b.excess for b in reports), sum(b.wavefronts for b in reports),
                     sum(b.ways > 1 for b in reports), worst, lanes)

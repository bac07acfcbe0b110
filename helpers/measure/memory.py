"""What a warp asks of memory, read from a trace of the learner's own kernel.

- requests(): the trace's accesses grouped into warp-wide requests, as the hardware issues them:
  the k-th execution of one instruction by the lanes of one warp, between the same barriers.
- banks(): shared memory has 32 banks of 4 bytes. A request is served in wavefronts; lanes that
  touch different 4-byte words of one bank need separate wavefronts (an n-way conflict), while
  lanes reading the same word share it (a broadcast, no conflict). 8-byte accesses are served a
  half-warp at a time and 16-byte accesses a quarter-warp at a time, so their conflict-free
  minimum is 2 and 4 wavefronts.
- sectors(): global memory moves 32-byte sectors; a request costs the sectors its lanes touch.
- races(): a shared word written by one thread and read or written by another with no barrier
  between them (lanes of one warp are ordered by a warp collective between them); and, from the
  emulator's clocks, the tensor cores' and the copy engine's accesses and the async proxy's fences.
- unwritten_reads(): a shared word read before any thread of the block wrote it.
- per_line(): the totals per source line, the view that sits beside the kernel's source.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.core.arch import BANK_BYTES, BANKS, SECTOR_BYTES
from helpers.measure.trace import ACCESS_KINDS, OPS, SPACES, Trace



@dataclass
class Request:
    """One warp-wide memory instruction: the lanes that took part and where each went."""
    block: int
    warp: int
    epoch: int
    line: int
    space: str            # 'global', 'shared' or 'dynamic shared'
    op: str               # 'load', 'store' or 'atomic'
    size: int             # bytes per lane
    array: str            # the kernel parameter (global) or __shared__ variable it falls in
    lanes: np.ndarray     # lane ids, ascending
    offsets: np.ndarray   # byte offset of each lane's access (in its buffer, or in shared memory)


def array_names(trace: Trace, space: np.ndarray, buffer: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The kernel parameter or __shared__ variable each access falls in."""
    space, buffer, offset = np.asarray(space), np.asarray(buffer), np.asarray(offset)
    names = np.full(space.shape, "extern __shared__", dtype=object)
    for b, name in trace.buffers.items():
        names[(space == 0) & (buffer == b)] = name
    for v in trace.shared_variables:
        names[(space == 1) & (offset >= v.offset) & (offset < v.offset + v.size)] = v.name
    return names


def async_copy_pcs(records: np.ndarray) -> np.ndarray:
    """The instructions (pcs) of asynchronous copies (cp.async) among trace records: one instruction that both reads
    global memory and writes shared memory."""
    global_loads = (records["space"] == SPACES.index("global")) & (records["op"] == OPS.index("load"))
    shared_stores = (records["space"] != SPACES.index("global")) & (records["op"] == OPS.index("store"))
    return np.intersect1d(records["pc"][global_loads], records["pc"][shared_stores])


def requests(trace: Trace, space: str | None = None) -> list[Request]:
    """The trace's accesses as warp requests, in order of block, warp and program order. An
    asynchronous copy still in flight at a barrier is recorded again after it (so that the race
    check sees its store in every interval it spans); it is one request, counted once."""
    r = trace.records
    r = r[r["repeat"] == 0]
    if space is not None:
        r = r[r["space"] == SPACES.index(space)]
    if r.size == 0:
        return []
    df = pd.DataFrame({k: r[k] for k in ("block", "thread", "warp", "lane", "epoch", "warp_epoch", "seq", "pc",
                                         "space", "op")})
    # The n-th time a thread executes an instruction between two barriers: the lanes of a warp
    # running the same loop line up by it. An asynchronous copy is one instruction (one pc) that
    # reads global memory and writes shared memory: its two sides are two requests, one per space.
    key = ["pc", "space", "op"]
    df["occurrence"] = df.groupby(["block", "thread", "epoch", "warp_epoch", *key], sort=False).cumcount()
    gid = df.groupby(["block", "warp", "epoch", "warp_epoch", *key, "occurrence"], sort=False).ngroup().to_numpy()
    order = np.lexsort((r["lane"], gid))
    bounds = np.flatnonzero(np.diff(gid[order])) + 1
    names = array_names(trace, r["space"], r["buffer"], r["offset"])
    out = []
    for idx in np.split(order, bounds):
        i = idx[0]
        out.append(Request(int(r["block"][i]), int(r["warp"][i]), int(r["epoch"][i]), int(r["line"][i]),
                           SPACES[int(r["space"][i])], OPS[int(r["op"][i])], int(r["size"][idx].max()),
                           str(names[i]), r["lane"][idx].astype(int), r["offset"][idx].astype(np.int64)))
    # program order within a warp: by the lowest lane's position in its own instruction stream
    seq_of = {id(q): int(r["seq"][idx[0]]) for q, idx in zip(out, np.split(order, bounds))}
    out.sort(key=lambda q: (q.block, q.warp, seq_of[id(q)]))
    return out


@dataclass(frozen=True)
class BankReport:
    ways: int              # the worst conflict in any phase: 1 means none
    wavefronts: int        # passes the hardware needs for the whole request
    ideal: int             # the minimum for this access width (1, 2 or 4)
    banks: np.ndarray      # bank of each lane's (first) word
    conflicted: np.ndarray  # lanes that share a bank with a different word in their phase

    @property
    def excess(self) -> int:
        """Extra wavefronts caused by conflicts (what profilers call bank conflicts)."""
        return self.wavefronts - self.ideal


def _phase_lanes(size: int) -> int:
    return 32 if size <= 4 else 16 if size == 8 else 8


def banks(req: Request) -> BankReport:
    """Bank conflicts of a shared-memory request."""
    if req.space == "global":
        raise ValueError("bank conflicts are a property of shared-memory requests")
    per_phase = _phase_lanes(req.size)
    words_per_lane = max(1, req.size // BANK_BYTES)
    first_word = req.offsets // BANK_BYTES
    wavefronts, ways, phases = 0, 1, 0
    conflicted = np.zeros(req.lanes.size, bool)
    for phase in range(32 // per_phase):
        sel = (req.lanes // per_phase) == phase
        if not sel.any():
            continue
        phases += 1
        words = (first_word[sel, None] + np.arange(words_per_lane)[None, :]).ravel()
        distinct = np.unique(words)
        counts = np.bincount(distinct % BANKS, minlength=BANKS)
        worst = int(counts.max())
        wavefronts += worst
        ways = max(ways, worst)
        busy = counts[(first_word[sel] % BANKS)] > 1
        conflicted[np.flatnonzero(sel)[busy]] = True
    ideal = phases
    return BankReport(ways, wavefronts, ideal, (first_word % BANKS).astype(int), conflicted)


def sectors(req: Request) -> tuple[int, int]:
    """(32-byte sectors the request touches, the fewest its bytes could fit in)."""
    spans = (req.offsets[:, None] + np.arange(req.size)[None, :]).ravel()  # every byte touched
    touched = np.unique(spans // SECTOR_BYTES).size
    return int(touched), int(-(-np.unique(spans).size // SECTOR_BYTES))


def per_line(trace: Trace) -> pd.DataFrame:
    """Per source line and kind of access: requests, and what they cost."""
    rows = []
    for q in requests(trace):
        row = {"line": q.line, "space": q.space, "op": q.op, "array": q.array, "bytes per lane": q.size,
               "lanes": q.lanes.size}
        if q.space == "global":
            got, ideal = sectors(q)
            row.update({"sectors": got, "ideal sectors": ideal})
        else:
            b = banks(q)
            row.update({"wavefronts": b.wavefronts, "ideal wavefronts": b.ideal, "max ways": b.ways})
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    agg = {"lanes": "mean"}
    total = lambda s: s.sum(min_count=1)  # NaN, not 0, where the column does not apply (the other space)
    for col, how in (("sectors", total), ("ideal sectors", total), ("wavefronts", total),
                     ("ideal wavefronts", total), ("max ways", "max")):
        if col in df:
            agg[col] = how
    out = df.groupby(["line", "space", "op", "array", "bytes per lane"], dropna=False).agg(agg)
    out.insert(0, "requests", df.groupby(["line", "space", "op", "array", "bytes per lane"], dropna=False).size())
    out = out.reset_index().rename(columns={"lanes": "lanes per request"})
    out.insert(1, "source", [trace.line_text(int(n)) for n in out["line"]])
    if "sectors" in out:
        out["sectors per request"] = out["sectors"] / out["requests"]
    if "wavefronts" in out:
        out["wavefronts per request"] = out["wavefronts"] / out["requests"]
    return out


@dataclass(frozen=True)
class Race:
    block: int
    epoch: int                 # barriers passed before the two accesses
    array: str
    word: int                  # 4-byte word offset in shared memory
    first: tuple[int, int, str]   # (thread, line, op) of the write
    second: tuple[int, int, str]  # (thread, line, op) of the conflicting access

    ordering: str = "barriers"  # "barriers": the epoch check; "clocks": the runtime's (mbarriers, TMA, wgmma)
    cause: int = 0  # clocks: the runtime's RaceCause (helpers/emulator/runtime/runtime_internal.h), 0 if none known

    @property
    def asynchronous(self) -> bool:
        """A race that involves the copy engine, the tensor cores or the async proxy, which barrier intervals do not
        see (only the runtime's clocks do)."""
        return self.cause != PLAIN or bool({self.first[2], self.second[2]} & {"copy engine write", "tensor core read"})

    def __str__(self) -> str:
        (t1, l1, o1), (t2, l2, o2) = self.first, self.second
        if self.ordering == "clocks":
            return f"block {self.block}: {self._clock_story()}"
        return (f"block {self.block}, between barriers {self.epoch} and {self.epoch + 1}: thread {t1} {o1}s "
                f"{self.array} (shared word {self.word}) at line {l1} and thread {t2} {o2}s it at line {l2}, "
                f"with no barrier between them")

    def _clock_story(self) -> str:
        """The race in words, told the same whichever access the emulator happened to run first."""
        (t1, l1, o1), (t2, l2, o2) = self.first, self.second
        where = f"{self.array} (shared word {self.word})"
        if self.cause in (COPY_TOO_EARLY, NO_WAIT_FOR_COPY):
            (tc, lc), (tr, lr, orr) = ((t1, l1), (t2, l2, o2)) if o1 == "copy engine write" else ((t2, l2), (t1, l1, o1))
            if self.cause == COPY_TOO_EARLY:
                return (f"a TMA copy issued by thread {tc} at line {lc} overwrites {where} while the stage's previous "
                        f"contents may still be in use ({_who(tr, orr)} it at line {lr}): the copy's issuer did not "
                        f"wait for the reader to give the stage back (mbarrier_wait on the barrier the reader arrives "
                        f"on when it is done)")
            return (f"{_who(tr, orr)} {where} at line {lr} without having waited (mbarrier_wait) for the barrier phase "
                    f"that the TMA copy of line {lc} (issued by thread {tc}) completes: the copy's bytes may not have "
                    f"landed")
        if self.cause == UNFENCED:
            reader = "the tensor cores read it" if o2 == "tensor core read" else "a TMA copy overwrites it"
            return (f"thread {t1} writes {where} at line {l1} through the generic proxy (a store or a cp.async), and "
                    f"{reader} at line {l2} through the async proxy with no fence_proxy_async_shared() by thread {t1} "
                    f"between its write and what orders the two: the async proxy may not see the write")
        if self.cause == TENSOR_IN_FLIGHT:
            return (f"the tensor cores (wgmma at line {l1}, issued by thread {t1}'s warpgroup) may still be reading "
                    f"{where} when {_who(t2, o2)} it at line {l2}: no wgmma_wait_group that completes that wgmma is "
                    f"ordered before the write")
        return (f"{_who(t1, o1)} {where} at line {l1}, and {_who(t2, o2)} it at line {l2} with no __syncthreads, "
                f"__syncwarp or mbarrier phase ordering the two")


# Why the runtime's clocks found a race (RaceCause in helpers/emulator/runtime/runtime_internal.h).
PLAIN, COPY_TOO_EARLY, NO_WAIT_FOR_COPY, UNFENCED, TENSOR_IN_FLIGHT = range(5)


def _who(thread: int, op: str) -> str:
    return {"copy engine write": f"a TMA copy issued by thread {thread} writes",
            "tensor core read": f"the tensor cores (wgmma of thread {thread}'s warpgroup) read"}.get(
        op, f"thread {thread} {op}s")


def clock_races(trace: Trace) -> list[Race]:
    """The races the emulator's clocks found in each traced block (helpers/emulator/runtime/runtime_races.cpp), the
    first of each kind (between threads; with the copy engine, the tensor cores or the async proxy): accesses of
    shared memory that no __syncthreads, __syncwarp, mbarrier phase or wgmma_wait_group orders, and generic writes
    that the async proxy reads or overwrites with no fence.proxy.async."""
    ev = trace.events
    if ev is None or ev.size == 0:
        return []
    out = []
    firsts = np.flatnonzero(ev["op"] == 3)
    for i in firsts:
        if i + 1 >= ev.size or ev["op"][i + 1] != 4:
            continue
        a, b = ev[i], ev[i + 1]
        name = str(array_names(trace, [a["space"]], [-1], [int(a["offset"])])[0])
        out.append(Race(int(a["block"]), int(a["epoch"]), name, int(a["offset"]) // BANK_BYTES,
                        (int(a["thread"]), int(a["line"]), ACCESS_KINDS[int(a["repeat"])]),
                        (int(b["thread"]), int(b["line"]), ACCESS_KINDS[int(b["repeat"])]), "clocks",
                        int(b["size"])))
    return out


def shared_words(trace: Trace) -> pd.DataFrame:
    """Every word of shared memory each access touches, one row per (access, word), with its block, thread,
    warp, barrier epoch, line and op: what races, unwritten reads and the barriers a write-it check reads."""
    r = trace.records[np.isin(trace.records["space"], (1, 2))]
    if r.size == 0:
        return pd.DataFrame(columns=["block", "thread", "warp", "epoch", "warp_epoch", "seq", "line", "op",
                                     "space", "word", "offset"])
    nwords = np.maximum(1, r["size"] // BANK_BYTES)
    rep = np.repeat(np.arange(r.size), nwords)
    first = (r["offset"] // BANK_BYTES)[rep]
    within = np.arange(rep.size) - np.repeat(np.cumsum(nwords) - nwords, nwords)
    return pd.DataFrame({"block": r["block"][rep], "thread": r["thread"][rep], "warp": r["warp"][rep],
                         "epoch": r["epoch"][rep], "warp_epoch": r["warp_epoch"][rep], "seq": r["seq"][rep],
                         "line": r["line"][rep], "op": r["op"][rep], "space": r["space"][rep],
                         "word": first + within, "offset": r["offset"][rep]})


def races(trace: Trace, limit: int = 20) -> list[Race]:
    """Shared words that two threads touch between the same two barriers, at least one writing, and the races
    the emulator's clocks found with the tensor cores, the copy engine or the async proxy (clock_races), which
    barrier intervals cannot see: a wgmma's reads last from its issue to the wait that completes it. In a kernel
    that uses mbarriers or TMA copies, only the clocks' races, since there the barriers of __syncthreads are not
    what orders the accesses."""
    clocked = clock_races(trace)
    if trace.events is not None and np.isin(trace.events["op"], (5, 6, 7)).any():
        return clocked[:limit]   # mbarriers order the accesses: barrier intervals do not
    return ([r for r in clocked if r.asynchronous] + _epoch_races(trace, limit))[:limit]


def _epoch_races(trace: Trace, limit: int) -> list[Race]:
    w = shared_words(trace)
    found: dict[tuple, Race] = {}
    keys = ["block", "epoch", "space", "word"]
    w["writes"] = w["op"] != 0
    summary = w.groupby(keys).agg(threads=("thread", "nunique"), writes=("writes", "any"))
    candidates = summary[(summary["threads"] > 1) & summary["writes"]].index
    if len(candidates) == 0:
        return []
    w = w.set_index(keys).loc[candidates].reset_index()
    for (block, epoch, space, word), g in w.groupby(keys, sort=True):
        writers = g[g["op"] != 0]
        for wr in writers.itertuples():
            others = g[g["thread"] != wr.thread]
            # lanes of one warp separated by a warp collective are ordered; two atomics never race
            unordered = others[~((others["warp"] == wr.warp) & (others["warp_epoch"] != wr.warp_epoch))]
            unordered = unordered[~((unordered["op"] == 2) & (wr.op == 2))]
            if unordered.empty:
                continue
            o = unordered.iloc[0]
            key = (int(wr.line), int(o.line), OPS[int(wr.op)], OPS[int(o.op)])
            if key not in found:
                name = str(array_names(trace, [space], [-1], [int(wr.offset)])[0])
                found[key] = Race(int(block), int(epoch), name, int(word), (int(wr.thread), int(wr.line), OPS[int(wr.op)]),
                                  (int(o.thread), int(o.line), OPS[int(o.op)]))
            break
        if len(found) >= limit:
            break
    return list(found.values())


@dataclass(frozen=True)
class UnwrittenRead:
    block: int
    thread: int
    line: int
    array: str
    word: int


def unwritten_reads(trace: Trace, limit: int = 20) -> list[UnwrittenRead]:
    """Shared words read before any thread of the block wrote them (they hold garbage on a GPU)."""
    w = shared_words(trace)
    if w.empty:
        return []
    writes = w[w["op"] != 0]
    first_write = writes.groupby(["block", "space", "word"])["epoch"].min().rename("first_epoch")
    reads = w[w["op"] == 0].join(first_write, on=["block", "space", "word"])
    suspect = reads[~(reads["epoch"] > reads["first_epoch"])]  # NaN (never written) is suspect too
    if suspect.empty:
        return []
    # written before the read in the same interval: by the thread itself, earlier, or by a lane of its warp
    # before a warp collective the reader has passed (wmma's store_matrix_sync then __syncwarp, as in races())
    own = writes[["block", "thread", "warp", "space", "word", "epoch", "seq", "warp_epoch"]].rename(
        columns={"thread": "writer", "seq": "write_seq", "warp_epoch": "write_warp_epoch"})
    merged = suspect.reset_index().merge(own, on=["block", "warp", "space", "word", "epoch"], how="left")
    merged["covered"] = ((merged["writer"] == merged["thread"]) & (merged["write_seq"] < merged["seq"])) | \
        (merged["write_warp_epoch"] < merged["warp_epoch"])
    covered = merged.groupby("index")["covered"].any()
    bad = suspect.loc[covered[~covered].index]
    out = []
    for row in bad.drop_duplicates(["line", "word"]).head(limit).itertuples():
        name = str(array_names(trace, [row.space], [-1], [int(row.offset)])[0])
        out.append(UnwrittenRead(int(row.block), int(row.thread), int(row.line), name, int(row.word)))
    return out

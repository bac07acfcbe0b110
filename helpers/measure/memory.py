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

The grouping and the counts over a whole trace are done for all requests at once (request_table.py); banks()
and sectors() judge one request, as figures and checks ask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.core.arch import BANK_BYTES, BANKS, SECTOR_BYTES
from helpers.measure.request_table import array_names, bank_counts, request_table, sector_counts, sorted_runs
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


def async_copy_pcs(records: np.ndarray) -> np.ndarray:
    """The instructions (pcs) of asynchronous copies (cp.async) among trace records: one instruction that both reads
    global memory and writes shared memory."""
    global_loads = (records["space"] == SPACES.index("global")) & (records["op"] == OPS.index("load"))
    shared_stores = (records["space"] != SPACES.index("global")) & (records["op"] == OPS.index("store"))
    return np.intersect1d(records["pc"][global_loads], records["pc"][shared_stores])


def requests(trace: Trace, space: str | None = None, *, block: int | None = None,
             warp: int | None = None) -> list[Request]:
    """The trace's accesses as warp requests, in order of block, warp and program order (only those of one
    space, block or warp when given). An asynchronous copy still in flight at a barrier is recorded again
    after it (so that the race check sees its store in every interval it spans); it is one request, counted
    once. A request is the n-th execution of one instruction by the lanes of one warp between the same
    barriers (and warp collectives); its lanes ascending. (The grouping: request_table.request_table.)"""
    t = request_table(trace, space, block, warp)
    bounds = t.starts.tolist()
    return [Request(block_, warp_, epoch, line, SPACES[space_], OPS[op], size, array, t.lanes[a:b], t.offsets[a:b])
            for block_, warp_, epoch, line, space_, op, size, array, a, b in zip(
                t.block.tolist(), t.warp.tolist(), t.epoch.tolist(), t.line.tolist(), t.space.tolist(),
                t.op.tolist(), t.size.tolist(), t.array.tolist(), bounds[:-1], bounds[1:])]


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
    t = request_table(trace)
    if len(t) == 0:
        return pd.DataFrame()
    is_global = t.space == SPACES.index("global")
    columns = {"line": t.line, "space": np.array(SPACES, object)[t.space], "op": np.array(OPS, object)[t.op],
               "array": t.array, "bytes per lane": t.size, "lanes": np.diff(t.starts)}
    if is_global.any():
        touched, fewest = sector_counts(t)
        columns.update({"sectors": touched, "ideal sectors": fewest})
    if not is_global.all():
        b = bank_counts(t)
        columns.update({"wavefronts": b.wavefronts, "ideal wavefronts": b.ideal, "max ways": b.ways})
    for name, where in (("sectors", is_global), ("ideal sectors", is_global), ("wavefronts", ~is_global),
                        ("ideal wavefronts", ~is_global), ("max ways", ~is_global)):
        if name in columns and not where.all():   # NaN where the column does not apply (the other space)
            columns[name] = np.where(where, columns[name], np.nan)
    df = pd.DataFrame(columns)
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
        return self.cause != PLAIN or bool({self.first[2], self.second[2]} & {"copy engine write", "tensor core read",
                                                                             "copy engine read"})

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
            reader = {"tensor core read": "the tensor cores read it", "copy engine read": "a TMA store reads it"}.get(
                o2, "a TMA copy overwrites it")
            return (f"thread {t1} writes {where} at line {l1} through the generic proxy (a store or a cp.async), and "
                    f"{reader} at line {l2} through the async proxy with no fence_proxy_async_shared() by thread {t1} "
                    f"between its write and what orders the two: the async proxy may not see the write")
        if self.cause == TENSOR_IN_FLIGHT:
            return (f"the tensor cores (wgmma at line {l1}, issued by thread {t1}'s warpgroup) may still be reading "
                    f"{where} when {_who(t2, o2)} it at line {l2}: no wgmma_wait_group that completes that wgmma is "
                    f"ordered before the write")
        if self.cause == STORE_IN_FLIGHT:
            (ts, ls), (tw, lw, ow) = ((t1, l1), (t2, l2, o2)) if o1 == "copy engine read" else ((t2, l2), (t1, l1, o1))
            return (f"the TMA store issued by thread {ts} at line {ls} may still be reading {where} when {_who(tw, ow)} "
                    f"it at line {lw}: no wait of the issuing thread (tma_store_wait_read) that covers the store is "
                    f"ordered before the write, so on a GPU the store writes either value")
        return (f"{_who(t1, o1)} {where} at line {l1}, and {_who(t2, o2)} it at line {l2} with no __syncthreads, "
                f"__syncwarp, named barrier or mbarrier phase ordering the two")


# Why the runtime's clocks found a race (RaceCause in helpers/emulator/runtime/runtime_internal.h).
PLAIN, COPY_TOO_EARLY, NO_WAIT_FOR_COPY, UNFENCED, TENSOR_IN_FLIGHT, STORE_IN_FLIGHT = range(6)


def _who(thread: int, op: str) -> str:
    return {"copy engine write": f"a TMA copy issued by thread {thread} writes",
            "tensor core read": f"the tensor cores (wgmma of thread {thread}'s warpgroup) read",
            "copy engine read": f"a TMA store issued by thread {thread} reads"}.get(
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


WORD_COLUMNS = ("block", "thread", "warp", "epoch", "warp_epoch", "seq", "line", "op", "space", "word", "offset")


def _shared_word_columns(trace: Trace) -> dict[str, np.ndarray]:
    r = trace.records[np.isin(trace.records["space"], (1, 2))]
    nwords = np.maximum(1, r["size"] // BANK_BYTES)
    rep = np.repeat(np.arange(r.size), nwords)
    first = (r["offset"] // BANK_BYTES)[rep]
    within = np.arange(rep.size) - np.repeat(np.cumsum(nwords) - nwords, nwords)
    return {k: first + within if k == "word" else r[k][rep] for k in WORD_COLUMNS}


def shared_words(trace: Trace) -> pd.DataFrame:
    """Every word of shared memory each access touches, one row per (access, word), with its block, thread,
    warp, barrier epoch, line and op: what races, unwritten reads and the barriers a write-it check reads."""
    if not np.isin(trace.records["space"], (1, 2)).any():
        return pd.DataFrame(columns=list(WORD_COLUMNS))
    return pd.DataFrame(_shared_word_columns(trace))


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
    """Per shared word and barrier interval touched by two threads, one writing (in order of block, epoch, space,
    word): its first write, in program order, that another thread's access does not follow in order, with the
    first such access. Two accesses are ordered when one thread made both, when they are lanes of one warp with
    a warp collective between them, or when both are atomics. The first `limit` different (lines, ops) found."""
    w = _shared_word_columns(trace)
    _, first, partner = _first_unordered(w)
    if first.size == 0 or limit <= 0:
        return []
    # the first race of each (lines, ops), in the order found
    kinds = np.stack([w["line"][first], w["line"][partner], w["op"][first], w["op"][partner]]).astype(np.int64)
    _, new_kind = np.unique(kinds, axis=1, return_index=True)
    out = []
    for k in np.sort(new_kind)[:limit].tolist():
        i, j = int(first[k]), int(partner[k])
        name = str(array_names(trace, [w["space"][i]], [-1], [int(w["offset"][i])])[0])
        out.append(Race(int(w["block"][i]), int(w["epoch"][i]), name, int(w["word"][i]),
                        (int(w["thread"][i]), int(w["line"][i]), OPS[int(w["op"][i])]),
                        (int(w["thread"][j]), int(w["line"][j]), OPS[int(w["op"][j])])))
    return out


def _first_unordered(w: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each candidate group (a block, epoch, space and word that several threads touch, one writing), in
    order, leaving out those whose writes are all ordered: its index among the candidates, its first write with
    an unordered partner and that partner's first access (rows of `w`)."""
    n = w["word"].size
    nothing = (np.zeros(0, np.int64),) * 3
    if n == 0:
        return nothing
    order, new = sorted_runs([w["block"], w["epoch"], w["space"], w["word"]])   # rows in program order inside
    starts = np.flatnonzero(new)
    thread, op = w["thread"][order].astype(np.int64), w["op"][order]
    several = np.maximum.reduceat(thread, starts) != np.minimum.reduceat(thread, starts)
    writes = np.add.reduceat((op != 0).astype(np.int64), starts) > 0
    candidate = several & writes
    if not candidate.any():
        return nothing
    keep = np.repeat(candidate, np.diff(np.r_[starts, n]))
    rows = order[keep]                                     # the candidates' rows, group after group
    group = (np.cumsum(new) - 1)[keep]
    group = np.cumsum(np.r_[True, group[1:] != group[:-1]]) - 1
    m, none = rows.size, rows.size                         # positions 0..m-1; `none` means no such row
    pos = np.arange(m)
    thread, warp = w["thread"][rows].astype(np.int64), w["warp"][rows].astype(np.int64)
    warp_epoch, op = w["warp_epoch"][rows].astype(np.int64), w["op"][rows]
    atomic = op == 2
    groups = int(group[-1]) + 1

    def firsts(sub: np.ndarray, size: int, value: np.ndarray, eligible: np.ndarray):
        """Per subset: its first eligible row, that row's value, and its first eligible row of another value."""
        first = np.full(size, none)
        np.minimum.at(first, sub[eligible], pos[eligible])
        v0 = np.where(first < none, value[np.minimum(first, m - 1)], -1)
        other = eligible & (value != v0[sub])
        second = np.full(size, none)
        np.minimum.at(second, sub[other], pos[other])
        return first, v0, second

    # (a) another warp's access: unordered unless both are atomics
    # (b) another lane of the same warp, with no warp collective between (same warp epoch), unless both atomics
    by_lanes, new_set = sorted_runs([group, warp, warp_epoch])
    lane_set = np.empty(m, np.int64)
    lane_set[by_lanes] = np.cumsum(new_set) - 1
    partner = np.full(m, none)
    for eligible, writer in ((np.ones(m, bool), (op != 0) & ~atomic), (~atomic, atomic)):
        a1, a_warp, a2 = firsts(group, groups, warp, eligible)
        b1, b_thread, b2 = firsts(lane_set, int(lane_set.max()) + 1, thread, eligible)
        a = np.where(a_warp[group] != warp, a1[group], a2[group])
        b = np.where(b_thread[lane_set] != thread, b1[lane_set], b2[lane_set])
        partner = np.where(writer, np.minimum(a, b), partner)
    writer = np.full(groups, none)
    has = partner < none
    np.minimum.at(writer, group[has], pos[has])
    hit = np.flatnonzero(writer < none)
    return hit, rows[writer[hit]], rows[partner[writer[hit]]]


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

"""A trace's warp requests as arrays, and what each costs, for all requests of a trace at once.

memory.requests() hands out one Request object per warp request and memory.banks()/sectors() judge one at a
time, which is what figures and notebooks read. Counting over a whole trace (per_line, the per-line view, the
Nsight Compute comparison) asks the same of hundreds of thousands of requests: here the grouping and the counts
are done for all of them together with NumPy sorts, with the same rules and the same results, request for request
(tests/measure/test_request_table.py pins each against memory.banks and memory.sectors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.core.arch import BANK_BYTES, BANKS, SECTOR_BYTES
from helpers.measure.trace import SPACES, Trace


def array_names(trace: Trace, space: np.ndarray, buffer: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The kernel parameter or __shared__ variable each access falls in."""
    space, buffer, offset = np.asarray(space), np.asarray(buffer), np.asarray(offset)
    names = np.full(space.shape, "extern __shared__", dtype=object)
    for b, name in trace.buffers.items():
        names[(space == 0) & (buffer == b)] = name
    for v in trace.shared_variables:
        names[(space == 1) & (offset >= v.offset) & (offset < v.offset + v.size)] = v.name
    return names


def sorted_runs(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The rows sorted by `columns` (the first most significant; ties keep their row order) and, in that order,
    where a new combination of values starts. Integer columns whose ranges fit in 63 bits together are packed
    into one key and sorted once (several times faster than a sort by each column)."""
    n = columns[0].size
    new = np.zeros(n, bool)
    if n == 0:
        return np.zeros(0, np.int64), new
    packed = _packed(columns)
    if packed is not None:
        order = np.argsort(packed, kind="stable")
        s = packed[order]
        new[0] = True
        new[1:] = s[1:] != s[:-1]
        return order, new
    order = np.lexsort(columns[::-1])
    new[0] = True
    for c in columns:
        s = c[order]
        new[1:] |= s[1:] != s[:-1]
    return order, new


def _packed(columns: list[np.ndarray]) -> np.ndarray | None:
    """One int64 per row that orders the rows as the columns do (the first most significant), or None when the
    columns' ranges need more than 63 bits together."""
    spans = []
    for c in columns:
        if c.dtype.kind not in "iu":
            return None
        low, high = int(c.min()), int(c.max())
        if low < 0 or high >= 1 << 62:
            return None
        spans.append((low, (high - low).bit_length()))
    if sum(bits for _, bits in spans) > 63:
        return None
    key = np.zeros(columns[0].size, np.int64)
    for c, (low, bits) in zip(columns, spans):
        key <<= bits
        key |= c.astype(np.int64) - low
    return key


def _within_run(new: np.ndarray) -> np.ndarray:
    """Position of each sorted row within its run (0 for the run's first)."""
    idx = np.arange(new.size)
    return idx - np.maximum.accumulate(np.where(new, idx, 0))


@dataclass(frozen=True)
class RequestTable:
    """Every warp request of a trace, in memory.requests()'s order: per request its block, warp, epoch, line,
    space (index into SPACES), op (index into OPS), bytes per lane (the widest lane's) and array; and the rows of
    all requests one after the other, each request's lanes ascending: request i is rows starts[i]:starts[i + 1]."""
    block: np.ndarray
    warp: np.ndarray
    epoch: np.ndarray
    line: np.ndarray
    space: np.ndarray
    op: np.ndarray
    size: np.ndarray
    array: np.ndarray          # object: names
    starts: np.ndarray         # size len + 1
    lanes: np.ndarray          # int64, per row
    offsets: np.ndarray        # int64, per row

    def __len__(self) -> int:
        return self.block.size

    @property
    def request_of_row(self) -> np.ndarray:
        return np.repeat(np.arange(len(self)), np.diff(self.starts))


def request_table(trace: Trace, space: str | None = None, block: int | None = None,
                  warp: int | None = None) -> RequestTable:
    """The trace's accesses grouped into warp requests (see memory.requests for the rules); only those of one
    space, block or warp when given (a request is one warp's, so leaving the others out changes none)."""
    r = trace.records
    keep = r["repeat"] == 0
    for name, value in (("space", None if space is None else SPACES.index(space)), ("block", block), ("warp", warp)):
        if value is not None:
            keep &= r[name] == value
    # the kept rows' fields, each one contiguous (copying the whole structured array costs more than the rest)
    kept = None if keep.all() else np.flatnonzero(keep)
    n = r.size if kept is None else kept.size
    if n == 0:
        empty = np.zeros(0, np.int64)
        return RequestTable(empty, empty, empty, empty, empty, empty, empty, np.zeros(0, object),
                            np.zeros(1, np.int64), empty, empty)

    def field(name: str, rows=None) -> np.ndarray:
        index = kept if rows is None else (rows if kept is None else kept[rows])
        return np.ascontiguousarray(r[name]) if index is None else r[name][index]

    col = {k: field(k) for k in ("block", "thread", "warp", "lane", "epoch", "warp_epoch", "seq", "pc", "space", "op")}
    # The n-th time a thread executes an instruction between two barriers: the lanes of a warp running the same
    # loop line up by it. An asynchronous copy is one instruction (one pc) that reads global memory and writes
    # shared memory: its two sides are two requests, one per space.
    key = [col["pc"], col["space"], col["op"]]
    order, new = sorted_runs([col["block"], col["thread"], col["epoch"], col["warp_epoch"], *key])
    occurrence = np.empty(n, np.int64)
    occurrence[order] = _within_run(new)
    order, new = sorted_runs([col["block"], col["warp"], col["epoch"], col["warp_epoch"], *key, occurrence])
    group = np.empty(n, np.int64)
    group[order] = np.cumsum(new) - 1
    # groups numbered in order of first appearance (the rows' order): ties of program order keep it
    appearance = np.argsort(order[new], kind="stable")
    rank = np.empty_like(appearance)
    rank[appearance] = np.arange(appearance.size)
    # each group's rows by lane; its first row (the lowest lane) gives the request's block, warp, line...
    by_lane = np.argsort(group * 256 + col["lane"], kind="stable")
    first = np.flatnonzero(np.r_[True, group[by_lane][1:] != group[by_lane][:-1]])
    lengths = np.diff(np.r_[first, n])
    head = by_lane[first]                         # group g's lowest-lane row, g in sorted-key order
    # program order within a warp: by the lowest lane's position in its own instruction stream
    req = np.lexsort((rank, col["seq"][head], col["warp"][head], col["block"][head]))
    head, lengths, first = head[req], lengths[req], first[req]
    starts = np.r_[0, np.cumsum(lengths)]
    rows = by_lane[np.repeat(first - starts[:-1], lengths) + np.arange(n)]
    size = np.maximum.reduceat(field("size", rows).astype(np.int64), starts[:-1])
    at = {k: field(k, head) for k in ("block", "warp", "epoch", "line", "space", "op", "buffer", "offset")}
    return RequestTable(*(at[k].astype(np.int64) for k in ("block", "warp", "epoch", "line", "space", "op")), size,
                        array_names(trace, at["space"], at["buffer"], at["offset"]), starts,
                        col["lane"][rows].astype(int), field("offset", rows).astype(np.int64))


def phase_lanes(size):
    """Lanes served together: a warp for 4-byte accesses, a half-warp for 8-byte, a quarter-warp for wider."""
    return np.where(np.asarray(size) <= 4, 32, np.where(np.asarray(size) == 8, 16, 8))


@dataclass(frozen=True)
class BankCounts:
    """Per request (shared requests only: global ones hold 0): memory.banks()'s ways, wavefronts and ideal."""
    ways: np.ndarray
    wavefronts: np.ndarray
    ideal: np.ndarray


def bank_counts(t: RequestTable) -> BankCounts:
    """memory.banks() for every request of the table at once: per phase (the lanes served together), the distinct
    4-byte words the lanes touch; the phase takes as many wavefronts as its busiest bank has distinct words."""
    zeros = np.zeros(len(t), np.int64)
    req = t.request_of_row
    shared = t.space[req] != SPACES.index("global")
    req, lanes, offsets = req[shared], t.lanes[shared], t.offsets[shared]
    if req.size == 0:
        return BankCounts(zeros.copy(), zeros.copy(), zeros.copy())
    size = t.size[req]
    per_lane = np.maximum(1, size // BANK_BYTES)          # words each lane touches
    rep = np.repeat(np.arange(req.size), per_lane)
    within = np.arange(rep.size) - np.repeat(np.cumsum(per_lane) - per_lane, per_lane)
    words = (offsets // BANK_BYTES)[rep] + within
    phase = (req * 32 + lanes // phase_lanes(size))[rep]   # request and phase in one number
    order, new = sorted_runs([phase, words])
    phase, words = phase[order][new], words[order][new]    # each distinct word of each phase once
    bank_key, per_bank = np.unique(phase * BANKS + words % BANKS, return_counts=True)
    phase_of = bank_key // BANKS
    starts = np.flatnonzero(np.r_[True, phase_of[1:] != phase_of[:-1]])
    worst = np.maximum.reduceat(per_bank, starts)          # per phase present
    req_of = phase_of[starts] // 32
    rstarts = np.flatnonzero(np.r_[True, req_of[1:] != req_of[:-1]])
    which = req_of[rstarts]
    out = BankCounts(zeros.copy(), zeros.copy(), zeros.copy())
    out.ways[which] = np.maximum.reduceat(worst, rstarts)
    out.wavefronts[which] = np.add.reduceat(worst, rstarts)
    out.ideal[which] = np.diff(np.r_[rstarts, worst.size])
    return out


def sector_counts(t: RequestTable) -> tuple[np.ndarray, np.ndarray]:
    """memory.sectors() for every request of the table at once (global requests; shared ones hold 0): the 32-byte
    sectors its lanes' bytes touch, and the fewest sectors as many distinct bytes fit in. Each lane covers the
    same number of bytes, so with the lanes sorted by offset a lane adds what lies past the previous lane's end."""
    touched, ideal = np.zeros(len(t), np.int64), np.zeros(len(t), np.int64)
    req = t.request_of_row
    sel = t.space[req] == SPACES.index("global")
    req, offsets = req[sel], t.offsets[sel]
    if req.size == 0:
        return touched, ideal
    order = np.lexsort((offsets, req))
    req, start = req[order], offsets[order]
    size = t.size[req]
    first = np.r_[True, req[1:] != req[:-1]]
    # bytes: [start, start + size), all of one length: a lane adds min(size, the gap to the next lane's start)
    nxt = np.r_[start[1:], 0]
    last = np.r_[first[1:], True]
    new_bytes = np.where(last, size, np.minimum(size, nxt - start))
    # sectors: [start // 32, (start + size - 1) // 32], both ends ascending: a lane adds those past the last end
    lo, hi = start // SECTOR_BYTES, (start + size - 1) // SECTOR_BYTES
    prev_hi = np.where(first, np.iinfo(np.int64).min // 2, np.r_[0, hi[:-1]])
    new_sectors = np.maximum(0, hi - np.maximum(lo, prev_hi + 1) + 1)
    which = req[first]
    bounds = np.flatnonzero(first)
    touched[which] = np.add.reduceat(new_sectors, bounds)
    ideal[which] = -(-np.add.reduceat(new_bytes, bounds) // SECTOR_BYTES)
    return touched, ideal

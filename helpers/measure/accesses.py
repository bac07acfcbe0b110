"""Memory accesses read from a kernel's trace: per warp request, sectors, banks, loads per element, and
(from helpers/measure/per_line.py) per source line. Every count comes from the trace of the kernel file
itself (helpers.measure.trace) and is the same on every machine; views draw them.
"""

from __future__ import annotations
import functools
from dataclasses import dataclass
import numpy as np
from helpers.measure import memory
from helpers.core import stages
from helpers.measure import trace as trace_mod
from helpers.core.arch import BANK_BYTES, BANKS, FLOAT_BYTES, SECTOR_BYTES
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant
# the source with per-line totals, reachable here as the notebooks call it: accesses.per_line_view(trace)
from helpers.measure.per_line import PerLineView, per_line_view  # noqa: F401

TRACE_SIZE = 64     # M = N = K of the traced problems: warp 0 of any block shape fits inside C



# ---- traces of the kernel files -----------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _capture(variant: Variant, config: KernelConfig, M: int, N: int, K: int, blocks, text: str):
    # `text` is the kernel file's content: an edited kernel is traced afresh.
    return trace_mod.capture_variant(variant, config, M, N, K, blocks)


def kernel_trace(variant, config: KernelConfig | None = None, M: int = TRACE_SIZE, N: int | None = None,
                 K: int | None = None, blocks=(0,)) -> trace_mod.Trace:
    """A trace of a registered kernel (a Variant or its name) as its file is now: block 0 by
    default (blocks=None: trace.sample_blocks). Cached on the file's text, so do not modify it."""
    v = stages.resolve(variant)
    config = config or v.default
    N = M if N is None else N
    K = M if K is None else K
    return _capture(v, config, M, N, K, None if blocks is None else tuple(blocks), v.path.read_text())


def trace_requests(tr: trace_mod.Trace, warp: int | None = None, block: int | None = None, space: str | None = None):
    """The trace's warp requests, optionally of one warp of one block and one kind of memory
    ('global', or 'shared' for static and dynamic shared memory)."""
    if block is None and warp is not None:
        block = tr.blocks[0]
    return [q for q in memory.requests(tr, block=block, warp=warp)
            if space is None or (q.space == "global") == (space == "global")]


def short_number(x: float) -> str:
    """A count or a mean of counts: whole numbers without a decimal point."""
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


# ---- global requests: sectors -------------------------------------------------------------------
@dataclass(frozen=True)
class WarpAccess:
    """All requests one warp issued from one source line to one array with one operation:
    the first request's lanes and elements (what a figure draws) and means over all of them."""
    line: int
    source: str
    space: str
    op: str
    array: str
    requests: int                      # how many times the warp issued it
    lanes: tuple[int, ...]             # lanes of the first request
    elements: tuple[int, ...]          # element index each of those lanes touched (offset / width)
    mean_lanes: float
    mean_addresses: float              # distinct addresses per request
    mean_sectors: float                # 32-byte sectors per request (global)
    mean_ideal: float                  # the fewest sectors the request's bytes could fit in
    mean_bytes_used: float

    @property
    def label(self) -> str:
        return f"{self.op} {self.array}"

    @property
    def total_sectors(self) -> int:
        return round(self.mean_sectors * self.requests)

    @property
    def first_sectors(self) -> int:
        return len({e * FLOAT_BYTES // SECTOR_BYTES for e in self.elements})


def group_requests(reqs) -> dict[tuple, list]:
    groups: dict[tuple, list] = {}
    for q in reqs:
        groups.setdefault((q.line, q.op, q.array), []).append(q)
    return groups


def warp_accesses(tr: trace_mod.Trace, warp: int = 0, block: int | None = None,
                  space: str = "global") -> list[WarpAccess]:
    """What warp `warp` of `block` (default: the first traced) asked of global (or shared)
    memory, one WarpAccess per (line, operation, array), in program order."""
    out = []
    for (line, op, array), qs in group_requests(trace_requests(tr, warp, block, space)).items():
        first = qs[0]
        stats = []
        for q in qs:
            if q.space == "global":
                got, ideal = memory.sectors(q)
            else:
                got = ideal = 0
            stats.append((q.lanes.size, np.unique(q.offsets).size, got, ideal,
                          np.unique((q.offsets[:, None] + np.arange(q.size)).ravel()).size))
        m = np.mean(np.array(stats, dtype=float), axis=0)
        out.append(WarpAccess(line, tr.line_text(line), first.space, op, array, len(qs),
                              tuple(int(x) for x in first.lanes), tuple(int(x) for x in first.offsets // first.size),
                              *(float(x) for x in m)))
    return out


def access(accesses: list[WarpAccess], op: str, array: str) -> WarpAccess:
    """The first access of `accesses` with this operation and array ('load', 'A')."""
    for a in accesses:
        if a.op == op and a.array == array:
            return a
    raise KeyError(f"no {op} of {array} in this trace (found: {', '.join(a.label for a in accesses) or 'none'}); "
                   f"is the kernel's parameter still called {array}?")


def stage02_trace(variant_name: str, block_x: int = 32, block_y: int = 32, M: int = TRACE_SIZE,
                  N: int | None = None, K: int | None = None) -> trace_mod.Trace:
    """Block 0 of a stage 02 kernel with this block shape (raises the configuration's ValueError)."""
    v = stages.variant(variant_name)
    return kernel_trace(v, v.config(block_x=block_x, block_y=block_y), M, N, K)


@dataclass(frozen=True)
class Stage02Warp:
    """Warp 0's global requests in block 0 of a stage 02 kernel, traced on TRACE_SIZE^3."""
    accesses: tuple
    load_a: WarpAccess
    load_b: WarpAccess
    store_c: WarpAccess
    rows: int            # distinct rows of C the warp stores to

    @property
    def lanes(self) -> int:
        return len(self.store_c.lanes)


def stage02_warp0(variant_name: str, block_x: int, block_y: int) -> Stage02Warp:
    """Traces block 0 of the kernel file with this block shape (M = N = K = TRACE_SIZE, so warp 0
    of any shape lies inside C) and returns warp 0's loads of A and B and its store to C.
    Raises the configuration's ValueError."""
    tr = stage02_trace(variant_name, block_x, block_y)
    acc = warp_accesses(tr)
    c = access(acc, "store", "C")
    return Stage02Warp(tuple(acc), access(acc, "load", "A"), access(acc, "load", "B"), c,
                       len({e // TRACE_SIZE for e in c.elements}))


def block_tile(variant, config: KernelConfig | None = None, span: int = 1024) -> np.ndarray:
    """Which warp of block 0 stores each element of C, traced: an array [row, column] over the
    rows and columns of C block 0 writes, holding the warp number (-1 where no thread of the block
    stores). Traced on M = N = span (no block is wider or taller than 1024 threads) and K = 8."""
    v = stages.resolve(variant)
    tr = kernel_trace(v, config, span, span, 8)
    ids = [b for b, name in tr.buffers.items() if name == "C"]
    r = tr.records
    r = r[(r["space"] == 0) & (r["op"] == 1) & (r["buffer"] == ids[0]) & (r["block"] == tr.blocks[0])]
    rows, cols = np.divmod(r["offset"] // tr.itemsize[ids[0]], span)
    out = np.full((rows.max() - rows.min() + 1, cols.max() - cols.min() + 1), -1, dtype=int)
    out[rows - rows.min(), cols - cols.min()] = r["warp"]
    return out


def sector_table(variants=("02_naive", "02_naive_coalesced"), block_x: int = 32, block_y: int = 32,
                 M: int = TRACE_SIZE, N: int | None = None, K: int | None = None) -> str:
    """Plain text: every global request warp 0 of block 0 issues, per kernel, from a trace of the
    kernel file (means per request; the same on every backend)."""
    N = M if N is None else N
    K = M if K is None else K
    out = [f"Warp 0 of block 0 (block {block_x} x {block_y}), M = {M}, N = {N}, K = {K}: its global requests, "
           f"traced from each kernel file",
           f"{'kernel':<20} {'line':>4}  {'access':<8} {'requests':>8} {'lanes':>5} {'addresses':>9} "
           f"{'sectors':>7} {'ideal':>5} {'bytes moved':>11} {'bytes used':>10}"]
    for name in variants:
        accesses = warp_accesses(stage02_trace(name, block_x, block_y, M, N, K))
        for i, a in enumerate(accesses):
            out.append(f"{name if i == 0 else '':<20} {a.line:>4}  {a.label:<8} {a.requests:>8} {short_number(a.mean_lanes):>5} "
                       f"{short_number(a.mean_addresses):>9} {short_number(a.mean_sectors):>7} {short_number(a.mean_ideal):>5} "
                       f"{short_number(a.mean_sectors * SECTOR_BYTES):>11} {short_number(a.mean_bytes_used):>10}")
        steps = max((a.requests for a in accesses), default=0)
        loop = [a for a in accesses if a.requests == steps]
        out.append(f"{'':<20} per step of the k loop ({' + '.join(a.label for a in loop)}, issued {steps} times): "
                   f"{short_number(sum(a.mean_sectors for a in loop))} sectors; warp 0 in all: "
                   f"{sum(a.total_sectors for a in accesses)} sectors")
    return "\n".join(out)


# ---- shared requests: banks ---------------------------------------------------------------------
def array_origin(tr: trace_mod.Trace, req: memory.Request) -> int:
    """Byte offset of the start of the __shared__ variable a request falls in (0 if unknown)."""
    first = int(req.offsets.min())
    for v in tr.shared_variables:
        if v.offset <= first < v.offset + v.size:
            return int(v.offset)
    return 0


@dataclass(frozen=True)
class BankView:
    """One shared request with its bank report; words and banks counted from the array's start.

    The emulator's shared memory puts guard bytes between variables, and a GPU places them as its
    compiler likes: where an array starts shifts every bank of a request by the same amount, which
    changes no conflict. So words are numbered within the array and bank = word mod 32."""
    request: memory.Request
    report: memory.BankReport
    words: np.ndarray          # per lane: the first word it touches, counted from the array's start
    origin: int                # byte offset of the array in the traced shared memory

    @property
    def banks(self) -> np.ndarray:
        return self.words % BANKS

    @property
    def distinct_words(self) -> int:
        return int(np.unique(self.words).size)

    @property
    def banks_used(self) -> int:
        return int(np.unique(self.banks).size)

    def lane_groups(self, limit: int = 4) -> str:
        """'lanes 0-15 -> word 0 (bank 0); lanes 16-31 -> word 16 (bank 16)'."""
        lanes, words = self.request.lanes, self.words
        if self.distinct_words == lanes.size > 1 and np.all(np.diff(words) == 1) and np.all(np.diff(lanes) == 1):
            return (f"lanes {ranges_text(lanes)} -> words {int(words[0])}-{int(words[-1])}, one each, in "
                    f"{self.banks_used} banks")
        parts = []
        for w in np.unique(self.words)[:limit]:
            lanes = self.request.lanes[self.words == w]
            parts.append(f"lane{'s' if lanes.size > 1 else ''} {ranges_text(lanes)} -> word {int(w)} (bank {int(w) % BANKS})")
        more = self.distinct_words - limit
        return "; ".join(parts) + (f"; ... ({more} more word{'s' if more > 1 else ''})" if more > 0 else "")


def ranges_text(values) -> str:
    """[0, 1, 2, 5, 16, 17] -> '0-2, 5, 16-17'."""
    values = sorted(int(v) for v in values)
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


def bank_view(tr: trace_mod.Trace, req: memory.Request) -> BankView:
    origin = array_origin(tr, req)
    return BankView(req, memory.banks(req), (req.offsets - origin) // BANK_BYTES, origin)


def shared_requests(tr: trace_mod.Trace, warp: int = 0, block: int | None = None, op: str | None = "load",
                    first_only: bool = True) -> list[memory.Request]:
    """Warp `warp`'s shared requests (loads by default), in program order; with first_only, the
    first of each (line, operation, array): one step of a loop."""
    reqs = [q for q in trace_requests(tr, warp, block, "shared") if op is None or q.op == op]
    if not first_only:
        return reqs
    return [qs[0] for qs in group_requests(reqs).values()]


def bank_summary(tr: trace_mod.Trace, warp: int = 0, block: int | None = None, detail: bool = True) -> str:
    """Plain text: warp `warp`'s shared requests per (line, operation, array), with the words and
    banks of the first one and the wavefronts of all of them."""
    block = tr.blocks[0] if block is None else block
    groups = group_requests(trace_requests(tr, warp, block, "shared"))
    out = [f"{tr.kernel}, warp {warp} of block {block} (block {tr.block[0]} x {tr.block[1]}): its shared-memory requests",
           f"{'line':>4}  {'access':<9} {'requests':>8} {'lanes':>5} {'words':>5} {'banks':>5} {'max ways':>8} "
           f"{'wavefronts':>10} {'ideal':>5}   (words, banks: first request)"]
    notes = []
    for (line, op, array), qs in groups.items():
        views = [bank_view(tr, q) for q in qs]
        v0 = views[0]
        out.append(f"{line:>4}  {op + ' ' + array:<9} {len(qs):>8} {v0.request.lanes.size:>5} {v0.distinct_words:>5} "
                   f"{v0.banks_used:>5} {max(v.report.ways for v in views):>8} "
                   f"{sum(v.report.wavefronts for v in views):>10} {sum(v.report.ideal for v in views):>5}")
        if detail:
            notes.append(f"  line {line}, {op} {array}: {v0.lane_groups()}")
    if not groups:
        out.append("  (none: this kernel does not use shared memory)")
    if notes:
        out += ["First request of each:"] + notes
    return "\n".join(out)


# ---- reuse: global loads per element ------------------------------------------------------------
def global_load_counts(tr: trace_mod.Trace, array: str, rows: int, cols: int, block: int | None = None) -> np.ndarray:
    """How many times the threads of `block` (default: the first traced) loaded each element of the
    global array `array` (a rows x cols row-major matrix of floats)."""
    block = tr.blocks[0] if block is None else block
    ids = [b for b, name in tr.buffers.items() if name == array]
    if not ids:
        raise KeyError(f"the kernel has no array parameter {array!r} (it has {', '.join(tr.buffers.values())})")
    r = tr.records
    sel = (r["space"] == 0) & (r["op"] == 0) & (r["block"] == block) & (r["buffer"] == ids[0])
    counts = np.bincount(r["offset"][sel] // tr.itemsize[ids[0]], minlength=rows * cols)
    return counts[:rows * cols].reshape(rows, cols)


REUSE_CASES = (("02_naive_coalesced", {"block_x": 16, "block_y": 16}), ("03_smem_tiling", {"tile": 16}))


def reuse_case(name: str, fields: dict):
    v = stages.variant(name)
    return v, v.config(**fields)


def reuse_table(cases=REUSE_CASES, M: int = TRACE_SIZE, N: int | None = None, K: int | None = None) -> str:
    """Plain text: for block 0 of each kernel, global loads of A and B per element it uses, and
    multiply-adds per global load (from traces; the same on every backend)."""
    N = M if N is None else N
    K = M if K is None else K
    out = [f"Block 0 of an M = {M}, N = {N}, K = {K} problem: global loads of A and B, traced from each kernel file",
           f"{'kernel (configuration)':<44} {'threads':>7} {'A loads':>8} {'per element':>11} {'B loads':>8} "
           f"{'per element':>11} {'multiply-adds per load':>22}"]
    for name, fields in cases:
        v, config = reuse_case(name, fields)
        tr = kernel_trace(v, config, M, N, K)
        a, b = global_load_counts(tr, "A", M, K), global_load_counts(tr, "B", K, N)
        fmas = int(np.count_nonzero(_stores(tr, "C", M, N))) * K   # the block's elements of C, K each
        per = lambda x: short_number(x.sum() / max(1, np.count_nonzero(x)))  # noqa: E731
        out.append(f"{name + ' (' + config.label() + ')':<44} {tr.threads_per_block:>7} {int(a.sum()):>8} "
                   f"{per(a):>11} {int(b.sum()):>8} {per(b):>11} {short_number(fmas / max(1, a.sum() + b.sum())):>22}")
    return "\n".join(out)


def _stores(tr: trace_mod.Trace, array: str, rows: int, cols: int) -> np.ndarray:
    ids = [b for b, name in tr.buffers.items() if name == array]
    r = tr.records
    sel = (r["space"] == 0) & (r["op"] == 1) & (r["block"] == tr.blocks[0]) & (r["buffer"] == ids[0])
    return np.bincount(r["offset"][sel] // tr.itemsize[ids[0]], minlength=rows * cols)[:rows * cols].reshape(rows, cols)



"""The course's figures, and the trace-derived views they draw.

Every picture and table here is read from a memory trace of the kernel file itself
(helpers.trace: the CPU emulator records every shared and global access of sample blocks, on
every machine) and counted by helpers.memory (warp requests, sectors, banks). Nothing here
repeats a kernel's index arithmetic: edit kernels/02_naive.cu and the sector table, the mapping
figure and the block-shape widget follow the edit. Traces do not depend on the data or the
backend, so every count is the same on every machine.

Figures are files `figures/NN_<slug>_<what>.svg`, each made by one function registered in
FIGURES; `python -m helpers.figures` regenerates them all (`--check` says which are stale). The
SVGs are deterministic (no date, fixed ids, text kept as text, no raster images), so
regenerating an unchanged figure leaves git with nothing to commit.

Views for the notebooks (text for checked cells, figures for the rest):
  sector_table()          global requests of warp 0 of the stage 02 kernels: sectors each
  warp_accesses(trace)    the same for any trace, as data
  bank_summary(trace)     shared requests of warp 0: words, banks, ways, wavefronts
  per_line_view(trace)    the kernel's source with shared and global totals beside each line
  reuse_table()           global loads per element of A and B: 02_naive_coalesced vs 03_smem_tiling
  plot_bank_grid(request) one shared request as a lane x bank grid
  plot_sectors(trace)     sectors per request per source line, with the ideal beside
"""

from __future__ import annotations

import argparse
import functools
import html
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from . import memory, stages, trace as trace_mod
from .kernel_source import strip_comments, template_base
from .stages import KernelConfig, Variant

ROOT = Path(__file__).resolve().parent.parent
FIGURES_DIR = ROOT / "figures"

WARP_SIZE = 32
BANKS = memory.BANKS
BANK_BYTES = memory.BANK_BYTES
SECTOR_BYTES = memory.SECTOR_BYTES   # the unit in which L1 and L2 move global memory
FLOAT_BYTES = 4
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
    v = stages.variant(variant) if isinstance(variant, str) else variant
    config = config or v.default
    N = M if N is None else N
    K = M if K is None else K
    return _capture(v, config, M, N, K, None if blocks is None else tuple(blocks), v.path.read_text())


def _requests(tr: trace_mod.Trace, warp: int | None = None, block: int | None = None, space: str | None = None):
    """The trace's warp requests, optionally of one warp of one block and one kind of memory
    ('global', or 'shared' for static and dynamic shared memory)."""
    out = memory.requests(tr)
    if block is None and warp is not None:
        block = tr.blocks[0]
    return [q for q in out if (warp is None or q.warp == warp) and (block is None or q.block == block)
            and (space is None or (q.space == "global") == (space == "global"))]


def _num(x: float) -> str:
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


def _group(reqs) -> dict[tuple, list]:
    groups: dict[tuple, list] = {}
    for q in reqs:
        groups.setdefault((q.line, q.op, q.array), []).append(q)
    return groups


def warp_accesses(tr: trace_mod.Trace, warp: int = 0, block: int | None = None,
                  space: str = "global") -> list[WarpAccess]:
    """What warp `warp` of `block` (default: the first traced) asked of global (or shared)
    memory, one WarpAccess per (line, operation, array), in program order."""
    out = []
    for (line, op, array), qs in _group(_requests(tr, warp, block, space)).items():
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
    v = stages.variant(variant) if isinstance(variant, str) else variant
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
            out.append(f"{name if i == 0 else '':<20} {a.line:>4}  {a.label:<8} {a.requests:>8} {_num(a.mean_lanes):>5} "
                       f"{_num(a.mean_addresses):>9} {_num(a.mean_sectors):>7} {_num(a.mean_ideal):>5} "
                       f"{_num(a.mean_sectors * SECTOR_BYTES):>11} {_num(a.mean_bytes_used):>10}")
        steps = max((a.requests for a in accesses), default=0)
        loop = [a for a in accesses if a.requests == steps]
        out.append(f"{'':<20} per step of the k loop ({' + '.join(a.label for a in loop)}, issued {steps} times): "
                   f"{_num(sum(a.mean_sectors for a in loop))} sectors; warp 0 in all: "
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
            return (f"lanes {_ranges(lanes)} -> words {int(words[0])}-{int(words[-1])}, one each, in "
                    f"{self.banks_used} banks")
        parts = []
        for w in np.unique(self.words)[:limit]:
            lanes = self.request.lanes[self.words == w]
            parts.append(f"lane{'s' if lanes.size > 1 else ''} {_ranges(lanes)} -> word {int(w)} (bank {int(w) % BANKS})")
        more = self.distinct_words - limit
        return "; ".join(parts) + (f"; ... ({more} more word{'s' if more > 1 else ''})" if more > 0 else "")


def _ranges(values) -> str:
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
    reqs = [q for q in _requests(tr, warp, block, "shared") if op is None or q.op == op]
    if not first_only:
        return reqs
    return [qs[0] for qs in _group(reqs).values()]


def bank_summary(tr: trace_mod.Trace, warp: int = 0, block: int | None = None, detail: bool = True) -> str:
    """Plain text: warp `warp`'s shared requests per (line, operation, array), with the words and
    banks of the first one and the wavefronts of all of them."""
    block = tr.blocks[0] if block is None else block
    groups = _group(_requests(tr, warp, block, "shared"))
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


# ---- the source with per-line totals ------------------------------------------------------------
def _kernel_lines(tr: trace_mod.Trace) -> range:
    """Line numbers of the traced kernel's definition, template line to closing brace."""
    lines = strip_comments(tr.source.text).splitlines()
    name = template_base(tr.kernel)
    start = next((i for i, t in enumerate(lines) if "__global__" in t
                  and re.search(rf"\b{re.escape(name)}\s*\(", "\n".join(lines[i:i + 3]))), None)
    if start is None:
        return range(1, len(lines) + 1)
    if start > 0 and lines[start - 1].strip().startswith("template"):
        start -= 1
    depth, seen, end = 0, False, len(lines) - 1
    for i in range(start, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        seen = seen or "{" in lines[i]
        if seen and depth <= 0:
            end = i
            break
    return range(start + 1, end + 2)


@dataclass
class PerLineView:
    """The kernel's source, with the shared and global requests of the traced blocks beside each line."""
    title: str
    rows: list[dict]

    COLUMNS = ("line", "shared requests", "wavefronts", "ideal wavefronts", "max ways", "global requests",
               "sectors", "ideal sectors", "accesses", "source")

    def frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows, columns=list(self.COLUMNS))  # the source with its comments

    def row(self, line: int) -> dict:
        return next(r for r in self.rows if r["line"] == line)

    def __str__(self, width: int = 72) -> str:
        """Plain text; the source without comments, cut at `width` characters."""
        head = [self.title,
                f"{'':>4}   {'shared memory':-^33}   {'global memory':-^24}",
                f"{'line':>4}   {'requests':>8} {'wavefronts':>10} {'ideal':>6} {'ways':>5}   {'requests':>8} "
                f"{'sectors':>7} {'ideal':>7}   {'accesses':<16} source"]
        body = []
        for r in self.rows:
            s = "" if not r["shared requests"] else (f"{r['shared requests']:>8} {r['wavefronts']:>10} "
                                                    f"{r['ideal wavefronts']:>6} {r['max ways']:>5}")
            g = "" if not r["global requests"] else (f"{r['global requests']:>8} {r['sectors']:>7} "
                                                    f"{r['ideal sectors']:>7}")
            src = r["code"] if len(r["code"]) <= width else r["code"][:width - 3] + "..."
            body.append(f"{r['line']:>4}   {s:<33}   {g:<24}   {r['accesses']:<16} {src}".rstrip())
        return "\n".join(head + body)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        th = "".join(f"<th>{html.escape(c)}</th>" for c in self.COLUMNS)
        trs = []
        for r in self.rows:
            busy = r["shared requests"] or r["global requests"]
            cells = []
            for c in self.COLUMNS:
                v = r[c]
                text = "" if v in (0, None) and c not in ("line", "source") else html.escape(str(v))
                style = "text-align:left;font-family:monospace;white-space:pre" if c == "source" else "text-align:right"
                if c == "max ways" and isinstance(v, int) and v > 1:
                    style += ";color:#b30000;font-weight:bold"
                cells.append(f'<td style="{style}">{text}</td>')
            trs.append(f'<tr style="{"background:#fff7e6" if busy else ""}">{"".join(cells)}</tr>')
        return (f"<p><b>{html.escape(self.title)}</b></p><table><thead><tr>{th}</tr></thead>"
                f"<tbody>{''.join(trs)}</tbody></table>")


def _display_path(path: Path) -> str:
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def per_line_view(tr: trace_mod.Trace) -> PerLineView:
    """The kernel's source lines, each with the totals of the traced blocks' requests made there:
    shared requests, wavefronts (and the conflict-free minimum), the worst conflict; global
    requests and 32-byte sectors (and the fewest the bytes fit in)."""
    totals: dict[int, dict] = {}
    for q in memory.requests(tr):
        t = totals.setdefault(q.line, {"shared requests": 0, "wavefronts": 0, "ideal wavefronts": 0, "max ways": 0,
                                       "global requests": 0, "sectors": 0, "ideal sectors": 0, "accesses": []})
        if q.space == "global":
            got, ideal = memory.sectors(q)
            t["global requests"] += 1
            t["sectors"] += got
            t["ideal sectors"] += ideal
        else:
            b = memory.banks(q)
            t["shared requests"] += 1
            t["wavefronts"] += b.wavefronts
            t["ideal wavefronts"] += b.ideal
            t["max ways"] = max(t["max ways"], b.ways)
        kind = f"{'ld' if q.op == 'load' else 'st' if q.op == 'store' else 'atom'} {q.array}"
        if kind not in t["accesses"]:
            t["accesses"].append(kind)
    lines = sorted(set(_kernel_lines(tr)) | set(totals))
    text, code = tr.source.text.splitlines(), strip_comments(tr.source.text).splitlines()
    rows = []
    for n in lines:
        t = totals.get(n, {"shared requests": 0, "wavefronts": 0, "ideal wavefronts": 0, "max ways": 0,
                           "global requests": 0, "sectors": 0, "ideal sectors": 0, "accesses": []})
        rows.append({"line": n, **{k: v for k, v in t.items() if k != "accesses"},
                     "accesses": ", ".join(t["accesses"]), "source": text[n - 1].rstrip() if 0 < n <= len(text) else "",
                     "code": code[n - 1].rstrip() if 0 < n <= len(code) else ""})
    blocks = ", ".join(map(str, tr.blocks))
    title = (f"{tr.kernel} in {_display_path(tr.source.path)}: block{'s' if len(tr.blocks) > 1 else ''} {blocks} "
             f"of grid {tr.grid[:2]}, {tr.threads_per_block} threads each; totals per source line")
    return PerLineView(title, rows)


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


def _case(name: str, fields: dict):
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
        v, config = _case(name, fields)
        tr = kernel_trace(v, config, M, N, K)
        a, b = global_load_counts(tr, "A", M, K), global_load_counts(tr, "B", K, N)
        fmas = int(np.count_nonzero(_stores(tr, "C", M, N))) * K   # the block's elements of C, K each
        per = lambda x: _num(x.sum() / max(1, np.count_nonzero(x)))  # noqa: E731
        out.append(f"{name + ' (' + config.label() + ')':<44} {tr.threads_per_block:>7} {int(a.sum()):>8} "
                   f"{per(a):>11} {int(b.sum()):>8} {per(b):>11} {_num(fmas / max(1, a.sum() + b.sum())):>22}")
    return "\n".join(out)


def _stores(tr: trace_mod.Trace, array: str, rows: int, cols: int) -> np.ndarray:
    ids = [b for b, name in tr.buffers.items() if name == array]
    r = tr.records
    sel = (r["space"] == 0) & (r["op"] == 1) & (r["block"] == tr.blocks[0]) & (r["buffer"] == ids[0])
    return np.bincount(r["offset"][sel] // tr.itemsize[ids[0]], minlength=rows * cols)[:rows * cols].reshape(rows, cols)


# ---- plotting style -------------------------------------------------------------------------
SVG_RC = {"svg.hashsalt": "tile-by-tile", "svg.fonttype": "none", "font.size": 10,
          "font.family": "DejaVu Sans", "axes.titlesize": 10.5}
VARIANT_COLORS = {"cublas_sgemm": "#444444", "02_naive": "#d95f02", "02_naive_coalesced": "#1b9e77",
                  "03_smem_tiling": "#7570b3"}
LANE_CMAP = "viridis"
SECTOR_FILL = "#fde0c5"
CONFLICT_COLOR = "#d62728"


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def _draw_matrix(ax, rows: int, cols: int, touched_offsets, lane_of_offset: dict, title: str,
                 xlabel: str, ylabel: str, cmap, broadcast_note: str | None = None):
    """A rows x cols row-major matrix: thin cell grid, sector boundaries every 8 floats,
    touched sectors shaded, the elements the lanes use coloured by lane."""
    from matplotlib.patches import Rectangle
    per_sector = SECTOR_BYTES // FLOAT_BYTES
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    for o in sorted({o // per_sector for o in touched_offsets}):   # shaded sectors
        start = o * per_sector
        r, c = divmod(start, cols)
        ax.add_patch(Rectangle((c, r), min(per_sector, cols - c), 1, facecolor=SECTOR_FILL,
                               edgecolor="#e6550d", linewidth=0.8, zorder=1))
    for o, lane in lane_of_offset.items():
        r, c = divmod(o, cols)
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=cmap(lane / (WARP_SIZE - 1)), edgecolor="none", zorder=2))
    for x in range(cols + 1):
        strong = x % per_sector == 0
        ax.axvline(x, color="#888888" if strong else "#dddddd", linewidth=0.6 if strong else 0.3, zorder=0)
    for y in range(rows + 1):
        ax.axhline(y, color="#dddddd", linewidth=0.3, zorder=0)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ticks = list(range(0, cols + 1, 8))
    ax.set_xticks([t + 0.5 for t in ticks if t < cols], [str(t) for t in ticks if t < cols])
    ax.set_yticks([t + 0.5 for t in range(0, rows, 8)], [str(t) for t in range(0, rows, 8)])
    ax.tick_params(length=0, labelsize=8)
    for s in ax.spines.values():
        s.set_color("#888888")
    if broadcast_note:
        (o, _), = lane_of_offset.items()
        r, c = divmod(o, cols)
        ax.annotate(broadcast_note, xy=(c + 1, r + 0.5), xytext=(c + 7, r + 9), fontsize=9,
                    arrowprops={"arrowstyle": "->", "color": "#333333"}, zorder=3,
                    bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "#999999"})


# ---- live plots (drawn in a notebook from a trace) ---------------------------------------------
def plot_bank_grid(request: memory.Request, ax=None, origin: int | None = None, title: str | None = None):
    """One warp's shared request as a lane x bank grid: a row per lane, a column per bank, each
    lane's word marked in its bank (same colour and number: the same word, served by one
    broadcast), lanes that share a bank with a different word outlined in red. `origin`: the byte
    offset of the array's start (bank_view(trace, request).origin), so words and banks count from
    there; None counts from the start of the traced shared memory. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    report = memory.banks(request)
    relative = origin is not None
    origin = origin or 0
    words_per_lane = max(1, request.size // BANK_BYTES)
    first = (request.offsets - origin) // BANK_BYTES
    words = first[:, None] + np.arange(words_per_lane)[None, :]
    distinct = np.unique(words)
    rank = {int(w): i for i, w in enumerate(distinct)}
    cmap = plt.get_cmap("YlGnBu")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 6.0))
    else:
        fig = ax.figure
    ax.set_xlim(0, BANKS)
    ax.set_ylim(WARP_SIZE + 1.6, 0)
    active = set(int(x) for x in request.lanes)
    for lane in range(WARP_SIZE):
        if lane not in active:
            ax.add_patch(Rectangle((0, lane), BANKS, 1, facecolor="#eeeeee", edgecolor="none", zorder=0))
    conflicted = {int(x) for x in request.lanes[report.conflicted]}
    label = len(request.lanes) * words_per_lane <= 160
    for i, lane in enumerate(request.lanes):
        for w in words[i]:
            bank = int(w) % BANKS
            shade = 0.25 + 0.6 * (rank[int(w)] / max(1, len(distinct) - 1))
            bad = int(lane) in conflicted
            ax.add_patch(Rectangle((bank, int(lane)), 1, 1, facecolor=cmap(shade), zorder=2,
                                   edgecolor=CONFLICT_COLOR if bad else "white", linewidth=1.4 if bad else 0.3))
            if label:
                ax.text(bank + 0.5, int(lane) + 0.55, str(int(w)), ha="center", va="center", fontsize=4.6,
                        color="black" if shade < 0.6 else "white", zorder=3)
    per_bank = np.bincount(distinct % BANKS, minlength=BANKS)
    for bank, n in enumerate(per_bank):
        if n:
            ax.text(bank + 0.5, WARP_SIZE + 0.9, str(int(n)), ha="center", va="center", fontsize=6.5,
                    color=CONFLICT_COLOR if n > 1 else "#333333")
    ax.axhline(WARP_SIZE, color="#888888", linewidth=0.6)
    phase = 32 if request.size <= 4 else 16 if request.size == 8 else 8
    for y in range(phase, WARP_SIZE, phase):
        ax.axhline(y, color="#333333", linewidth=1.0, linestyle="--")
    for x in range(BANKS + 1):
        ax.axvline(x, color="#e5e5e5", linewidth=0.3, zorder=1)
    ax.set_xticks([b + 0.5 for b in range(0, BANKS, 4)], [str(b) for b in range(0, BANKS, 4)])
    ax.set_yticks([y + 0.5 for y in range(0, WARP_SIZE, 4)] + [WARP_SIZE + 0.9],
                  [str(y) for y in range(0, WARP_SIZE, 4)] + ["words"])
    ax.tick_params(length=0, labelsize=7.5)
    ax.set_xlabel(f"bank (word mod 32; words of {request.array} counted from its start)" if relative
                  else "bank (word mod 32; words counted from the start of shared memory)", fontsize=8.5)
    ax.set_ylabel("lane", fontsize=8.5)
    what = "no conflict" if report.ways == 1 else f"{report.ways}-way conflict"
    broadcast = ", broadcast" if distinct.size < len(request.lanes) * words_per_lane else ""
    ax.set_title(title or (f"{request.op} {request.array} (line {request.line}), warp {request.warp}\n"
                           f"{distinct.size} word{'s' if distinct.size > 1 else ''} in "
                           f"{int(np.count_nonzero(per_bank))} bank{'s' if np.count_nonzero(per_bank) > 1 else ''}"
                           f"{broadcast}: {what}, {report.wavefronts} wavefront{'s' if report.wavefronts > 1 else ''}"
                           f" (ideal {report.ideal})"), fontsize=9)
    for s in ax.spines.values():
        s.set_color("#888888")
    return fig


def plot_bank_grids(tr: trace_mod.Trace, warp: int = 0, block: int | None = None, axes=None):
    """plot_bank_grid for the first shared load of each (line, array) of warp `warp`: one step of
    the inner loop. Returns the figure (None if the kernel loads nothing from shared memory)."""
    import matplotlib.pyplot as plt
    reqs = shared_requests(tr, warp, block)
    if not reqs:
        return None
    if axes is None:
        fig, axes = plt.subplots(1, len(reqs), figsize=(5.6 * len(reqs), 6.0), squeeze=False)
        axes = axes[0]
    for ax, q in zip(axes, reqs):
        plot_bank_grid(q, ax, array_origin(tr, q))
    fig = axes[0].figure
    fig.suptitle(f"{tr.kernel}: warp {warp}'s shared loads, first step of the loop", fontsize=10.5)
    return fig


def plot_sectors(tr: trace_mod.Trace, ax=None, warp: int | None = None):
    """Sectors per global request for each (source line, operation, array) of the traced blocks
    (one warp with `warp`), beside the fewest the requests' bytes could fit in. Returns the figure."""
    import matplotlib.pyplot as plt
    groups = _group(_requests(tr, warp, None, "global"))
    labels, got, ideal = [], [], []
    for (line, op, array), qs in groups.items():
        s = np.array([memory.sectors(q) for q in qs], dtype=float)
        labels.append(f"line {line}\n{op} {array}")
        got.append(s[:, 0].mean())
        ideal.append(s[:, 1].mean())
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(labels) + 1.5), 3.8))
    else:
        fig = ax.figure
    x = np.arange(len(labels))
    ax.bar(x - 0.2, got, 0.4, label="this kernel", color="#d95f02")
    ax.bar(x + 0.2, ideal, 0.4, label="ideal: the same bytes, packed", color="#1b9e77")
    top = max(got + ideal + [1])
    for xi, g, i in zip(x, got, ideal):
        ax.text(xi - 0.2, g + top * 0.02, _num(g), ha="center", fontsize=8)
        ax.text(xi + 0.2, i + top * 0.02, _num(i), ha="center", fontsize=8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylim(0, top * 1.3)
    ax.set_ylabel("32-byte sectors per warp request")
    who = f"warp {warp}" if warp is not None else f"all warps of block{'s' if len(tr.blocks) > 1 else ''} " \
                                                   f"{', '.join(map(str, tr.blocks))}"
    ax.set_title(f"{tr.kernel}: sectors per request ({who})", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def _runs(counts: np.ndarray):
    """(row, first column, length, value) of each run of equal values along the rows."""
    for r, row in enumerate(counts):
        c = 0
        while c < row.size:
            e = c
            while e + 1 < row.size and row[e + 1] == row[c]:
                e += 1
            yield r, c, e - c + 1, int(row[c])
            c = e + 1


def _count_color(n: int, vmax: int):
    import matplotlib
    if n == 0:
        return "white"
    if n == 1:
        return "#a1d99b"
    return matplotlib.colormaps["Purples"](0.35 + 0.6 * (n - 1) / max(1, vmax - 1))


def plot_reuse(cases=REUSE_CASES, M: int = 32, N: int | None = None, K: int | None = None):
    """For block 0 of each kernel: how many times its threads load each element of A and of B
    (the block's panels), counted from traces. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    N = M if N is None else N
    K = M if K is None else K
    data = []
    for name, fields in cases:
        v, config = _case(name, fields)
        tr = kernel_trace(v, config, M, N, K)
        data.append((v, config, tr, global_load_counts(tr, "A", M, K), global_load_counts(tr, "B", K, N)))
    vmax = max(int(max(a.max(), b.max())) for *_, a, b in data)
    fig, axes = plt.subplots(len(data), 2, figsize=(10, 3.9 * len(data)), squeeze=False,
                             gridspec_kw={"width_ratios": [2.0, 1], "hspace": 0.6, "wspace": 0.15})
    for (v, config, tr, a, b), (axa, axb) in zip(data, axes):
        for ax, counts, what, xl, yl in ((axa, a, "A", "k", "row of A"), (axb, b, "B", "column of B", "k")):
            used = np.argwhere(counts > 0)
            (r0, c0), (r1, c1) = used.min(axis=0), used.max(axis=0)
            sub = counts[r0:r1 + 1, c0:c1 + 1]
            patches, colors = [], []
            for r, c, n, value in _runs(sub):   # one rectangle per run of equal counts: a small SVG
                patches.append(Rectangle((c0 + c, r0 + r), n, 1))
                colors.append(_count_color(value, vmax))
            ax.add_collection(PatchCollection(patches, facecolors=colors, edgecolors="none"))
            for x in range(c0, c1 + 2):
                ax.axvline(x, color="white", linewidth=0.4)
            for y in range(r0, r1 + 2):
                ax.axhline(y, color="white", linewidth=0.4)
            ax.set_xlim(c0, c1 + 1)
            ax.set_ylim(r1 + 1, r0)
            ax.set_aspect("equal")
            ax.set_xlabel(xl, fontsize=8.5)
            ax.set_ylabel(yl, fontsize=8.5)
            ax.tick_params(labelsize=7.5)
            values = np.unique(sub[sub > 0])
            per = counts.sum() / max(1, np.count_nonzero(counts))
            ax.text((c0 + c1 + 1) / 2, (r0 + r1 + 1) / 2, f"{_num(per)}x" if values.size == 1 else f"{_num(per)}x\n(mean)",
                    ha="center", va="center", fontsize=18, fontweight="bold", color="black",
                    bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
            ax.set_title(f"{what}: {np.count_nonzero(counts)} elements, {int(counts.sum())} loads\n"
                         f"each loaded {_num(per)} time{'s' if per != 1 else ''}", fontsize=9.5)
        axa.annotate(f"{v.name} ({config.label()}), block 0: {tr.threads_per_block} threads",
                     xy=(0, 1.3), xycoords="axes fraction", fontsize=11, fontweight="bold", ha="left")
    fig.text(0.125, 0.04, f"M = {M}, N = {N}, K = {K}; global loads counted from memory traces of the kernel files "
                          f"(helpers.trace).\nOnly the block's panels are drawn: the rows of A and the columns of B "
                          f"it uses. Purple: loaded {vmax} times; green: once.", fontsize=8.5, va="top")
    return fig


# ---- the committed figures ---------------------------------------------------------------------
def draw_02_naive_mapping(path: Path) -> Path:
    """figures/02_naive_mapping.svg: for both stage 02 kernels, traced on a 32 x 32 x 32 problem
    with 32 x 32 blocks: which element of C each lane of warp 0 stores, and which elements and
    32-byte sectors of A and B the warp's first load of each touches (step k = 0)."""
    import matplotlib
    import matplotlib.pyplot as plt
    n = 32
    variants = (("02_naive", "02_naive: threadIdx.x picks the row"),
                ("02_naive_coalesced", "02_naive_coalesced: threadIdx.x picks the column"))
    with matplotlib.rc_context(SVG_RC):
        cmap = matplotlib.colormaps[LANE_CMAP]
        fig, axes = plt.subplots(2, 3, figsize=(12, 8.0), gridspec_kw={"hspace": 0.34, "wspace": 0.38})
        for (v, heading), row_axes in zip(variants, axes):
            accesses = warp_accesses(stage02_trace(v, 32, 32, n, n, n))
            picks = (access(accesses, "load", "A"), access(accesses, "load", "B"), access(accesses, "store", "C"))
            for ax, a, what in zip(row_axes, picks, (("load A[row][k]", "k", "row"), ("load B[k][col]", "col", "k"),
                                                     ("store C[row][col]", "col", "row"))):
                lanes_at: dict[int, int] = {}
                for lane, e in zip(a.lanes, a.elements):
                    lanes_at.setdefault(e, lane)
                sectors = a.first_sectors
                note = "all 32 lanes read\nthis one float:\none broadcast" if len(lanes_at) == 1 else None
                _draw_matrix(ax, n, n, a.elements, lanes_at,
                             f"{what[0]}, line {a.line}\n{sectors} sector{'s' if sectors > 1 else ''}: "
                             f"{sectors * SECTOR_BYTES} B moved, {len(lanes_at) * FLOAT_BYTES} B used",
                             what[1], what[2], cmap, note)
            row_axes[0].annotate(heading, xy=(0, 1.22), xycoords="axes fraction", fontsize=12,
                                 fontweight="bold", ha="left", va="bottom")
        sm = matplotlib.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(0, WARP_SIZE - 1))
        # 32 discrete bands: few enough that matplotlib keeps the colour bar as vector shapes
        bar = fig.colorbar(sm, ax=axes, shrink=0.6, pad=0.035, ticks=[0, 8, 16, 24, 31],
                           boundaries=[i - 0.5 for i in range(WARP_SIZE + 1)])
        bar.set_label("lane of warp 0 (threadIdx.x)")
        fig.text(0.125, 0.03,
                 "Traced from kernels/02_naive.cu and kernels/02_naive_coalesced.cu: 32 x 32 x 32 problem, block 32 x 32, "
                 "warp 0 of block 0, its first request of each.\nColoured cell: the float a lane uses.  Shaded box: a "
                 "32-byte sector the warp touches (8 floats; dark vertical lines mark sector boundaries).",
                 fontsize=9, va="top")
        return _save(fig, path)


def draw_03_bank_grid(path: Path) -> Path:
    """figures/03_smem_tiling_bank_grid.svg: warp 0's loads of As and Bs at the first step of the
    inner loop of 03_smem_tiling, tile 32 and tile 16, traced on a 64 x 64 x 64 problem."""
    import matplotlib
    import matplotlib.pyplot as plt
    v = stages.variant("03_smem_tiling")
    with matplotlib.rc_context(SVG_RC):
        fig, axes = plt.subplots(2, 2, figsize=(11.5, 13.2), gridspec_kw={"hspace": 0.42, "wspace": 0.22})
        for tile, row_axes in zip((32, 16), axes):
            tr = kernel_trace(v, v.config(tile=tile))
            reqs = shared_requests(tr)
            for ax, q in zip(row_axes, reqs):
                plot_bank_grid(q, ax, array_origin(tr, q))
            rows = max(1, WARP_SIZE // tile)
            row_axes[0].annotate(f"tile = {tile}: warp 0 is threadIdx.y = {_ranges(range(rows))} "
                                 f"({rows} row{'s' if rows > 1 else ''} of the tile)",
                                 xy=(0, 1.13), xycoords="axes fraction", fontsize=12, fontweight="bold", ha="left")
        fig.text(0.125, 0.075, "Traced from kernels/03_smem_tiling.cu (64 x 64 x 64 problem, block 0, warp 0, k = 0). "
                               "Row: a lane; column: a bank. The number is the word of the array the lane reads;\n"
                               "lanes reading the same word are served together (a broadcast). Red outline: a lane whose "
                               "bank also holds a different word (a conflict; none here). Bottom row: words per bank.",
                 fontsize=8.5, va="top")
        return _save(fig, path)


def draw_03_reuse(path: Path) -> Path:
    """figures/03_smem_tiling_reuse.svg: global loads per element of A and B by block 0 of
    02_naive_coalesced (16 x 16 block) and 03_smem_tiling (tile 16), traced on 32 x 32 x 32."""
    import matplotlib
    with matplotlib.rc_context(SVG_RC):
        return _save(plot_reuse(), path)


from .ladder_report import draw_11_ladder, draw_11_roofline  # noqa: E402  (drawn from the newest committed ladder)

# name -> function(path) that writes figures/<name>.svg
FIGURES: dict[str, Callable[[Path], Path]] = {
    "02_naive_mapping": draw_02_naive_mapping,
    "03_smem_tiling_bank_grid": draw_03_bank_grid,
    "03_smem_tiling_reuse": draw_03_reuse,
    "11_autotuning_ladder": draw_11_ladder,
    "11_autotuning_roofline": draw_11_roofline,
}


def figure_path(name: str) -> Path:
    return FIGURES_DIR / f"{name}.svg"


def generate(names=None, directory: Path = FIGURES_DIR) -> list[Path]:
    """Writes the named figures (all by default) into `directory`."""
    names = list(names or FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise KeyError(f"no figure {', '.join(unknown)}; figures are {', '.join(FIGURES)}")
    return [FIGURES[n](Path(directory) / f"{n}.svg") for n in names]


def stale(names=None) -> list[str]:
    """Figures whose committed file is missing or differs from a fresh rendering."""
    names = list(names or FIGURES)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = dict(zip(names, generate(names, Path(tmp))))
        return [n for n in names if not figure_path(n).exists()
                or figure_path(n).read_bytes() != fresh[n].read_bytes()]


def plot_throughput(rows, title: str = "", ax=None):
    """GFLOP/s against size for each kernel in `rows` (dicts with variant, M, N, K, tflops),
    one line per kernel, log-2 size axis. Returns the figure."""
    import matplotlib.pyplot as plt
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4))
    else:
        fig = ax.figure
    by_variant: dict[str, list] = {}
    for r in rows:
        by_variant.setdefault(r["variant"], []).append(r)
    for v, rs in by_variant.items():
        rs = sorted(rs, key=lambda r: r["M"] * r["N"] * r["K"])
        sizes = [round((r["M"] * r["N"] * r["K"]) ** (1 / 3)) for r in rs]
        ax.plot(sizes, [r["tflops"] * 1e3 for r in rs], marker="o", label=v,
                color=VARIANT_COLORS.get(v))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("GFLOP/s (2MNK / median time)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers.figures", description="Regenerate the course's figures.")
    p.add_argument("names", nargs="*", help=f"figures to make (default all: {', '.join(FIGURES)})")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a figure is missing or stale")
    args = p.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    if args.check:
        bad = stale(args.names)
        for n in bad:
            print(f"stale or missing: {figure_path(n).relative_to(ROOT)}")
        print("all figures up to date" if not bad else "run `python -m helpers.figures` to regenerate")
        return 1 if bad else 0
    for path in generate(args.names):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

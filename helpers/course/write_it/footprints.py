"""Where each warp of a traced block works, whatever the kernel's shared-memory layout: the elements
of C it stores, and the rows of A and columns of B whose values it reads from shared memory.

A shared word is traced back to the element of A or B a thread copied into it: each thread's stores
to shared memory take, word after word in its program order, the elements of A and B it loaded
from global memory before them (a 16-byte load is 4 elements, a 16-byte store 4 words; an
asynchronous copy is its own load and store). That is how every tile copy of the course is written,
4-byte or 16-byte, transposed or not, through registers or cp.async: at a size where every tile is
inside the matrices, each stored word has its element. A word stored with nothing loaded before it
(a zero, a result) is no element's."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from helpers.measure.accesses import ranges_text
from helpers.measure.trace import OPS, Trace

WORD = 4


@dataclass(frozen=True)
class WarpFootprint:
    """One warp of a block: what it stores of C and reads, from shared memory, of A and B."""
    warp: int
    c_rows: tuple[int, ...]       # rows of C it stores
    c_cols: tuple[int, ...]       # columns of C it stores
    c_elements: int               # distinct elements of C it stores
    a_rows: tuple[int, ...]       # rows of A whose values it reads from shared memory
    b_cols: tuple[int, ...]       # columns of B whose values it reads from shared memory

    @property
    def origin(self) -> tuple[int, int] | None:
        return (self.c_rows[0], self.c_cols[0]) if self.c_rows else None

    def is_tile(self, rows: int, cols: int) -> bool:
        """Its stores of C fill exactly one rows x cols rectangle, and it reads from shared memory the
        rows of A and the columns of B of that rectangle, and no others."""
        if not self.c_rows:
            return False
        r0, c0 = self.origin
        return (self.c_rows == tuple(range(r0, r0 + rows)) and self.c_cols == tuple(range(c0, c0 + cols))
                and self.c_elements == rows * cols and self.a_rows == self.c_rows and self.b_cols == self.c_cols)

    def text(self) -> str:
        if not self.c_rows:
            return f"warp {self.warp}: stores nothing of C"
        return (f"warp {self.warp}: stores C's rows {ranges_text(self.c_rows)} × columns {ranges_text(self.c_cols)} "
                f"({len(self.c_rows)} × {len(self.c_cols)}, {self.c_elements} elements); reads from shared memory "
                f"rows {ranges_text(self.a_rows) or 'none'} of A, columns {ranges_text(self.b_cols) or 'none'} of B")


def _buffer_names(tr: Trace) -> dict[int, str]:
    return {b: n for b, n in tr.buffers.items() if n in ("A", "B", "C")}


def shared_sources(tr: Trace, block: int) -> dict[tuple[int, int], tuple[str, int]]:
    """(space, word of shared memory) -> ("A" or "B", element index) that block's threads copied there."""
    names = _buffer_names(tr)
    load, store = OPS.index("load"), OPS.index("store")
    r = tr.records[(tr.records["block"] == block) & (tr.records["repeat"] == 0)]
    operands = [b for b, n in names.items() if n in ("A", "B")]
    copies = (r["space"] == 0) & (r["op"] == load) & np.isin(r["buffer"], operands)
    r = r[copies | ((r["space"] > 0) & (r["op"] == store))]
    r = r[np.lexsort((r["seq"], r["thread"]))]
    source: dict[tuple[int, int], tuple[str, int]] = {}
    pending: deque = deque()
    thread = None
    for rec in r:
        if rec["thread"] != thread:
            thread, pending = rec["thread"], deque()
        size = int(rec["size"])
        if rec["space"] == 0 and rec["op"] == load and names.get(int(rec["buffer"])) in ("A", "B"):
            name = names[int(rec["buffer"])]
            itemsize = tr.itemsize[int(rec["buffer"])]
            first = int(rec["offset"]) // itemsize
            pending.extend((name, first + i) for i in range(max(1, size // itemsize)))
        elif rec["space"] > 0 and rec["op"] == store:
            word = int(rec["offset"]) // WORD
            for i in range(max(1, size // WORD)):
                key = (int(rec["space"]), word + i)
                if pending:
                    source[key] = pending.popleft()
                else:
                    source.pop(key, None)
    return source


def warp_footprints(tr: Trace, N: int, K: int, block: int = 0) -> list[WarpFootprint]:
    """Per warp of `block` of a trace of an M x N x K problem: C's rows and columns it stores, and
    A's rows and B's columns it reads from shared memory (rows and columns of the matrices: block 0's
    tile starts at row 0 and column 0)."""
    names = _buffer_names(tr)
    sources = shared_sources(tr, block)
    r = tr.records[(tr.records["block"] == block) & (tr.records["repeat"] == 0)]
    c_buffer = next((b for b, n in names.items() if n == "C"), None)
    out = []
    for warp in sorted({int(w) for w in r["warp"]}):
        w = r[r["warp"] == warp]
        stores = w[(w["space"] == 0) & (w["op"] == OPS.index("store")) & (w["buffer"] == c_buffer)]
        elements = {int(o) // WORD + i for o, s in zip(stores["offset"], stores["size"])
                    for i in range(max(1, int(s) // WORD))}
        loads = w[(w["space"] > 0) & (w["op"] == OPS.index("load"))]
        a_rows, b_cols = set(), set()
        for space, offset, size in zip(loads["space"], loads["offset"], loads["size"]):
            for i in range(max(1, int(size) // WORD)):
                found = sources.get((int(space), int(offset) // WORD + i))
                if found and found[0] == "A":
                    a_rows.add(found[1] // K)
                elif found:
                    b_cols.add(found[1] % N)
        out.append(WarpFootprint(warp, tuple(sorted({e // N for e in elements})),
                                 tuple(sorted({e % N for e in elements})), len(elements),
                                 tuple(sorted(a_rows)), tuple(sorted(b_cols))))
    return out

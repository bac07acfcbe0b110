"""The line of a wrong result: in a correct GEMM the thread that stores C[r][c] multiplies values of row r of A
and of column c of B, and nothing else. In the trace of block 0 (at a size that is a multiple of every tile, so
that no edge's zeros blur the picture), each value a thread reads, from shared memory or straight from A or B,
is traced back to its element of A or B (helpers.course.write_it.footprints.shared_sources), and a read of a
row of A (a column of B) among none of the thread's rows (columns) of C is an operand that is not its own:
the line that reads it is the line to fix (`As[threadRow + i][k]` where the rows are threadRow * TM + i).

Reads that belong to a warp, not a thread (wmma's load_matrix_sync: a lane holds pieces of rows it does not
store) and words with no element (zeros, results staged in shared memory) are left out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np

from helpers.course.write_it.footprints import WORD, shared_sources
from helpers.measure.accesses import ranges_text
from helpers.measure.trace import OPS, Trace

WARP_WIDE = ("load_matrix_sync", "wmma", "mma_sync")   # a line with one of these reads for the whole warp


@dataclass(frozen=True)
class WrongOperand:
    line: int
    matrix: str                   # "A" or "B"
    via: str                      # "As" (the shared array it came through) or "A" (read straight from it)
    thread: int
    got: int                      # the row of A (column of B) the thread read there
    own: tuple[int, ...]          # the thread's rows (columns) of C
    wrong: int                    # reads on that line, of all threads, that are not their own
    reads: int                    # reads of that matrix on that line

    def hint(self) -> str:
        what = "row" if self.matrix == "A" else "column"
        return (f"line {self.line} gives thread {self.thread} a value of {self.matrix} from {what} {self.got}"
                f"{' (through ' + self.via + ')' if self.via != self.matrix else ''}, but thread {self.thread} stores "
                f"{what}s {ranges_text(self.own)} of C: a result takes {self.matrix}'s values from its own "
                f"{what} only ({self.wrong} of the {self.reads} reads of {self.matrix} on this line are another "
                f"{what}'s). Compare this line's index into {self.via} with the {what}s the thread stores: a factor "
                f"or an offset left out, or rows and columns swapped.")


def _c_elements(tr: Trace, block: int, N: int) -> dict[int, tuple[set, set]]:
    """thread -> (rows, columns) of C it stores in `block`."""
    c = [b for b, n in tr.buffers.items() if n == "C"]
    r = tr.records
    r = r[(r["block"] == block) & (r["repeat"] == 0) & (r["space"] == 0) & (r["op"] == OPS.index("store"))
          & np.isin(r["buffer"], c)]
    out: dict[int, tuple[set, set]] = {}
    for t, offset, size in zip(r["thread"], r["offset"], r["size"]):
        rows, cols = out.setdefault(int(t), (set(), set()))
        for i in range(max(1, int(size) // WORD)):
            e = int(offset) // WORD + i
            rows.add(e // N)
            cols.add(e % N)
    return out


def wrong_operands(tr: Trace, M: int, N: int, K: int, line_text: Callable[[int], str] = lambda n: "",
                   block: int | None = None) -> WrongOperand | None:
    """The line that reads most operands that are not their thread's own (see the module), or None."""
    block = tr.blocks[0] if block is None else block
    owners = _c_elements(tr, block, N)
    if not owners:
        return None
    names = {b: n for b, n in tr.buffers.items() if n in ("A", "B")}
    r = tr.records[(tr.records["block"] == block) & (tr.records["repeat"] == 0) & (tr.records["op"] == OPS.index("load"))]
    shared_stores = np.count_nonzero((tr.records["space"] > 0) & (tr.records["op"] == OPS.index("store")))
    sources = shared_sources(tr, block) if shared_stores else {}
    vars_ = sorted(tr.shared_variables, key=lambda v: v.offset)
    skip = {n for n in {int(x) for x in r["line"]} if any(w in line_text(n) for w in WARP_WIDE)}
    bad: Counter = Counter()
    total: Counter = Counter()
    example: dict[tuple[int, str], tuple] = {}
    for rec in r:
        thread, line = int(rec["thread"]), int(rec["line"])
        if thread not in owners or line in skip:
            continue
        found = []
        if rec["space"] > 0:
            via = next((v.name for v in vars_ if rec["space"] == 1 and v.offset <= rec["offset"] < v.offset + v.size),
                       "shared memory")
            for i in range(max(1, int(rec["size"]) // WORD)):
                src = sources.get((int(rec["space"]), int(rec["offset"]) // WORD + i))
                if src:
                    found.append((src[0], src[1], via))
        elif not shared_stores and int(rec["buffer"]) in names:     # read straight from A or B (no tiles)
            name = names[int(rec["buffer"])]
            first = int(rec["offset"]) // tr.itemsize[int(rec["buffer"])]
            found = [(name, first + i, name) for i in range(max(1, int(rec["size"]) // WORD))]
        rows, cols = owners[thread]
        for matrix, element, via in found:
            got, own = (element // K, rows) if matrix == "A" else (element % N, cols)
            total[(line, matrix)] += 1
            if got not in own:
                bad[(line, matrix)] += 1
                example.setdefault((line, matrix), (via, thread, got, tuple(sorted(own))))
    if not bad:
        return None
    (line, matrix), wrong = bad.most_common(1)[0]
    via, thread, got, own = example[(line, matrix)]
    return WrongOperand(line, matrix, via, thread, got, own, wrong, total[(line, matrix)])

"""Exercise 07: vectorized access, 64 x 64 block tiles, 4 x 4 results per thread. Its lesson: in block
0 of a problem where every run of 4 floats is whole and aligned, every global access of A, B and C is
one 16-byte access (a float4), 16-byte aligned."""

from __future__ import annotations

import numpy as np

from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure.trace import OPS, Trace

BM = BN = 64
BK = 16
VECTOR = 16        # bytes of a float4
ARRAYS = ("A", "B", "C")


def _accesses(tr: Trace) -> list[dict]:
    """Per operation and array of global memory: lane accesses, those 16 bytes wide, those aligned,
    and the first line of a narrower one."""
    r = tr.records[(tr.records["space"] == 0) & (tr.records["repeat"] == 0)]
    rows = []
    for buffer, name in tr.buffers.items():
        if name not in ARRAYS:
            continue
        for op in ("load", "store"):
            mine = r[(r["buffer"] == buffer) & (r["op"] == OPS.index(op))]
            if mine.size == 0:
                continue
            wide = mine["size"] == VECTOR
            narrow = mine[~wide]
            rows.append({"op": op, "array": name, "accesses": int(mine.size), "wide": int(wide.sum()),
                         "aligned": int((mine["offset"][wide] % VECTOR == 0).sum()),
                         "bytes": int(mine["size"].sum()),
                         "line": int(narrow["line"][np.argmin(narrow["seq"])]) if narrow.size else None})
    return rows


def sixteen_byte_accesses(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Every global load of A and B, and every load and store of C, of block 0 is 16 bytes wide and aligned."""
    rows = _accesses(tr)
    if not any(r["array"] in ("A", "B") and r["op"] == "load" for r in rows):
        return Lesson(False, (), "the trace of block 0 holds no global load of A or B", None,
                      "the kernel must read A and B and write C.")
    total, wide = sum(r["accesses"] for r in rows), sum(r["wide"] for r in rows)
    share = wide / total
    measured = [f"{r['op']} of {r['array']}: {r['wide']} of {r['accesses']} accesses 16 bytes wide "
                f"({100 * r['wide'] / r['accesses']:.0f} %), {r['bytes']} bytes"
                + (f"; {r['aligned']} of them 16-byte aligned" if r["wide"] else "") for r in rows]
    measured.append(f"in all: {wide} of {total} global accesses of block 0 are 16 bytes wide ({100 * share:.0f} %); "
                    f"the same bytes 4 at a time would take {sum(r['bytes'] for r in rows) // 4}")
    numbers = {"16-byte share": share, **{f"{r['op']} {r['array']} 16-byte share": r["wide"] / r["accesses"]
                                          for r in rows}}
    misaligned = [r for r in rows if r["aligned"] < r["wide"]]
    if misaligned:
        r = misaligned[0]
        return Lesson(False, tuple(measured), f"{r['wide'] - r['aligned']} 16-byte {r['op']}s of {r['array']} are "
                                              f"not 16-byte aligned", None,
                      "a float4 must start at a multiple of 16 bytes: runs of 4 floats starting at a column that is "
                      "a multiple of 4, in rows whose length is a multiple of 4.", numbers)
    narrow = [r for r in rows if r["wide"] < r["accesses"]]
    if not narrow:
        return Lesson(True, tuple(measured), numbers=numbers)
    worst = min(narrow, key=lambda r: r["wide"] / r["accesses"])
    return Lesson(False, tuple(measured),
                  f"only {100 * share:.0f} % of block 0's global accesses are 16 bytes wide, and "
                  f"{100 * worst['wide'] / worst['accesses']:.0f} % of its {worst['op']}s of {worst['array']}, "
                  f"although at {M} × {N} × {K} every run of 4 floats is whole and aligned", worst["line"],
                  f"move 4 floats with one instruction: *reinterpret_cast<const float4*>(p) (or float4* for a "
                  f"store) where the run is aligned and inside the matrix; keep 4-byte accesses only for the rest "
                  f"(the {worst['op']} of {worst['array']} here).", numbers)


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "A float4 moves 16 bytes with one instruction where four floats take four. Use it for every global "
    "access whose 4 floats lie inside the matrix and start at a 16-byte boundary, and keep the 4-byte path "
    "for the others (the edges, rows whose length is not a multiple of 4).",
    "Each thread copies one run of 4 floats of A and one of B per tile: load each with one 16-byte load "
    "where the run is whole and aligned (load4 decides), and store it into shared memory with one 16-byte "
    "store. At the end it updates each run of 4 elements of C with one 16-byte load (only where beta is "
    "not zero) and one 16-byte store.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="06", headline="16-byte share",
    id="07", stage="07", kernel="sgemm_vectorized", title="vectorized float4 access",
    launch=Launch(block=(BM * BN // 16,), per_block=(BN, BM)),
    rules=(f"{BM} × {BN} block tiles, tiles of A and B {BK} deep in shared memory; each of the 256 threads computes "
           f"a 4 × 4 tile of C",
           "every global access moves a float4 (16 bytes) where its run of 4 floats lies inside the matrix and is "
           "16-byte aligned (A's where K % 4 == 0, B's and C's where N % 4 == 0; cudaMalloc and CuPy align the "
           "arrays), 4-byte accesses elsewhere"),
    lesson=sixteen_byte_accesses,
    lesson_text="16-byte accesses: every global load of A and B and every load and store of C is one aligned "
                "16-byte access (block 0 of 64 × 64 × 64, traced)",
    course_kernel="07_vectorized", course_config={"BM": BM, "BN": BN, "BK": BK, "TM": 4, "TN": 4},
)

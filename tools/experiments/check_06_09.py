"""Correctness of the kernels of stages 06 to 09 on the CPU emulator (no GPU needed).

For every entry (kernel file, name expression, grid, block) and every shape: fresh random A and
B, C poisoned with -3e38 where beta = 0 and random where beta != 0, compared elementwise with a
float64 reference within 8 sqrt(K) 2^-24 (|alpha| |A| |B| + |beta| |C0|). Then, per entry, a
trace of two edge-heavy shapes: no shared-memory races, no reads of unwritten shared memory, and
(for kernels with 16-byte accesses) every 16-byte global access 16-byte aligned, and some taken
where K % 4 == N % 4 == 0. (The emulator copies every array argument to a page-aligned buffer,
so a kernel's test of its pointers' alignment cannot be exercised here.)

    .venv/bin/python tools/experiments/check_06_09.py [SUBSTRING ...]   # only matching entries

Stages 08 and 09: append entries to ENTRIES (file, name expression, grid_fn(M, N), block), and
set vectorized=True on those that use float4 global accesses."""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers.run import backend
from helpers.run import gemm
from helpers.measure import memory
from helpers.measure import trace  # noqa: E402
from helpers.run.kernel_loader import load_kernel  # noqa: E402

backend.use("cpu")


@dataclass(frozen=True)
class Entry:
    file: str                                   # relative to the repository root
    name: str                                   # name expression, e.g. "sgemm_x<128, 128, 8>"
    grid_fn: Callable[[int, int], tuple]        # (M, N) -> grid
    block: tuple
    vectorized: bool = False                    # float4 global accesses: check their alignment


def tiles(BM: int, BN: int) -> Callable[[int, int], tuple]:
    """grid (ceil(N / BN), ceil(M / BM)) of the course's kernels."""
    return lambda M, N: (math.ceil(N / BN), math.ceil(M / BM), 1)


def thread_tiling(file: str, kernel: str, BM, BN, BK, TM, TN, *extra, vectorized=False) -> Entry:
    """An entry of a kernel with template parameters (BM, BN, BK, TM, TN[, extra...]) and a 1D block
    of BM*BN/(TM*TN) threads."""
    args = ", ".join(map(str, (BM, BN, BK, TM, TN) + extra))
    return Entry(file, f"{kernel}<{args}>", tiles(BM, BN), (BM * BN // (TM * TN), 1, 1), vectorized)


# The configurations of 05 (its default, the 8 x 8 one and its registered alternatives).
CONFIGS_05 = ((128, 128, 16, 16, 4), (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (16, 16, 4, 2, 2),
              (12, 12, 4, 3, 3), (64, 32, 8, 8, 4))
ENTRIES: list[Entry] = []
for cfg in CONFIGS_05:
    ENTRIES.append(thread_tiling("kernels/06_padded.cu", "sgemm_padded", *cfg))
    ENTRIES.append(thread_tiling("kernels/06_transposed_a.cu", "sgemm_transposed_a", *cfg))
    ENTRIES.append(thread_tiling("kernels/06_swizzled.cu", "sgemm_swizzled", *cfg))
ENTRIES.append(thread_tiling("kernels/06_padded.cu", "sgemm_padded", 128, 128, 8, 8, 8, 4))  # PAD = 4
ENTRIES.append(thread_tiling("kernels/06_padded.cu", "sgemm_padded", 12, 12, 4, 3, 3, 0))    # PAD = 0
for cfg in ((128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 256, 16, 8, 8), (256, 128, 16, 8, 8),
            (128, 64, 16, 8, 4), (64, 64, 16, 4, 4), (64, 32, 8, 8, 4), (16, 16, 8, 4, 4), (16, 32, 4, 4, 8)):
    ENTRIES.append(thread_tiling("kernels/07_vectorized.cu", "sgemm_vectorized", *cfg, vectorized=True))


def warp_tiling(file: str, kernel: str, BM, BN, BK, WM, WN, TM, TN, *extra) -> Entry:
    """Stages 08 and 09: template parameters (BM, BN, BK, WM, WN, TM, TN[, STAGES][, MIN_BLOCKS])."""
    args = ", ".join(map(str, (BM, BN, BK, WM, WN, TM, TN) + extra))
    return Entry(file, f"{kernel}<{args}>", tiles(BM, BN), (BM * BN // (TM * TN), 1, 1), True)


# (BM, BN, BK, WM, WN, TM, TN): 8 x 8 and 8 x 16 results, 256 and 128 threads, one-warp blocks, BK 2 to 16.
for cfg in ((128, 128, 8, 32, 64, 8, 8), (128, 128, 16, 64, 32, 8, 8), (128, 256, 8, 64, 64, 8, 16),
            (256, 128, 8, 64, 64, 16, 8), (128, 128, 8, 64, 64, 8, 16), (64, 64, 8, 32, 32, 4, 8),
            (32, 64, 8, 32, 64, 8, 8)):
    ENTRIES.append(warp_tiling("kernels/08_warp_tiling.cu", "sgemm_warp_tiling", *cfg))
for cfg in ((128, 128, 8, 32, 64, 8, 8, 2), (128, 128, 16, 32, 64, 8, 8, 2), (128, 256, 8, 64, 64, 8, 16, 1),
            (128, 128, 8, 64, 64, 8, 16, 2), (64, 64, 8, 32, 32, 4, 8, 1), (32, 64, 4, 32, 64, 8, 8, 1)):
    ENTRIES.append(warp_tiling("kernels/09_double_buffering.cu", "sgemm_double_buffering", *cfg))
for cfg in ((128, 128, 8, 32, 64, 8, 8, 3, 2), (128, 128, 8, 32, 64, 8, 8, 2, 2), (128, 128, 8, 32, 64, 8, 8, 4, 2),
            (128, 128, 16, 32, 64, 8, 8, 2, 2), (128, 256, 8, 64, 64, 8, 16, 3, 1), (256, 128, 8, 64, 64, 16, 8, 3, 1),
            (128, 128, 8, 64, 64, 8, 16, 3, 2), (64, 64, 8, 32, 32, 4, 8, 3, 1), (32, 64, 2, 32, 64, 8, 8, 5, 1)):
    ENTRIES.append(warp_tiling("kernels/09_async_copy.cu", "sgemm_async_copy", *cfg))


@dataclass(frozen=True)
class Case:
    M: int
    N: int
    K: int
    alpha: float = 1.0
    beta: float = 0.0


CASES = (Case(1, 1, 1), Case(7, 5, 3), Case(4, 4, 4), Case(33, 65, 17, 1.5), Case(64, 64, 64),
         Case(128, 128, 8), Case(257, 193, 139, -0.5), Case(129, 131, 515), Case(67, 133, 36, 1.25, -0.75))
TRACE_CASE = Case(131, 133, 37, 1.25, -0.75)  # every edge partial; K % 4 != 0, N % 4 != 0
TRACE_CASE_ALIGNED = Case(136, 132, 40)        # partial edge tiles with K % 4 == N % 4 == 0
U = 2.0**-24


def operands(c: Case, rng):
    """Fresh A and B; C random where beta != 0, else poisoned: an element never written keeps -3e38."""
    A = rng.uniform(-1, 1, (c.M, c.K)).astype(np.float32)
    B = rng.uniform(-1, 1, (c.K, c.N)).astype(np.float32)
    C = (rng.uniform(-1, 1, (c.M, c.N)) if c.beta else np.full((c.M, c.N), -3e38)).astype(np.float32)
    return A, B, C


def check_values(e: Entry, c: Case, rng) -> str | None:
    A, B, C = operands(c, rng)
    C0 = C.copy()
    k = load_kernel(ROOT / e.file, e.name)
    k(e.grid_fn(c.M, c.N), e.block, gemm.launch_args(c.M, c.N, c.K, c.alpha, A, B, c.beta, C))
    A64, B64, C64 = (x.astype(np.float64) for x in (A, B, C0))
    ref = c.alpha * (A64 @ B64) + (c.beta * C64 if c.beta else 0.0)
    mag = abs(c.alpha) * (np.abs(A64) @ np.abs(B64)) + (abs(c.beta) * np.abs(C64) if c.beta else 0.0)
    tol = 8 * math.sqrt(c.K) * U * mag + np.finfo(np.float32).tiny
    bad = ~(np.abs(C.astype(np.float64) - ref) <= tol)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} wrong elements, first ({i}, {j}): got {C[i, j]!r}, want {ref[i, j]!r}"
                f" (tolerance {tol[i, j]:.3g}; {int((C == np.float32(-3e38)).sum())} never written)")
    return None


def check_trace(e: Entry, c: Case, rng) -> str | None:
    A, B, C = operands(c, rng)
    t = trace.capture(ROOT / e.file, e.name, e.grid_fn(c.M, c.N), e.block,
                      gemm.launch_args(c.M, c.N, c.K, c.alpha, A, B, c.beta, C))
    problems = []
    if e.vectorized and c.K % 4 == 0 and c.N % 4 == 0 and not (t.records["size"] == 16).any():
        problems.append("no 16-byte access although K % 4 == N % 4 == 0")
    problems += [f"race: {r}" for r in memory.races(t)]
    problems += [f"unwritten shared read at line {u.line}" for u in memory.unwritten_reads(t)]
    g = t.records[(t.records["space"] == 0) & (t.records["size"] == 16)]
    if (g["offset"] % 16).any():
        problems.append(f"{int((g['offset'] % 16 != 0).sum())} misaligned 16-byte global accesses")
    if t.dropped:
        problems.append(f"the trace dropped {t.dropped} accesses")
    return "; ".join(problems) or None


def main(argv: list[str]) -> int:
    entries = [e for e in ENTRIES if not argv or any(s in f"{e.file} {e.name}" for s in argv)]
    rng = np.random.default_rng(2026)
    failures = 0
    for e in entries:
        t0 = time.perf_counter()
        notes = []
        for what, check, cases in (("", check_values, CASES), ("trace ", check_trace, (TRACE_CASE, TRACE_CASE_ALIGNED))):
            for c in cases:
                try:
                    err = check(e, c, rng)
                except Exception as exc:  # a compile error, a crash, an out-of-bounds access: report, go on
                    err = f"{type(exc).__name__}: " + " | ".join(str(exc).strip().splitlines()[:2])
                if err:
                    notes.append(f"{what}{c.M}x{c.N}x{c.K} (alpha {c.alpha}, beta {c.beta}): {err}")
        status = "ok  " if not notes else "FAIL"
        failures += bool(notes)
        print(f"{status} {e.name:45s} {e.file:30s} {len(CASES)} shapes + traces, {time.perf_counter() - t0:5.1f} s",
              flush=True)
        for n in notes:
            print(f"     {n}")
    print(f"{len(entries) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

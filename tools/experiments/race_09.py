"""Stage 09's synchronization, broken on purpose: the emulator's race check must catch each break.

For each mutation of kernels/09_double_buffering.cu or kernels/09_async_copy.cu (one line
changed, written to a temporary copy): run it on the CPU emulator at an edge-heavy shape and
report whether the result is still right, then trace its first, middle and last blocks and
list the shared-memory races (memory.races) and reads of unwritten shared memory. The unbroken
kernels are traced the same way first and must be clean.

    .venv/bin/python tools/experiments/race_09.py"""
from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helpers.run import backend
from helpers.run import gemm
from helpers.measure import memory
from helpers.measure import trace  # noqa: E402
from helpers.run.kernel_loader import load_kernel  # noqa: E402

backend.use("cpu")
DB = ("kernels/09_double_buffering.cu", "sgemm_double_buffering<64, 64, 8, 32, 32, 4, 8, 1>", 64, 128)
AC = ("kernels/09_async_copy.cu", "sgemm_async_copy<64, 64, 8, 32, 32, 4, 8, 3, 1>", 64, 128)
# (kernel, what the break is, the line's text, its replacement)
MUTATIONS = [
    (DB, "no barrier after storing the next tiles",
     "        __syncthreads();  // the next tiles are complete before anyone reads them", ""),
    (DB, "the next tiles stored before the last step's values are read (into the buffer in use)",
     "        store_tiles(1 - s);", "        store_tiles(s);"),
    (AC, "no barrier after waiting for tile t+1",
     "        __syncthreads();  // tile t+1 is everyone's, and everyone has read stage s for the last time", ""),
    (AC, "waiting for one group too few (tile t+1 may still be in flight)",
     "        __pipeline_wait_prior(STAGES - 2);", "        __pipeline_wait_prior(STAGES - 1);"),
]
M, N, K = 131, 132, 76  # K % 4 == N % 4 == 0: the interior blocks run the unchecked loops too


def run(path: Path, expr: str, BM: int, threads: int):
    rng = np.random.default_rng(7)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.full((M, N), -3e38, np.float32)
    grid = (math.ceil(N / BM), math.ceil(M / BM), 1)
    args = gemm.launch_args(M, N, K, 1.0, A, B, 0.0, C)
    load_kernel(path, expr)(grid, (threads, 1, 1), args)
    right = np.allclose(C, A.astype(np.float64) @ B.astype(np.float64), atol=1e-4)
    t = trace.capture(path, expr, grid, (threads, 1, 1), gemm.launch_args(M, N, K, 1.0, A, B, 0.0, C))
    return right, memory.races(t), memory.unwritten_reads(t)


def main() -> int:
    bad = 0
    for file, expr, BM, threads in (DB, AC):
        right, races, unwritten = run(ROOT / file, expr, BM, threads)
        clean = right and not races and not unwritten
        bad += not clean
        print(f"{'ok  ' if clean else 'FAIL'} {expr} as written: result {'right' if right else 'WRONG'}, "
              f"{len(races)} races, {len(unwritten)} unwritten reads")
    with tempfile.TemporaryDirectory() as tmp:
        for (file, expr, BM, threads), what, old, new in MUTATIONS:
            text = (ROOT / file).read_text()
            assert text.count(old + "\n") == 1, f"{file}: the line to change is not there once: {old!r}"
            path = Path(tmp) / Path(file).name
            path.write_text(text.replace(old + "\n", new + "\n"))
            right, races, unwritten = run(path, expr, BM, threads)
            caught = bool(races or unwritten)
            bad += not caught
            print(f"{'ok  ' if caught else 'FAIL'} {Path(file).stem}, {what}: result {'right' if right else 'WRONG'}, "
                  f"{len(races)} races, {len(unwritten)} unwritten reads")
            for r in races[:2]:
                print(f"       race: {r}")
            for u in unwritten[:1]:
                print(f"       unwritten: thread {u.thread} reads {u.array} at line {u.line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

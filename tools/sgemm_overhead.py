"""The host's work per helpers.sgemm call, without a GPU: the CPU backend with the emulator's launch replaced by a
no-op (after one real call has built and checked everything), so that what is timed is the library's own Python:
checks, the plan's lookup, operand preparation, the output's allocation, the launch's arguments. Also counts the
files of the course the timed calls open (an audit hook), which must be none.

    python -m tools.sgemm_overhead [--calls 2000]

Runs on older commits too (without precision=, only FP32 is timed there), to compare before and after.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time

import numpy as np

from helpers.core.paths import ROOT
from helpers.run import backend, cpu_backend
from helpers.run import sgemm as library

SHAPES = ((256, 256, 256), (67, 45, 203), (1000, 1000, 1000))   # aligned, padded (N and K odd), larger


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.sgemm_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000, help="timed calls per shape (default 2000), in 5 rounds")
    args = p.parse_args(argv)
    backend.use("cpu")
    has_precision = "precision" in inspect.signature(library.sgemm).parameters
    opened = []
    sys.addaudithook(lambda event, a: opened.append(a[0]) if event == "open" and isinstance(a[0], str) else None)
    rng = np.random.default_rng(0)
    print(f"host time per sgemm call, CPU backend, emulator launch replaced by a no-op ({args.calls} calls per shape, "
          f"best of 5 rounds' means)")
    for precision in ("fp32", "tf32") if has_precision else ("fp32",):
        for M, N, K in SHAPES:
            A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
            B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
            kw = {"precision": precision} if has_precision else {}
            real = cpu_backend.launch
            if max(M, N, K) <= 300:
                library.sgemm(A, B, **kw)        # a real first call: compiled, checked, run on the emulator
            cpu_backend.launch = lambda *a, **k: 0.0
            try:
                library.sgemm(A, B, **kw)        # (for the larger shape, the first call is timed out here)
                rounds = []
                opened.clear()
                for _ in range(5):
                    start = time.perf_counter()
                    for _ in range(args.calls // 5):
                        library.sgemm(A, B, **kw)
                    rounds.append((time.perf_counter() - start) / (args.calls // 5) * 1e6)
                course = [f for f in opened if f.startswith(str(ROOT))]
            finally:
                cpu_backend.launch = real
            print(f"  {precision} {M}x{N}x{K}: {min(rounds):8.1f} us per call (median of rounds "
                  f"{statistics.median(rounds):.1f}); files of the course opened by the timed calls: {len(course)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

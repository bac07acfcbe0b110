"""The CPU emulator's speed on the bars of its issue, written to results/emulator_speed.json.

    python -m tools.emulator_speed [--repeat 15] [--numba-python PYTHON]

Times each launch end to end (process start, copies, checks: what a notebook waits for) and the
grid alone (the runtime's own clock), as medians; one worker process (one core) unless stated.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from helpers import emulator
from helpers.core import progress
from helpers.core.device import host_description
from helpers.core.kernel_source import KernelSource
from helpers.core.paths import RESULTS_DIR, ROOT
from helpers.measure import verify
from helpers.run.gemm import launch_args

BENCH = ROOT / "tools" / "emulator_bench"   # frozen copies, so that the timings stay comparable
CASES = [  # name, file, name expression, size, block, grid(size), workers
    ("16x16 shared-memory tiled, 128^3, 1 core", "smem_tiled_16.cu", "sgemm_smem_tiled<16>", 128,
     (16, 16, 1), lambda n: (n // 16, n // 16, 1), 1),
    ("16x16 shared-memory tiled, 256^3, 1 core", "smem_tiled_16.cu", "sgemm_smem_tiled<16>", 256,
     (16, 16, 1), lambda n: (n // 16, n // 16, 1), 1),
    ("2D tiled 64x64x8, 8x8 per thread, 256^3, 1 core", "tiled_2d.cu", "sgemm_2d_tiled<64, 64, 8, 8, 8>", 256,
     (64, 1, 1), lambda n: (n // 64, n // 64, 1), 1),
    ("2D tiled 64x64x8, 8x8 per thread, 256^3, all cores", "tiled_2d.cu", "sgemm_2d_tiled<64, 64, 8, 8, 8>", 256,
     (64, 1, 1), lambda n: (n // 64, n // 64, 1), None),
]


def measure(file, expr, n, block, grid, workers, repeat):
    program = emulator.build(KernelSource.read(BENCH / file), (expr,))
    rng = np.random.default_rng()
    s = verify.Shape("bench", n, n, n)
    A, B, C0 = verify.random_operands(s, rng)
    walls, grids = [], []
    for _ in range(repeat):
        C = C0.copy()
        t = time.perf_counter()
        g = emulator.launch(program, expr, grid(n), block, launch_args(n, n, n, s.alpha, A, B, s.beta, C),
                            workers=workers)
        walls.append(time.perf_counter() - t)
        grids.append(g)
    ref, tol = verify.reference(A, B, C0, s.alpha, s.beta)
    assert verify.compare(C, C0, ref, tol, s).ok, f"{expr} gave a wrong result"
    return float(np.median(walls)), float(np.median(grids))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--out", default=str(RESULTS_DIR / "emulator_speed.json"))
    p.add_argument("--numba-python", help="a Python with numba installed: also time Numba's CUDA simulator "
                                          "on the same 128^3 tiled SGEMM, in the same session")
    args = p.parse_args()
    rows = []
    for name, file, expr, n, block, grid, workers in progress.bar(CASES, desc="emulator cases", unit="case"):
        wall, grid_s = measure(file, expr, n, block, grid, workers, args.repeat)
        rows.append({"case": name, "kernel": f"tools/emulator_bench/{file}:{expr}", "size": n,
                     "workers": workers or emulator.default_workers(), "median_launch_ms": round(wall * 1e3, 2),
                     "median_grid_ms": round(grid_s * 1e3, 2), "verified": True})
        progress.write(f"{name:<52} launch {wall * 1e3:8.1f} ms   grid alone {grid_s * 1e3:8.1f} ms")
    baseline = None
    if args.numba_python:
        r = subprocess.run([args.numba_python, str(ROOT / "tools" / "numba_simulator_baseline.py"), "128"],
                           env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}, capture_output=True, text=True,
                           check=True)
        seconds = float(r.stdout.rsplit(":", 1)[1].split()[0])
        baseline = {"case": "numba CUDA simulator, 16x16 tiled SGEMM 128^3 (tools/numba_simulator_baseline.py)",
                    "seconds": seconds,
                    "emulator_speedup_launch": round(seconds / (rows[0]["median_launch_ms"] / 1e3)),
                    "emulator_speedup_grid": round(seconds / (rows[0]["median_grid_ms"] / 1e3))}
        print(f"numba CUDA simulator, same work: {seconds:.1f} s -> emulator {baseline['emulator_speedup_launch']}x "
              f"faster per launch")
    out = {"rows": rows, "repeats": args.repeat, "numba_simulator_baseline": baseline,
           "provenance": {"machine": host_description(), "compiler": emulator.find_compiler().version,
                          "python": platform.python_version(), "numpy": np.__version__,
                          "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          "command": f"python -m tools.emulator_speed --repeat {args.repeat}"
                                     + (" --numba-python PYTHON" if args.numba_python else "")}}
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

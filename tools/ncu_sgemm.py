"""Nsight Compute on the calls of helpers.sgemm that a sweep measured below 90 % of cuBLAS, and on cuBLAS beside them:
what limits each (the SpeedOfLight, occupancy, launch, warp-state, memory and compute sections of every kernel the
call launches: padding copies, the product, a split's reduction or stream-K's fix-up).

    python3 -m tools.ncu_sgemm misses OUT/sweep.json OUT [--most 4]   # on a GPU: ncu on each miss -> OUT/ncu_misses.csv
    python3 -m tools.ncu_sgemm call M N K fp32|tf32 0|1               # what ncu runs: one profiled call of each

`call` builds the plan and compiles first, then profiles only between cudaProfilerStart and Stop (ncu's
--profile-from-start off): one sgemm call as the sweep makes it and the cuBLAS call it is compared with.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis")


def call(M: int, N: int, K: int, precision: str, beta: int) -> None:
    import cupy as cp
    from helpers.measure import bench, library_sweep
    from helpers.run import backend
    from helpers.run.sgemm import sgemm
    backend.use("gpu")
    rng = cp.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
    C = rng.uniform(-1, 1, (M, N), dtype=cp.float32)
    out = cp.empty((M, N), cp.float32)

    def mine():
        return sgemm(A, B, C, beta=1.0, out=C, precision=precision) if beta else sgemm(A, B, precision=precision)

    def theirs():
        if beta:
            library_sweep.cublas_gemm(A, B, C, 1.0, 1.0, precision == "tf32")
        elif precision == "tf32":
            with bench.cublas_tf32():
                cp.matmul(A, B, out=out)
        else:
            cp.matmul(A, B, out=out)
    for _ in range(3):   # compiled, planned, warm
        mine()
        theirs()
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
    mine()
    theirs()
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.stop()


def misses(sweep_path: Path, out: Path, most: int, per_call: int = 38) -> int:
    from helpers.measure import library_sweep
    data = json.loads(Path(sweep_path).read_text())
    pct = {(r["M"], r["N"], r["K"], p, b): v for r in data["rows"] for p, b, v in
           (("fp32", 0, r["pct_cublas"]), ("fp32", 1, r["fp32_beta1"]["pct_cublas"]),
            ("tf32", 0, r["tf32"]["pct_cublas"]), ("tf32", 1, r["tf32"]["beta1"]["pct_cublas"]))}
    found = sorted(library_sweep.misses(data), key=lambda m: pct[m])[:most]
    out.mkdir(parents=True, exist_ok=True)
    csv, log = out / "ncu_misses.csv", out / "ncu_misses.log"
    if not found:
        csv.write_text(f"# no call of {sweep_path} was below 90 % of cuBLAS: nothing to profile\n")
        print(csv.read_text().strip())
        return 0
    ncu = shutil.which("ncu")
    if ncu is None:
        csv.write_text("# ncu (Nsight Compute) is not on the PATH here\n")
        print(csv.read_text().strip())
        return 1
    with open(csv, "w") as f, open(log, "w") as err:
        for M, N, K, precision, beta in found:
            what = f"{M}x{N}x{K} {precision} beta={beta}: {pct[(M, N, K, precision, beta)]:.1f} % of cuBLAS"
            print(f"profiling {what}", flush=True)
            f.write(f"# {what}\n")
            f.flush()
            cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "details",
                   *(a for s in SECTIONS for a in ("--section", s)),
                   sys.executable, "-m", "tools.ncu_sgemm", "call", str(M), str(N), str(K), precision, str(beta)]
            err.write(f"$ {' '.join(cmd[1:])}\n")
            err.flush()
            try:
                subprocess.run(cmd, stdout=f, stderr=err, timeout=per_call)
            except subprocess.TimeoutExpired:
                f.write(f"# ncu on {what} took longer than {per_call} s: stopped\n")
    print(f"wrote {csv} ({len(found)} calls and cuBLAS beside each) and {log}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tools.ncu_sgemm", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("misses")
    m.add_argument("sweep")
    m.add_argument("out")
    m.add_argument("--most", type=int, default=4, help="profile at most this many of the lowest (default 4)")
    c = sub.add_parser("call")
    c.add_argument("M", type=int)
    c.add_argument("N", type=int)
    c.add_argument("K", type=int)
    c.add_argument("precision", choices=("fp32", "tf32"))
    c.add_argument("beta", type=int, choices=(0, 1))
    args = p.parse_args(argv)
    if args.what == "call":
        call(args.M, args.N, args.K, args.precision, args.beta)
        return 0
    return misses(Path(args.sweep), Path(args.out), args.most)


if __name__ == "__main__":
    sys.exit(main())

"""Does reading C cost 10_wgmma a fifth of its speed? Stage 10's kernels at 4096^3 with beta = 0 (C not read, the
BLAS contract since 2026-11-25) and beta = 1 (C read and added), in interleaved rounds, each launch verified first
against alpha A B + beta C0 computed by cuBLAS in FP32 (to TF32's accuracy). 10_wgmma writes C column by column
(it computes C^T); 10_tensor_cores and 10_mma_sync write rows, and are the control.

    on a GPU, from the repository root:  python3 -m tools.experiments.exp_10_beta OUT.json [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics

import cupy as cp

from helpers.core import stages
from helpers.measure import bench
from helpers.run import backend, gemm

N = 4096
KERNELS = ("10_tensor_cores", "10_mma_sync", "10_wgmma")


def timed(variant, beta: float, A, B, C0) -> dict:
    """One kernel at its default tiles: verified on fresh C = C0, then the median of 50 launches."""
    config = variant.default_for(backend.arch())
    C = C0.copy()
    steps = gemm.launches(variant, config, N, N, N, 1.0, A, B, beta, C)
    for step in steps:
        step()
    ref = cp.matmul(A, B) + beta * C0
    rel = float(cp.max(cp.abs(C - ref)) / cp.max(cp.abs(ref)))
    if not rel < bench.AGREEMENT[variant.precision]:
        raise SystemExit(f"{variant.name} with beta = {beta} differs from cuBLAS: {rel:.2e}; not timing it")
    calls = [step.timed() for step in steps]
    t = bench.time_call(lambda: [call() for call in calls])
    return {"kernel": variant.name, "config": config.label(), "beta": beta, "median_ms": t.median_ms,
            "tflops": t.tflops(N, N, N), "max_rel_diff": rel}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    backend.use("gpu")
    A, B, C0 = bench.device_operands(N, N, N, seed=1)
    rows = []
    for r in range(1, args.rounds + 1):
        for name in KERNELS:
            for beta in (0.0, 1.0):
                rows.append({"round": r, **timed(stages.variant(name), beta, A, B, C0)})
                print(rows[-1], flush=True)
    summary = {f"{k} beta={b:g}": statistics.median(x["tflops"] for x in rows if x["kernel"] == k and x["beta"] == b)
               for k in KERNELS for b in (0.0, 1.0)}
    print(summary)
    with open(args.out, "w") as f:
        json.dump({"provenance": bench.provenance(f"python -m tools.experiments.exp_10_beta OUT.json --rounds "
                                                  f"{args.rounds}"), "size": N, "rows": rows,
                   "median_tflops": summary}, f, indent=1)


if __name__ == "__main__":
    main()

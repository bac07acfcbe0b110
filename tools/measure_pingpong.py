"""Stage 12's ping-pong step (PINGPONG = 1) beside the stage's cooperative kernel and cuBLAS TF32, beta = 0 and 1,
with the GPU's clocks beside every time.

In the stage's kernel both consumer warpgroups multiply one BM x 128 tile and then both write it, so the tensor cores
idle through every epilogue (issue 35, item 8). With PINGPONG = 1 each consumer takes a BM x 64 tile of its own in
turn, so one writes C while the other multiplies; the price is A's tile copied twice as often per product. This
times, in interleaved rounds, at each size (default 4096³ and 8192 x 8192 x 4096):
- cuBLAS TF32 (cublasSgemm in TF32 math mode, alpha = 1 and the row's beta),
- 12_warp_specialized at its default (cooperative, STAGES = 4),
- 12_warp_specialized with PINGPONG = 1 at STAGES = 5 (WarpSpecializedConfig.PINGPONG_STAGES, the most that fit) and
  at STAGES = 4 (the cooperative kernel's ring depth),
- with --per-tile, the same three with PERSISTENT = 0 (a block per tile, or per two tiles with ping-pong),
each with beta = 0 and 1, every configuration verified first on rows spread over C against float64 (verify's TF32
tolerance, U[-1, 1) and U[0, 1)). The clocks come from tools/measure_hopper_beta.py's sampler (NVML or nvidia-smi):
a kernel held below its clock by power says so.

    on an H100 or H200, from the repository root:  OUT=some/folder python -m tools.measure_pingpong [--rounds 3]
    anywhere (no GPU): python -m tools.measure_pingpong --dry-run   (ptxas for sm_90a: registers, spills)

Writes $OUT/measure_pingpong.json (provenance, every timing with its clocks, the errors) and prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
from pathlib import Path

import numpy as np

from helpers.core import stages
from helpers.core.configs_hopper import WarpSpecializedConfig as WS
from helpers.measure import bench, verify
from helpers.run import backend, gemm
from tools.measure_hopper_beta import Sampler, cublas_call, cublas_tf32_math

VARIANT = "12_warp_specialized"
SIZES = ((4096, 4096, 4096), (8192, 8192, 4096))
SAMPLE_ROWS = 32


def configs(per_tile: bool) -> dict[str, WS]:
    base = {"cooperative (the stage's kernel)": WS(),
            f"ping-pong, STAGES = {WS.PINGPONG_STAGES}": WS(PINGPONG=1, STAGES=WS.PINGPONG_STAGES),
            "ping-pong, STAGES = 4": WS(PINGPONG=1, STAGES=4)}
    if per_tile:
        base.update({f"{k}, PERSISTENT = 0": dataclasses.replace(c, PERSISTENT=0) for k, c in list(base.items())})
    return base


def sample_error(C, A, B, C0, beta: float) -> dict:
    """Over SAMPLE_ROWS rows spread over C, against float64: the worst |C - ref| / tol and RMS(C - ref) / RMS(ref)."""
    rows = np.linspace(0, C.shape[0] - 1, SAMPLE_ROWS).astype(int)
    a, c, c0 = A[rows].get(), C[rows].get(), C0[rows].get()
    ref, tol = verify.reference(a, B.get(), c0, 1.0, beta, "tf32")
    err = c.astype(np.float64) - ref
    return {"worst_error_over_tolerance": float(np.max(np.abs(err) / tol)),
            "rms_error_over_rms": float(np.sqrt(np.mean(err ** 2) / np.mean(ref ** 2)))}


def dry_run(per_tile: bool) -> None:
    from helpers.measure.resources import kernel_resources
    for label, config in configs(per_tile).items():
        r = kernel_resources(VARIANT, config, arch="sm_90a")
        print(f"{label}: {config.label()}: {r.registers} registers, spills {r.spill_store_bytes} / "
              f"{r.spill_load_bytes} bytes, {(r.static_shared_bytes + r.dynamic_shared_bytes) / 1024:.1f} KiB shared")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=300, help="timed launches per timing (long enough for the sampler)")
    p.add_argument("--per-tile", action="store_true", help="also PERSISTENT = 0 (a block per tile or per two tiles)")
    p.add_argument("--sizes", default=",".join("x".join(map(str, s)) for s in SIZES),
                   help="M x N x K sizes, comma-separated (default: %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="no GPU: ptxas for sm_90a on every configuration timed")
    args = p.parse_args()
    if args.dry_run:
        dry_run(args.per_tile)
        return
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    import cupy as cp
    v = stages.variant(VARIANT)
    sampler = Sampler(0)
    entries = {"cuBLAS TF32": None, **configs(args.per_tile)}
    rows, errors = [], []
    for M, N, K in sizes:
        A, B, _ = bench.device_operands(M, N, K, seed=1)
        C0 = cp.random.default_rng(2).uniform(-1, 1, (M, N), dtype=cp.float32)
        prepared, keep = {}, []
        for label, config in entries.items():
            for beta in (0.0, 1.0):
                for positive in (False, True):   # verified on fresh data of both signs first (poisoned C if beta = 0)
                    g = cp.random.default_rng(3)
                    low = 0.0 if positive else -1.0
                    a, b = g.uniform(low, 1, (M, K), dtype=cp.float32), g.uniform(low, 1, (K, N), dtype=cp.float32)
                    c0 = g.uniform(low, 1, (M, N), dtype=cp.float32)
                    c = c0.copy() if beta else cp.full((M, N), verify.POISON, cp.float32)
                    if config is None:
                        with cublas_tf32_math():
                            cublas_call(a, b, c, beta)()
                    else:
                        for step in gemm.launches(v, config, M, N, K, 1.0, a, b, beta, c):
                            step()
                    cp.cuda.Device().synchronize()
                    errors.append({"size": [M, N, K], "what": label, "beta": beta,
                                   "data": "U[0,1)" if positive else "U[-1,1)", **sample_error(c, a, b, c0, beta)})
                    print(errors[-1], flush=True)
                C = C0.copy()
                if config is None:
                    prepared[label, beta] = cublas_call(A, B, C, beta), cublas_tf32_math
                else:
                    steps = gemm.launches(v, config, M, N, K, 1.0, A, B, beta, C)
                    keep.append(steps)   # what their tensor maps read stays alive
                    calls = [s.timed() for s in steps]
                    prepared[label, beta] = (lambda calls=calls: [c() for c in calls]), contextlib.nullcontext
        for r in range(1, args.rounds + 1):
            for label in entries:
                for beta in (0.0, 1.0):
                    call, ctx = prepared[label, beta]
                    with ctx():
                        bench.time_call(call, n_warmup=20, n_repeat=20)
                        with sampler.during():
                            t = bench.time_call(call, n_warmup=0, n_repeat=args.repeat)
                    rows.append({"size": [M, N, K], "round": r, "what": label, "beta": beta,
                                 "config": None if entries[label] is None else entries[label].label(),
                                 **t.row(M, N, K), "clocks": sampler.summary()})
                    print({k: x for k, x in rows[-1].items() if k != "clocks"},
                          rows[-1]["clocks"].get("sm_mhz_median"), flush=True)
    for row in rows:
        ref = next(x for x in rows if x["size"] == row["size"] and x["round"] == row["round"]
                   and x["what"] == "cuBLAS TF32" and x["beta"] == row["beta"])
        row["pct_cublas_tf32"] = 100.0 * ref["median_ms"] / row["median_ms"]
    data = {"provenance": bench.provenance(bench.invocation()), "rows": rows, "errors": errors}
    path = out_dir / "measure_pingpong.json"
    path.write_text(json.dumps(data, indent=1))
    print(f"\n{'size':<16} {'what':<48} {'beta':>4} {'TFLOP/s':>8} {'% cuBLAS TF32 (rounds)':>24} {'SM MHz':>7} "
          f"{'power-limited':>13}")
    for M, N, K in sizes:
        for label in entries:
            for beta in (0.0, 1.0):
                mine = [x for x in rows if x["size"] == [M, N, K] and x["what"] == label and x["beta"] == beta]
                clocks = [x["clocks"] for x in mine if x["clocks"].get("samples")]
                mhz = statistics.median(c["sm_mhz_median"] for c in clocks) if clocks else float("nan")
                pct = " ".join(f"{x['pct_cublas_tf32']:.1f}" for x in mine)
                size, limited = f"{M}x{N}x{K}", f"{sum(c['power_limited'] for c in clocks)} of {len(mine)}"
                print(f"{size:<16} {label:<48} {beta:>4g} {statistics.median(x['tflops'] for x in mine):>8.1f} "
                      f"{pct:>24} {mhz:>7.0f} {limited:>13}")
    worst = max(errors, key=lambda e: e["worst_error_over_tolerance"])
    print(f"worst TF32 error over verify's tolerance: {worst['worst_error_over_tolerance']:.2f} ({worst['what']}, "
          f"{worst['size']}, beta = {worst['beta']:g}, {worst['data']}); must be <= 1")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

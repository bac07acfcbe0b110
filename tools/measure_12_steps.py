"""Stage 12's steps past the stage (issue 35, item 6) on an H100 or H200: each verified, then timed beside the stage's
kernel and cuBLAS TF32 in interleaved rounds, with beta = 0 and 1, the SM clock and power sampled during every
timing.

The steps are template arguments of 12_warp_specialized (WarpSpecializedConfig): EPILOGUE = 1 (C through shared memory
with TMA stores), PINGPONG = 1 (each consumer warpgroup a tile of its own, in turns), CLUSTER = 2 (clusters of two
blocks sharing A's tile by TMA multicast), and their combinations. Each configuration is first verified on the shape
catalogue (verify.check_catalogue: float64 reference, poisoned C, odd shapes, beta 0 and nonzero), then at every
timed size on U[-1, 1) and U[0, 1) data against float64 on a sample of rows (verify.reference's TF32 tolerance). A
configuration that fails either is reported and not timed.

    on an H100 or H200, from the repository root:
        OUT=some/folder python -m tools.measure_12_steps [--sizes 4096 8192] [--rounds 3] \
            [--steps EPILOGUE=1 PINGPONG=1,STAGES=5 CLUSTER=2]
    anywhere (no GPU): python -m tools.measure_12_steps --dry-run   (compiles each step for sm_90a: registers, spills)

Writes $OUT/measure_12_steps.json (provenance, every timing with its clocks, the checks) and prints a table.
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
from helpers.measure import bench, resources, verify
from helpers.run import backend, gemm
from tools.measure_hopper_beta import Sampler, cublas_call, cublas_tf32_math

V12 = stages.variant("12_warp_specialized")
# CONSUMERS=1 is no step: one warpgroup multiplying alone, the speed ping-pong's turns leave the tensor cores
DEFAULT_STEPS = ("EPILOGUE=1", "PINGPONG=1", "PINGPONG=1,STAGES=5", "CONSUMERS=1", "CLUSTER=2")
SAMPLE_ROWS = 32


def parse_step(text: str):
    """'PINGPONG=1,EPILOGUE=1' -> the default configuration with those fields (ValueError names a broken rule)."""
    changes = dict(part.split("=") for part in text.split(",") if part)
    return dataclasses.replace(V12.default, **{k.strip(): int(v) for k, v in changes.items()})


def configurations(steps) -> tuple[list, list]:
    """[(label, config)] with the stage's kernel first, and [(step, why)] for the steps refused."""
    out, refused = [("12_warp_specialized", V12.default)], []
    for s in steps:
        try:
            out.append((s, parse_step(s)))
        except (ValueError, TypeError) as e:
            refused.append((s, str(e)))
    return out, refused


def sample_error(C, A, B, C0, beta: float) -> dict:
    """Over SAMPLE_ROWS rows spread over C, against float64: the worst |C - ref| / tol (verify.reference's TF32
    tolerance) and the RMS of C - ref over the RMS of ref."""
    rows = np.linspace(0, C.shape[0] - 1, SAMPLE_ROWS).astype(int)
    a, c, c0 = A[rows].get(), C[rows].get(), C0[rows].get()
    ref, tol = verify.reference(a, B.get(), c0, 1.0, beta, "tf32")
    err = c.astype(np.float64) - ref
    return {"worst_error_over_tolerance": float(np.max(np.abs(err) / tol)),
            "rms_error_over_rms": float(np.sqrt(np.mean(err ** 2) / np.mean(ref ** 2)))}


def checked_at_size(cfg, n: int) -> list[dict]:
    """The configuration at n^3 on same-sign and zero-mean data, beta 0 (C poisoned) and 1, against float64."""
    import cupy as cp
    out = []
    for low in (-1.0, 0.0):
        g = cp.random.default_rng(3)
        a, b, c0 = (g.uniform(low, 1, (n, n), dtype=cp.float32) for _ in range(3))
        for beta in (0.0, 1.0):
            c = c0.copy() if beta else cp.full((n, n), verify.POISON, cp.float32)
            if cfg is None:
                with cublas_tf32_math():
                    cublas_call(a, b, c, beta)()
            else:
                for step in gemm.launches(V12, cfg, n, n, n, 1.0, a, b, beta, c):
                    step()
            cp.cuda.Device().synchronize()
            out.append({"n": n, "beta": beta, "data": f"U[{low:g},1)", **sample_error(c, a, b, c0, beta)})
    return out


def dry_run(steps) -> None:
    configs, refused = configurations(steps)
    for label, cfg in configs:
        r = resources.kernel_resources(V12, cfg, arch="sm_90a")
        print(f"{label:<36} {r.registers} registers, {r.spill_store_bytes} B spilled, "
              f"{(r.static_shared_bytes + r.dynamic_shared_bytes) / 1024:.1f} KiB shared")
    for s, why in refused:
        print(f"{s:<36} refused: {why}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--steps", nargs="+", default=list(DEFAULT_STEPS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=200, help="timed launches per timing")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()
    if args.dry_run:
        dry_run(args.steps)
        return
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    import cupy as cp
    configs, refused = configurations(args.steps)
    data = {"provenance": bench.provenance("OUT=... python -m tools.measure_12_steps --sizes "
                                           f"{' '.join(map(str, args.sizes))} --rounds {args.rounds} --repeat "
                                           f"{args.repeat} --steps {' '.join(args.steps)}"),
            "refused": [{"step": s, "why": why} for s, why in refused], "checks": [], "rows": []}
    path = out_dir / "measure_12_steps.json"
    save = lambda: path.write_text(json.dumps(data, indent=1))  # noqa: E731
    timed = [("cuBLAS TF32", None)]
    for label, cfg in configs:
        r = resources.kernel_resources(V12, cfg)
        report = verify.check_catalogue(V12, cfg)
        ok = report.ok
        check = {"what": label, "config": cfg.label(), "registers": r.registers,
                 "spill_store_bytes": r.spill_store_bytes, "catalogue_ok": ok,
                 "catalogue": report.verdicts().splitlines()[0], "at_sizes": []}
        if ok:
            check["at_sizes"] = [e for n in args.sizes for e in checked_at_size(cfg, n)]
            ok = all(e["worst_error_over_tolerance"] <= 1.0 for e in check["at_sizes"])
        check["verified"] = ok
        data["checks"].append(check)
        print(label, "verified" if ok else "NOT VERIFIED", check["catalogue"], flush=True)
        save()
        if ok:
            timed.append((label, cfg))
    data["checks"].append({"what": "cuBLAS TF32", "at_sizes": [e for n in args.sizes for e in checked_at_size(None, n)]})
    sampler = Sampler(0)
    for n in args.sizes:
        A, B, _ = bench.device_operands(n, n, n, seed=1)
        C0 = cp.random.default_rng(2).uniform(-1, 1, (n, n), dtype=cp.float32)
        prepared = {}
        for label, cfg in timed:
            for beta in (0.0, 1.0):
                C = C0.copy()
                if cfg is None:
                    prepared[label, beta] = cublas_call(A, B, C, beta), cublas_tf32_math, C
                else:
                    steps = gemm.launches(V12, cfg, n, n, n, 1.0, A, B, beta, C)
                    calls = [s.timed() for s in steps]
                    prepared[label, beta] = (lambda calls=calls: [c() for c in calls]), None, (C, steps)
        for rnd in range(1, args.rounds + 1):
            for label, _ in timed:
                for beta in (0.0, 1.0):
                    call, ctx, _keep = prepared[label, beta]
                    with (ctx() if ctx else contextlib.nullcontext()):
                        bench.time_call(call, n_warmup=20, n_repeat=20)
                        with sampler.during():
                            t = bench.time_call(call, n_warmup=0, n_repeat=args.repeat)
                    data["rows"].append({"n": n, "round": rnd, "what": label, "beta": beta, **t.row(n, n, n),
                                         "clocks": sampler.summary()})
                    print(n, rnd, label, beta, f"{t.tflops(n, n, n):.1f}", flush=True)
        del prepared
        save()
    for row in data["rows"]:
        ref = next(x for x in data["rows"] if (x["n"], x["round"], x["beta"]) == (row["n"], row["round"], row["beta"])
                   and x["what"] == "cuBLAS TF32")
        row["pct_cublas_tf32"] = 100.0 * ref["median_ms"] / row["median_ms"]
    save()
    print(f"\n{'n':>5} {'what':<36} {'beta':>4} {'TFLOP/s':>8} {'% cuBLAS TF32 (median, min-max)':>32} {'SM MHz':>7}")
    for n in args.sizes:
        for label, _ in timed:
            for beta in (0.0, 1.0):
                mine = [x for x in data["rows"] if x["n"] == n and x["what"] == label and x["beta"] == beta]
                pct = [x["pct_cublas_tf32"] for x in mine]
                mhz = [x["clocks"]["sm_mhz_median"] for x in mine if x["clocks"].get("samples")]
                print(f"{n:>5} {label:<36} {beta:>4g} {statistics.median(x['tflops'] for x in mine):>8.1f} "
                      f"{statistics.median(pct):>14.1f} ({min(pct):.1f}-{max(pct):.1f}){'':>8} "
                      f"{statistics.median(mhz) if mhz else float('nan'):>7.0f}")
    for s, why in refused:
        print(f"refused {s}: {why}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

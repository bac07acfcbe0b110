"""Stage 12's kernel on an H100 or H200, through the course's own code (helpers.measure.verify,
helpers.measure.bench), into one JSON file:

    PYTHONUNBUFFERED=1 python3 -m tools.measure_12 OUT.json [--rounds 3] [--quick]

- every registered configuration of 12_warp_specialized (and extra ones) verified on the shape catalogue
  (float64 reference), with its registers and local memory, and timed at 1024^3, 2048^3 and 4096^3;
- at 4096^3, ROUNDS interleaved rounds of cuBLAS TF32, 10_wgmma and the ideas of stage 12 one at a time
  (TMA + warp specialization, + persistent tiles, + TF32 rounding), median of 50 launches each;
- a sweep of shapes (square, odd, K = 512, tall and skinny) of the default beside cuBLAS TF32; where A or B must be
  copied to a padded pitch first (K or N not a multiple of 4), the call is timed with its copies as well, and the
  geometric mean takes that time;
- precision at 4096^3: largest and RMS error against float64 over the product's RMS, for cuBLAS TF32
  and the kernel rounding (ROUND = 1) or truncating (ROUND = 0).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers.core import progress, stages
from helpers.core.configs_hopper import WarpSpecializedConfig as WS
from helpers.measure import bench, hopper, resources, verify
from helpers.run import gemm

V12, WGMMA = stages.variant("12_warp_specialized"), stages.variant("10_wgmma")
STEPS = (("10_wgmma", WGMMA, WGMMA.default),
         ("TMA + warp specialization", V12, WS(ROUND=0, PERSISTENT=0)),
         ("+ persistent tiles", V12, WS(ROUND=0, PERSISTENT=1)),
         ("+ TF32 rounded by the copy engine", V12, WS(ROUND=1, PERSISTENT=1)))
EXTRA = (WS(STAGES=3), WS(128, 2, 4), WS(128, 1, 4), WS(256, 1, 4))
SHAPES = ((512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (4095, 4095, 4095), (4097, 4097, 4097), (3000, 5000, 700), (4096, 4096, 512), (8192, 8192, 512),
          (16384, 1024, 1024), (1024, 16384, 1024), (2048, 2048, 8192), (1000, 1000, 1000))



def steps_round(n: int) -> list[dict]:
    tf32 = bench.time_cublas(n, n, n, n_repeat=50, tf32=True)
    rows = [{"step": "cuBLAS TF32", **tf32.row(n, n, n)}]
    for step, v, cfg in STEPS:
        t, rel = bench.time_variant(v, n, n, n, config=cfg, n_repeat=50)
        rows.append({"step": step, "variant": v.name, "config": cfg.label(), **t.row(n, n, n),
                     "pct_cublas_tf32": 100 * tf32.median_ms / t.median_ms, "max_rel_diff_vs_cublas_fp32": rel})
    return rows


def with_copies(M: int, N: int, K: int, cfg):
    """The time of the call as a user makes it where A or B must first be copied to a padded pitch (K or N not a
    multiple of 4): the copies and the tensor maps made at every call, inside the timing."""
    A, B, C = bench.device_operands(M, N, K)
    return bench.time_call(lambda: [step.timed()() for step in gemm.launches(V12, cfg, M, N, K, 1.0, A, B, 0.0, C)],
                           n_repeat=30)


def sweep_row(M: int, N: int, K: int, cfg) -> dict:
    tf32 = bench.time_cublas(M, N, K, n_repeat=30, tf32=True)
    t, rel = bench.time_variant(V12, M, N, K, config=cfg, n_repeat=30)
    row = {"shape": [M, N, K], "config": cfg.label(), "cublas_tf32": tf32.row(M, N, K), "kernel": t.row(M, N, K),
           "pct_cublas_tf32": 100 * tf32.median_ms / t.median_ms, "max_rel_diff_vs_cublas_fp32": rel}
    if hopper.padded((M, N, K)):  # the kernel's time leaves out the copies; the mean takes the call's
        c = with_copies(M, N, K, cfg)
        row.update({"kernel_with_copies": c.row(M, N, K), "pct_cublas_tf32_with_copies": 100 * tf32.median_ms / c.median_ms})
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the extra configurations' catalogue")
    a = ap.parse_args()
    data = {"provenance": bench.provenance(f"python -m tools.measure_12 OUT.json --rounds {a.rounds}"),
            "configurations": [], "steps_4096": [], "sweep": [], "precision": []}
    save = lambda: Path(a.out).write_text(json.dumps(data, indent=1))  # noqa: E731
    for cfg in (V12.default, *V12.alternatives, *(() if a.quick else EXTRA)):
        r = resources.kernel_resources(V12, cfg)
        report = verify.check_catalogue(V12, cfg)
        data["configurations"].append({"config": cfg.label(), "registers": r.registers, "local_bytes": r.local_bytes,
                                       "verified_shapes": len(report.checks), "verified": report.ok,
                                       **({} if report.ok else {"report": str(report)[:3000]})})
        print(data["configurations"][-1], flush=True)
        save()
    data["configs_timed"] = []
    for cfg in (V12.default, *V12.alternatives, *EXTRA):  # which configuration to register as the default
        for n in (1024, 2048, 4096):
            t, _ = bench.time_variant(V12, n, n, n, config=cfg, n_repeat=30)
            data["configs_timed"].append({"config": cfg.label(), "size": n, **t.row(n, n, n)})
        print(cfg.label(), [round(r["tflops"], 1) for r in data["configs_timed"][-3:]], flush=True)
    save()
    for _ in progress.bar(range(a.rounds), desc="rounds at 4096^3"):
        data["steps_4096"].append(steps_round(4096))
        print([(r["step"], round(r["tflops"], 1), round(r.get("pct_cublas_tf32", 100), 1))
               for r in data["steps_4096"][-1]], flush=True)
        save()
    for M, N, K in progress.bar(SHAPES, desc="sweep"):
        data["sweep"].append(sweep_row(M, N, K, V12.default))
        r = data["sweep"][-1]
        print(r["shape"], round(r["kernel"]["tflops"], 1), round(r["cublas_tf32"]["tflops"], 1),
              round(r["pct_cublas_tf32"], 1), flush=True)
        save()
    data["sweep_geomean_pct"] = hopper.sweep_geomean(data)  # the calls as made: padding copies timed
    data["precision"] = bench.precision_rows(4096, ((V12, WS(ROUND=1)), (V12, WS(ROUND=0)), (WGMMA, WGMMA.default)))
    for r in data["precision"]:
        print(r, flush=True)
    save()


if __name__ == "__main__":
    main()

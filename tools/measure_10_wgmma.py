"""Stage 10's wgmma kernel on an H100 or H200, through the course's own code (helpers.measure.verify,
helpers.measure.bench), into one JSON file:

    PYTHONUNBUFFERED=1 python3 -m tools.measure_10_wgmma OUT.json [--rounds 3]

- every registered configuration of 10_wgmma verified on the shape catalogue (float64 reference);
- at 4096^3, ROUNDS interleaved rounds of cuBLAS TF32, cuBLAS FP32, 10_wgmma and 10_tensor_cores
  (median of 50 launches each), so the bar (% of cuBLAS TF32) is read from several same-run pairs;
- a sweep of square sizes 512-8192: 10_wgmma and 10_tensor_cores beside cuBLAS TF32;
- TF32's cost at 4096^3: each result's error against a float64 product, largest and RMS, over the
  RMS of the product, for cuBLAS FP32 and TF32 and the tensor-core kernels.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers.core import progress, stages
from helpers.core.configs import WgmmaConfig
from helpers.core.configs_tensor_cores import TensorCoreConfig
from helpers.measure import bench, resources, verify

WGMMA, WMMA = stages.variant("10_wgmma"), stages.variant("10_tensor_cores")
SIZES = (512, 1024, 2048, 3072, 4096, 6144, 8192)


def _row(name: str, n: int, t: bench.Timing, **extra) -> dict:
    return {"kernel": name, "size": n, **t.row(n, n, n), **extra}


def timings(n: int, n_repeat: int) -> list[dict]:
    """cuBLAS TF32 and FP32, then each tensor-core kernel, at n^3; % of the same call's cuBLAS TF32."""
    tf32 = bench.time_cublas(n, n, n, n_repeat=n_repeat, tf32=True)
    rows = [_row("cublas_tf32", n, tf32), _row("cublas_sgemm", n, bench.time_cublas(n, n, n, n_repeat=n_repeat))]
    for v in (WGMMA, WMMA):
        t, rel = bench.time_variant(v, n, n, n, n_repeat=n_repeat)
        rows.append(_row(v.name, n, t, config=v.default.label(), pct_cublas_tf32=100 * tf32.median_ms / t.median_ms,
                         max_rel_diff_vs_cublas_fp32=rel))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    data = {"provenance": bench.provenance(f"python -m tools.measure_10_wgmma OUT.json --rounds {a.rounds}"),
            "configurations": [], "rounds_4096": [], "sweep": [], "precision": []}
    save = lambda: Path(a.out).write_text(json.dumps(data, indent=1))  # noqa: E731
    for cfg in (WGMMA.default, *WGMMA.alternatives):
        r = resources.kernel_resources(WGMMA, cfg)
        report = verify.check_catalogue(WGMMA, cfg)
        data["configurations"].append({"config": cfg.label(), "registers": r.registers, "local_bytes": r.local_bytes,
                                       "blocks_per_sm": r.driver_blocks_per_sm, "verified_shapes": len(report.checks),
                                       "verified": report.ok, **({} if report.ok else {"report": str(report)})})
        print(data["configurations"][-1], flush=True)
    save()
    for i in progress.bar(range(a.rounds), desc="rounds at 4096^3"):
        data["rounds_4096"].append(timings(4096, 50))
        print([(r["kernel"], round(r["tflops"], 1), round(r.get("pct_cublas_tf32", 100), 1))
               for r in data["rounds_4096"][-1]], flush=True)
        save()
    for n in progress.bar(SIZES, desc="sweep"):
        data["sweep"] += timings(n, 30)
        print(n, [(r["kernel"], round(r["tflops"], 1)) for r in data["sweep"][-4:]], flush=True)
        save()
    data["precision"] = bench.precision_rows(4096, (
        (WGMMA, WgmmaConfig(ROUND=0)), (WGMMA, WgmmaConfig(ROUND=1)),
        (WMMA, TensorCoreConfig(ROUND=0)), (WMMA, TensorCoreConfig(ROUND=1))))
    for r in data["precision"]:
        print(r, flush=True)
    save()


if __name__ == "__main__":
    main()

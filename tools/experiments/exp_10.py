"""Stage 10 on a GPU: tensor-core configurations against cuBLAS TF32 and FP32, TF32's precision
cost, and (for issue 6) a few more stage-08 configurations, all in one run.

    PYTHONUNBUFFERED=1 python3 -m tools.experiments.exp_10 OUT.json [--size 4096]

Every configuration is verified on the course's odd shapes first (helpers.measure.verify, float64
reference), then timed with helpers.measure.bench (median of 50 launches after 10 warm-ups); cuBLAS FP32
and TF32 are timed before and after the candidates. Precision: at SIZE^3 on uniform [-1, 1)
data, each result's error against a float64 product on the GPU, as the largest and the RMS of
|C - C64| / RMS(C64). The JSON is rewritten after every row. Made results/stage_10_h200_2026-11-23/exp_10.json.
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path

from helpers.core import stages
from helpers.core.configs import WarpTileConfig as W
from helpers.core.configs_tensor_cores import TensorCoreConfig as T
from helpers.measure import bench, resources, verify

CANDIDATES = [("10_tensor_cores", c) for c in (
    T(128, 128, 32, 64, 64, 3, 1), T(128, 128, 32, 64, 64, 3, 0), T(128, 128, 32, 64, 64, 3, 2),
    T(128, 128, 32, 64, 64, 4, 2), T(128, 128, 16, 64, 64, 4, 2), T(128, 128, 32, 64, 32, 3, 2),
    T(128, 128, 32, 32, 64, 3, 2), T(128, 256, 32, 64, 64, 3, 2), T(256, 128, 32, 64, 64, 3, 2),
    T(128, 256, 32, 64, 64, 3, 0), T(64, 128, 32, 32, 64, 4, 2), T(64, 64, 32, 32, 32, 4, 2),
    T(128, 256, 32, 64, 128, 3, 2), T(128, 128, 32, 64, 32, 3, 0),
)] + [("08_warp_tiling", c) for c in (
    W(128, 128, 16, 32, 64, 8, 8), W(128, 128, 32, 32, 64, 8, 8), W(128, 128, 16, 64, 32, 8, 8),
    W(64, 128, 16, 32, 64, 8, 8), W(128, 64, 16, 32, 64, 8, 8),
)]


def precision_rows(size: int) -> list[dict]:
    return bench.precision_rows(size, [(stages.variant(name), cfg) for name, cfg in (
        ("10_tensor_cores", T(ROUND=1)), ("10_tensor_cores", T(ROUND=2)), ("10_tensor_cores", T(ROUND=0)),
        ("09_double_buffering", None))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=4096)
    a = ap.parse_args()
    n = a.size
    data = {"provenance": bench.provenance(), "size": n, "rows": [], "cublas": []}
    save = lambda: Path(a.out).write_text(json.dumps(data, indent=1))  # noqa: E731

    def cublas_pair(when):
        f, t = bench.time_cublas(n, n, n), bench.time_cublas(n, n, n, tf32=True)
        data["cublas"].append({"when": when, "fp32_tflops": f.tflops(n, n, n), "tf32_tflops": t.tflops(n, n, n)})
        print(data["cublas"][-1], flush=True)

    cublas_pair("before")
    for name, cfg in CANDIDATES:
        v = stages.variant(name)
        row = {"variant": name, "config": cfg.label(), "expr": v.name_expression(cfg)}
        t0 = time.time()
        try:
            r = resources.kernel_resources(v, cfg)
            row.update(regs=r.registers, spill_bytes=r.spill_store_bytes, shared=r.dynamic_shared_bytes + r.static_shared_bytes,
                       blocks_per_sm=r.driver_blocks_per_sm)
            report = verify.check_catalogue(v, cfg)
            row["catalogue"] = "pass" if report.ok else str(report)
            if report.ok:
                t, rel = bench.time_variant(v, n, n, n, cfg)
                row.update(tflops=t.tflops(n, n, n), median_ms=t.median_ms, q1_ms=t.q1_ms, q3_ms=t.q3_ms,
                           max_rel_diff_vs_cublas_fp32=rel)
        except Exception as e:  # recorded, not skipped
            row["error"] = f"{type(e).__name__}: {e}"[:2000]
            traceback.print_exc()
        row["wall_s"] = round(time.time() - t0, 1)
        data["rows"].append(row)
        print({k: row.get(k) for k in ("expr", "regs", "spill_bytes", "blocks_per_sm", "catalogue", "tflops", "error")},
              flush=True)
        save()
    cublas_pair("after")
    save()
    data["precision"] = precision_rows(n)
    for r in data["precision"]:
        print(r, flush=True)
    save()


if __name__ == "__main__":
    main()

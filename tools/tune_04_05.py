"""Tile sizes of stages 04 and 05 on a GPU: a handful of configurations per stage, cuBLAS beside.

    PYTHONUNBUFFERED=1 python3 -m tools.tune_04_05 --out results/stages_04_05_h200_DATE.json

Every candidate is first verified on the course's catalogue of odd shapes (helpers.measure.verify) on the
GPU, then timed at SIZE^3 with helpers.measure.bench (CUDA events, warm-up, median of REPEAT launches,
checked against cuBLAS on the same data). cuBLAS (cupy.matmul, TF32 off) is timed in the same
run, before and after the candidates, so drift shows. The JSON holds every row, the fastest
configuration of each stage (the registry's default should be that one), the provenance, and
the SHA-256 of each kernel file, so a number can be matched with the source it measured.
A candidate that fails to compile or launch is recorded with its error, not skipped silently.
The JSON is rewritten after every row, so a run cut short still leaves what it measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from helpers.core import paths, progress, stages
from helpers.core.configs import ThreadTile1DConfig as T1, ThreadTile2DConfig as T2
from helpers.measure import bench, resources, verify
from helpers.run import backend

# (BM, BN, BK, TM): 128 to 1024 threads, TM from 8 to 32 results per thread
CANDIDATES_04 = (
    T1(64, 64, 8, 8), T1(64, 64, 16, 8), T1(64, 64, 8, 16), T1(64, 64, 16, 16), T1(64, 64, 8, 32),
    T1(128, 64, 8, 16), T1(128, 32, 8, 16), T1(64, 32, 16, 8), T1(128, 128, 8, 16), T1(128, 64, 8, 32),
    T1(128, 64, 16, 32), T1(128, 128, 8, 32),
)
# (BM, BN, BK, TM, TN): 64 to 512 threads; TN = 4 puts one row of threads in a warp
CANDIDATES_05 = (
    T2(128, 128, 8, 8, 8), T2(128, 128, 16, 8, 8), T2(128, 128, 32, 8, 8), T2(128, 256, 16, 8, 8),
    T2(256, 128, 16, 8, 8), T2(128, 64, 16, 8, 8), T2(64, 128, 16, 8, 8), T2(64, 64, 16, 8, 8),
    T2(64, 64, 8, 4, 4), T2(128, 128, 16, 8, 4), T2(64, 128, 16, 8, 4), T2(64, 128, 8, 8, 4),
    T2(128, 128, 16, 16, 4), T2(128, 128, 8, 16, 4),
)
CANDIDATES = {"04_1d_thread_tiling": CANDIDATES_04, "05_2d_thread_tiling": CANDIDATES_05}


def registers(variant, config) -> int | None:
    try:
        return resources.kernel_resources(variant, config).registers
    except Exception:  # the count is extra information; its absence must not stop the timing
        return None


def measure(variant, config, size: int, repeat: int, cublas_ms: float) -> dict:
    row = {"variant": variant.name, "config": config.label(), "template_args": list(config.template_args()),
           "threads": config.threads(), "M": size, "N": size, "K": size}
    try:
        report = verify.check_catalogue(variant, config)
        row["catalogue"] = "pass" if report.ok else "FAIL"
        if not report.ok:
            row["catalogue_report"] = str(report)
            return row
        t, rel = bench.time_variant(variant, size, size, size, config, n_warmup=10, n_repeat=repeat)
    except Exception as e:  # a compile or launch error is a result too
        row["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
        return row
    row.update(asdict(t), tflops=t.tflops(size, size, size), pct_cublas=100.0 * cublas_ms / t.median_ms,
               max_rel_diff_vs_cublas=rel, registers=registers(variant, config))
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the JSON file to write")
    p.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    p.add_argument("--repeat", type=int, default=30, help="timed launches per kernel (at least 30)")
    p.add_argument("--stages", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    args = p.parse_args(argv)
    if args.repeat < 30:
        p.error("--repeat must be at least 30: the course reports medians of 30 or more launches")
    if backend.name() != "gpu":
        p.error("tuning times kernels on a GPU, and CuPy sees none here (the CPU emulator's times say "
                "nothing about a GPU); the measured results are in results/stages_04_05_*.json")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    S = args.size
    result = {"provenance": bench.provenance(), "size": S, "repeat": args.repeat,
              "note": "cuBLAS is cupy.matmul with TF32 off, timed before and after the candidates; "
                      "pct_cublas is against the first. Each candidate passed the catalogue of odd "
                      "shapes on this GPU before it was timed.",
              "kernels": {name: {"path": str(stages.variant(name).path.relative_to(paths.ROOT)),
                                 "sha256": hashlib.sha256(stages.variant(name).path.read_bytes()).hexdigest()}
                          for name in args.stages},
              "cublas": {}, "rows": [], "best": {}}

    def save():
        out.write_text(json.dumps(result, indent=1) + "\n")

    start = time.time()
    cublas = bench.time_cublas(S, S, S, n_repeat=args.repeat)
    result["cublas"]["before"] = {**asdict(cublas), "tflops": cublas.tflops(S, S, S)}
    print(f"cuBLAS SGEMM {S}^3: {cublas.tflops(S, S, S):6.2f} TFLOP/s ({cublas.median_ms:.3f} ms)")
    save()
    for name in args.stages:
        v = stages.variant(name)
        for config in progress.bar(CANDIDATES[name], desc=name, unit="config"):
            row = measure(v, config, S, args.repeat, cublas.median_ms)
            result["rows"].append(row)
            if "tflops" in row:
                progress.write(f"{name} {config.label():42s} {row['tflops']:6.2f} TFLOP/s {row['pct_cublas']:5.1f}% "
                               f"of cuBLAS, {row['registers']} regs  [{time.time() - start:.0f} s]")
            else:
                progress.write(f"{name} {config.label():42s} {row.get('error') or row.get('catalogue_report')}")
            save()
        timed = [r for r in result["rows"] if r["variant"] == name and "tflops" in r]
        if timed:
            result["best"][name] = max(timed, key=lambda r: r["tflops"])
    after = bench.time_cublas(S, S, S, n_repeat=args.repeat)
    result["cublas"]["after"] = {**asdict(after), "tflops": after.tflops(S, S, S)}
    print(f"cuBLAS SGEMM {S}^3 again: {after.tflops(S, S, S):6.2f} TFLOP/s")
    for name, r in result["best"].items():
        print(f"best {name}: {r['config']}: {r['tflops']:.2f} TFLOP/s, {r['pct_cublas']:.1f}% of cuBLAS")
    save()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

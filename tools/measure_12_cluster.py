"""Stage 12's cluster step (CLUSTER = 2: clusters of two blocks sharing A's tile by TMA multicast) against the stage's
kernel, on an H100 or H200, through the course's own code, into one JSON file:

    PYTHONUNBUFFERED=1 python3 -m tools.measure_12_cluster OUT.json [--rounds 5]

- each pair (the stage's kernel, the same configuration with CLUSTER = 2) verified on the shape catalogue first,
  with its registers and local memory;
- ROUNDS interleaved rounds at 4096^3 and 8192^3 of cuBLAS TF32 and each configuration (median of 50 launches),
  so that the step's gain is read from same-run pairs; beta = 0 (C not read), as the stage's other timings.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers.core import progress, stages
from helpers.core.configs_hopper import WarpSpecializedConfig as WS
from helpers.measure import bench, resources, verify

V12 = stages.variant("12_warp_specialized")
PAIRS = ((WS(), WS(CLUSTER=2)), (WS(128, 2, 4), WS(128, 2, 4, CLUSTER=2)))
SIZES = (4096, 8192)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    configs = [c for pair in PAIRS for c in pair]
    data = {"provenance": bench.provenance(f"python -m tools.measure_12_cluster OUT.json --rounds {a.rounds}"),
            "verified": [], "rounds": []}
    for cfg in configs:
        report = verify.check_catalogue(V12, cfg)
        res = resources.kernel_resources(V12, cfg)
        data["verified"].append({"config": cfg.label(), "ok": report.ok, "registers": res.registers,
                                 "local_bytes": res.local_bytes})
        progress.write(f"{cfg.label()}: catalogue {'correct' if report.ok else 'WRONG'}, {res.registers} registers")
        if not report.ok:
            raise SystemExit(str(report))
    for r in range(a.rounds):
        for n in SIZES:
            tf32 = bench.time_cublas(n, n, n, n_repeat=50, tf32=True)
            rows = [{"what": "cuBLAS TF32", "size": n, **tf32.row(n, n, n)}]
            for cfg in configs:
                t, rel = bench.time_variant(V12, n, n, n, config=cfg, n_repeat=50)
                rows.append({"what": cfg.label(), "size": n, **t.row(n, n, n),
                             "pct_cublas_tf32": 100 * tf32.median_ms / t.median_ms, "max_rel_diff_vs_cublas_fp32": rel})
                progress.write(f"round {r} {n}^3 {cfg.label()}: {rows[-1]['tflops']:.1f} TFLOP/s, "
                             f"{rows[-1]['pct_cublas_tf32']:.1f} % of cuBLAS TF32")
            data["rounds"].append(rows)
    a.out.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()

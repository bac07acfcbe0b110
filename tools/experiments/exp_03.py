"""Experiments toward issue 5's stage-03 bar, timed on a GPU against the course's kernel:
- smem_tiling_fast_interior.cu: interior tiles skip the per-element bounds checks;
- smem_tiling_rows_along_x.cu: consecutive blocks walk down the rows of C (siboehm's order).
Each is checked against cuBLAS at 4096^3 before it is timed (tiles 16 and 32, cuBLAS before/after).
Made results/experiment_03_h200_2026-11-22.json. The two kernels are this experiment's own, kept
with the result that cites them; they are not the course's kernel 03 and do not follow it.
    python -m tools.experiments.exp_03 OUT.json"""
import json
import sys
from pathlib import Path

import cupy as cp

from helpers.core import stages
from helpers.core.configs import ceil_div
from helpers.core.paths import ROOT
from helpers.measure import bench, verify
from helpers.run import backend, gemm
from helpers.run.kernel_loader import load_kernel

backend.use("gpu")
HERE = ROOT / "tools" / "experiments"
S = 4096
EXPERIMENTS = [  # file, kernel, grid for (M, N, tile)
    ("smem_tiling_fast_interior.cu", "sgemm_smem_tiling_fast_interior", lambda M, N, t: (ceil_div(N, t), ceil_div(M, t), 1)),
    ("smem_tiling_rows_along_x.cu", "sgemm_smem_tiling_rows_along_x", lambda M, N, t: (ceil_div(M, t), ceil_div(N, t), 1)),
]
v = stages.variant("03_smem_tiling")
rows = [{"variant": "cublas_sgemm", "tflops": bench.time_cublas(S, S, S, n_repeat=50).tflops(S, S, S)}]
for tile in (16, 32):
    cfg = v.config(tile=tile)
    assert verify.check_catalogue(v, cfg).ok
    t, rel = bench.time_variant(v, S, S, S, cfg, n_repeat=50)
    rows.append({"variant": v.name, "tile": tile, "tflops": t.tflops(S, S, S), "median_ms": t.median_ms, "rel": rel})
    for file, name, grid in EXPERIMENTS:
        k = load_kernel(HERE / file, f"{name}<{tile}>")
        A, B, C = bench.device_operands(S, S, S)
        args = gemm.launch_args(S, S, S, 1.0, A, B, 0.0, C)
        launch = lambda: k(grid(S, S, tile), cfg.block(), args)  # noqa: E731
        launch()
        ref = A @ B
        rel = float(cp.max(cp.abs(C - ref)) / cp.max(cp.abs(ref)))
        assert rel < 1e-5, (name, rel)
        t = bench.time_call(launch, 10, 50)
        rows.append({"variant": name, "tile": tile, "tflops": t.tflops(S, S, S), "median_ms": t.median_ms, "rel": rel})
rows.append({"variant": "cublas_sgemm (after)", "tflops": bench.time_cublas(S, S, S, n_repeat=50).tflops(S, S, S)})
out = {"provenance": bench.provenance("python -m tools.experiments.exp_03 OUT.json"), "experiment": rows}
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
for r in rows:
    print(r)

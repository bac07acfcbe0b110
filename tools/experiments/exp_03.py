"""Experiment for issue 5's stage-03 bar: does an unchecked fast path for interior tiles help?
Times kernels/03_smem_tiling.cu and tools/experiments/smem_tiling_fast_interior.cu (tiles 16
and 32) and cuBLAS at 4096^3 in one run on a GPU, after checking each on the catalogue.
    PYTHONPATH=. python tools/experiments/exp_03.py OUT.json"""
import json
import sys
from pathlib import Path

from helpers import backend, bench, gemm, stages, verify
from helpers.kernels import load_kernel

backend.use("gpu")
ROOT = Path(__file__).resolve().parents[2]
v = stages.variant("03_smem_tiling")
rows = [{"variant": "cublas_sgemm", "tflops": bench.time_cublas(4096, 4096, 4096, n_repeat=50).tflops(4096, 4096, 4096)}]
for tile in (16, 32):
    cfg = v.config(tile=tile)
    assert verify.check_catalogue(v, cfg).ok
    t, rel = bench.time_variant(v, 4096, 4096, 4096, cfg, n_repeat=50)
    rows.append({"variant": v.name, "tile": tile, "tflops": t.tflops(4096, 4096, 4096), "median_ms": t.median_ms, "rel": rel})
    path = ROOT / "tools/experiments/smem_tiling_fast_interior.cu"
    k = load_kernel(path, f"sgemm_smem_tiling_fast_interior<{tile}>")
    A, B, C = bench.device_operands(4096, 4096, 4096)
    args = gemm.launch_args(4096, 4096, 4096, 1.0, A, B, 0.0, C)
    k(cfg.grid(4096, 4096), cfg.block(), args)
    import cupy as cp
    rel2 = float(cp.max(cp.abs(C - A @ B)) / cp.max(cp.abs(A @ B)))
    t2 = bench.time_call(lambda: k(cfg.grid(4096, 4096), cfg.block(), args), 10, 50)
    rows.append({"variant": "fast_interior", "tile": tile, "tflops": t2.tflops(4096, 4096, 4096), "median_ms": t2.median_ms, "rel": rel2})
rows.append({"variant": "cublas_sgemm (after)", "tflops": bench.time_cublas(4096, 4096, 4096, n_repeat=50).tflops(4096, 4096, 4096)})
out = {"provenance": bench.provenance("python tools/experiments/exp_03.py OUT.json"), "experiment": rows}
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
for r in rows:
    print(r)

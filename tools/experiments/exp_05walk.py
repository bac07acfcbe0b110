"""Stage 05 as kept against the same kernel with its A and B pointers stepped along K
(2d_thread_tiling_walk.cu), raw launches, three interleaved timings each at 4096^3, per config.
    PYTHONPATH=. python tools/experiments/exp_05walk.py OUT.json"""
import json
import sys
from pathlib import Path

import cupy as cp

from helpers.measure import bench
from helpers.core import stages

HERE = Path(__file__).resolve().parent
S = 4096
A, B, C = bench.device_operands(S, S, S)
REF = A @ B
ARGS = (cp.int32(S), cp.int32(S), cp.int32(S), cp.float32(1), A, B, cp.float32(0), C)
v = stages.variant("05_2d_thread_tiling")
cfgs = (v.default, v.default.__class__(128, 128, 16, 8, 8), v.default.__class__(128, 128, 8, 8, 8))
runs = {}
for cfg in cfgs:
    targs = ", ".join(map(str, cfg.template_args()))
    for label, path, name in (("kept", v.path, v.kernel), ("walk", HERE / "2d_thread_tiling_walk.cu", "sgemm_2d_walk")):
        expr = f"{name}<{targs}>"
        mod = cp.RawModule(code=Path(path).read_text(), options=("--std=c++17", "-lineinfo"), name_expressions=[expr])
        runs[f"{label} {cfg.label()}"] = (mod.get_function(expr), cfg)
rows = {k: [] for k in runs}
for k, (f, cfg) in runs.items():
    C.fill(1e30)
    f(cfg.grid(S, S), cfg.block(), ARGS)
    assert float(cp.max(cp.abs(C - REF)) / cp.max(cp.abs(REF))) < 1e-5, k
for _ in range(3):
    for k, (f, cfg) in runs.items():
        rows[k].append(round(bench.time_call(lambda: f(cfg.grid(S, S), cfg.block(), ARGS), 10, 50).tflops(S, S, S), 3))
for k, r in rows.items():
    print(f"{k:50s} {r} regs {runs[k][0].num_regs}")
Path(sys.argv[1]).write_text(json.dumps({"provenance": bench.provenance("PYTHONPATH=. python tools/experiments/exp_05walk.py OUT.json"),
                                         "cublas_tflops": bench.time_cublas(S, S, S).tflops(S, S, S), "tflops_three_runs": rows}, indent=1))

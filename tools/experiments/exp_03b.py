"""One-idea variants of stage 03 (smem_tiling_variants.cu) against the reference layout
(ref_designs.cu smem_rowsx), raw launches, three interleaved timings each at 4096^3.
    PYTHONPATH=. python tools/experiments/exp_03b.py OUT.json"""
import json
import sys
from pathlib import Path

import cupy as cp

from helpers.measure import bench

HERE = Path(__file__).resolve().parent
S, T = 4096, 32
A, B, C = bench.device_operands(S, S, S)
REF = A @ B
ARGS = (cp.int32(S), cp.int32(S), cp.int32(S), cp.float32(1), A, B, cp.float32(0), C)
var = cp.RawModule(code=(HERE / "smem_tiling_variants.cu").read_text(), options=("--std=c++17",),
                   name_expressions=[f"smem_v<{T}, {v}>" for v in range(6)])
ref = cp.RawModule(code=(HERE / "ref_designs.cu").read_text(), options=("--std=c++17",), name_expressions=[f"smem_rowsx<{T}>"])
g2, g1 = (S // T, S // T), (T * T,)
runs = {f"V{v}": (var.get_function(f"smem_v<{T}, {v}>"), (T * T,) if v in (2, 5) else (T, T)) for v in range(6)}
runs["smem_rowsx"] = (ref.get_function(f"smem_rowsx<{T}>"), g1)
rows = {k: [] for k in runs}
for k, (f, block) in runs.items():
    C.fill(1e30)
    f(g2, block, ARGS)
    assert float(cp.max(cp.abs(C - REF)) / cp.max(cp.abs(REF))) < 1e-5, k
for _ in range(3):
    for k, (f, block) in runs.items():
        rows[k].append(round(bench.time_call(lambda: f(g2, block, ARGS), 10, 50).tflops(S, S, S), 3))
from helpers.run import backend
from helpers.core import stages  # noqa: E402
backend.use("gpu")
v = stages.variant("03_smem_tiling")
rows["course kernel (bench.time_variant)"] = [round(bench.time_variant(v, S, S, S, v.config(tile=T))[0].tflops(S, S, S), 3)
                                              for _ in range(3)]
for k, r in rows.items():
    print(k, r)
Path(sys.argv[1]).write_text(json.dumps({"provenance": bench.provenance("PYTHONPATH=. python tools/experiments/exp_03b.py OUT.json"),
                                         "tile": T, "tflops_three_runs": rows}, indent=1))

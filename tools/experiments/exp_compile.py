"""Does the compiler (NVRTC with or without -lineinfo, nvcc -O3) or the shared-memory carveout
move stages 03 and 05? Each build of each kernel is timed three times, interleaved, at 4096^3,
after a check against cuBLAS. Made results/experiments_h200_2026-11-22/exp_compile.json.
    python -m tools.experiments.exp_compile OUT.json"""
import json
import sys
from pathlib import Path

import cupy as cp

from helpers.core import stages
from helpers.measure import bench
from helpers.run import backend
from tools.experiments.exp_bars import A, B, C, REF, S, nvcc_module  # shares operands and the nvcc build

backend.use("gpu")
ARGS = (cp.int32(S), cp.int32(S), cp.int32(S), cp.float32(1), A, B, cp.float32(0), C)
builds = {}
for v in (stages.variant("03_smem_tiling"), stages.variant("05_2d_thread_tiling")):
    cfg, expr = v.default, v.name_expression()
    for opts in (("--std=c++17", "-lineinfo"), ("--std=c++17",)):
        mod = cp.RawModule(code=v.path.read_text(), options=opts, name_expressions=[expr])
        for carve in (None, 100):
            f = mod.get_function(expr)
            if carve is not None:
                f.preferred_shared_memory_carveout = carve
            builds[f"{v.name} NVRTC {' '.join(opts[1:]) or 'plain'} carveout {carve or 'default'}"] = (f, cfg)
    mod, names = nvcc_module(v.path, [expr + "(int, int, int, float, const float*, const float*, float, float*)"])
    for carve in (None, 100):
        f = mod.get_function(names[0])
        if carve is not None:
            f.preferred_shared_memory_carveout = carve
        builds[f"{v.name} nvcc -O3 carveout {carve or 'default'}"] = (f, cfg)
rows = {k: [] for k in builds}
for name, (f, cfg) in builds.items():
    C.fill(1e30)
    f(cfg.grid(S, S), cfg.block(), ARGS)
    assert float(cp.max(cp.abs(C - REF)) / cp.max(cp.abs(REF))) < 1e-5, name
for rep in range(3):
    for name, (f, cfg) in builds.items():
        t = bench.time_call(lambda: f(cfg.grid(S, S), cfg.block(), ARGS), 10, 50)
        rows[name].append(round(t.tflops(S, S, S), 3))
for k, r in rows.items():
    print(f"{k:60s} {r}")
out = {"provenance": bench.provenance("python -m tools.experiments.exp_compile OUT.json"),
       "cublas_tflops": bench.time_cublas(S, S, S, n_repeat=50).tflops(S, S, S), "tflops_three_runs": rows}
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))

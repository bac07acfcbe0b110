"""How far are stages 03 and 05 from the designs their bars were set by? Times, in one run on a GPU
and beside cuBLAS, the course kernels against re-implementations of those designs (ref_designs.cu:
the layout of kernel 3 of siboehm's SGEMM_CUDA, https://github.com/siboehm/SGEMM_CUDA, and seed
004's V1, with and without float4), the course kernels compiled by nvcc instead of NVRTC, with the
shared-memory carveout at its maximum, and 05 fully unrolled under __launch_bounds__(threads, 2).
Every kernel is checked against cuBLAS at 4096^3 before it is timed.
Made results/experiments_h200_2026-11-22/exp_bars.json.
    python -m tools.experiments.exp_bars OUT.json"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import cupy as cp

from helpers.core import stages
from helpers.core.paths import ROOT
from helpers.measure import bench, verify
from helpers.run import backend

backend.use("gpu")
HERE = ROOT / "tools" / "experiments"
S = 4096
A, B, C = bench.device_operands(S, S, S)
REF = A @ B
rows = []


def record(name, launch, **extra):
    C.fill(1e30)  # finite poison: beta = 0 multiplies it
    launch()
    rel = float(cp.max(cp.abs(C - REF)) / cp.max(cp.abs(REF)))
    assert rel < 1e-5, (name, rel)
    t = bench.time_call(launch, 10, 50)
    rows.append({"kernel": name, "tflops": round(t.tflops(S, S, S), 3), "median_ms": t.median_ms, "rel": rel, **extra})
    print(rows[-1], flush=True)


def raw(module, expr, grid, block, carveout=None):
    f = module.get_function(expr)
    if carveout is not None:
        f.preferred_shared_memory_carveout = carveout
    args = (cp.int32(S), cp.int32(S), cp.int32(S), cp.float32(1), A, B, cp.float32(0), C)
    return lambda: f(grid, block, args)


def nvcc_module(kernel_file, instantiations):
    """The course kernel compiled by nvcc -O3 for this GPU; returns (module, mangled names)."""
    d = Path(tempfile.mkdtemp())
    src = d / "w.cu"
    src.write_text(f'#include "{kernel_file}"\n' + "".join(f"template __global__ void {i};\n" for i in instantiations))
    cc = "".join(map(str, cp.cuda.Device().compute_capability))
    subprocess.run(["nvcc", "-cubin", f"-arch=sm_{cc}", "-O3", "-std=c++17", "-o", str(d / "w.cubin"), str(src)], check=True)
    sass = subprocess.run(["cuobjdump", "-sass", str(d / "w.cubin")], capture_output=True, text=True).stdout
    return cp.RawModule(path=str(d / "w.cubin")), re.findall(r"Function : (\S+)", sass)



def main():
    rows.append({"kernel": "cublas", "tflops": round(bench.time_cublas(S, S, S, n_repeat=50).tflops(S, S, S), 3)})
    ref = cp.RawModule(code=(HERE / "ref_designs.cu").read_text(), options=("--std=c++17",),
                       name_expressions=["smem_rowsx<32>", "v1<true>", "v1<false>"])
    v03, v05 = stages.variant("03_smem_tiling"), stages.variant("05_2d_thread_tiling")
    for v in (v03, v05):
        assert verify.check_catalogue(v, v.default).ok
        t, rel = bench.time_variant(v, S, S, S, v.default, n_repeat=50)
        rows.append({"kernel": v.name, "config": v.default.label(), "tflops": round(t.tflops(S, S, S), 3), "median_ms": t.median_ms})
        print(rows[-1], flush=True)
    record("ref smem_rowsx<32> (siboehm kernel 3 layout)", raw(ref, "smem_rowsx<32>", (S // 32, S // 32), (1024,)))
    record("ref smem_rowsx<32> carveout 100", raw(ref, "smem_rowsx<32>", (S // 32, S // 32), (1024,), 100))
    record("ref v1<true> (seed 004 V1, float4)", raw(ref, "v1<true>", (S // 128, S // 128), (16, 16)))
    record("ref v1<false> (V1, scalar copies)", raw(ref, "v1<false>", (S // 128, S // 128), (16, 16)))
    record("ref v1<true> carveout 100", raw(ref, "v1<true>", (S // 128, S // 128), (16, 16), 100))

    # The course kernels by NVRTC with the carveout at its maximum, and by nvcc -O3.
    for v in (v03, v05):
        cfg = v.default
        mod = cp.RawModule(code=(v.path).read_text(), options=("--std=c++17",), name_expressions=[v.name_expression(cfg)])
        record(f"{v.name} NVRTC carveout 100", raw(mod, v.name_expression(cfg), cfg.grid(S, S), cfg.block(), 100), config=cfg.label())
        inst = v.name_expression(cfg) + "(int, int, int, float, const float*, const float*, float, float*)"
        mod, names = nvcc_module(v.path, [inst])
        record(f"{v.name} nvcc -O3", raw(mod, names[0], cfg.grid(S, S), cfg.block()), config=cfg.label())

    # 05 fully unrolled, with the compiler told to fit two blocks per SM.
    text = (v05.path).read_text()
    assert "#pragma unroll 2\n" in text and "__launch_bounds__(BM * BN / TM / TN)" in text
    text = text.replace("#pragma unroll 2\n", "#pragma unroll\n").replace("__launch_bounds__(BM * BN / TM / TN)", "__launch_bounds__(BM * BN / TM / TN, 2)")
    for args in ((128, 128, 16, 16, 4), (128, 128, 8, 8, 8), (128, 128, 16, 8, 8)):
        cfg = v05.default.__class__(*args)
        expr = f"sgemm_2d_thread_tiling<{', '.join(map(str, args))}>"
        mod = cp.RawModule(code=text, options=("--std=c++17",), name_expressions=[expr])
        record("05 full unroll, __launch_bounds__(t, 2)", raw(mod, expr, cfg.grid(S, S), cfg.block()), config=cfg.label(),
               registers=mod.get_function(expr).num_regs)
    rows.append({"kernel": "cublas (after)", "tflops": round(bench.time_cublas(S, S, S, n_repeat=50).tflops(S, S, S), 3)})
    out = {"provenance": bench.provenance("python -m tools.experiments.exp_bars OUT.json"), "rows": rows}
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

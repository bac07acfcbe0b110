"""Stage 10's wgmma kernel on an H100/H200 before it is registered: NVRTC for sm_90a, verified
against a float64 product on odd shapes, timed at SIZE^3 beside cuBLAS TF32 and FP32.

    PYTHONUNBUFFERED=1 python3 -m tools.experiments.exp_10_wgmma OUT_DIR [--size 4096]

Writes OUT_DIR/exp_10_wgmma.json (rewritten after every row) and, when a configuration fails,
OUT_DIR/fail_<config>.npz with a small case's operands and result, to find the wrong mapping.
Made the exp_10_wgmma_*.json of results/stage_10_h100_2026-11-24/ (while kernels/10_wgmma.cu was written).
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path

import cupy as cp
import numpy as np
from cupy_backends.cuda.api import driver
from cupy_backends.cuda.libs import nvrtc

from helpers.core.paths import KERNELS, ROOT
from helpers.measure import bench
from helpers.run import toolchain

# Textual variants of kernels/10_wgmma.cu, each one idea (empty: the file as it is).
COPIES_AFTER_MMA = [("""    start_tile(t + STAGES - 2);         // into the stage of tile t-2
    __pipeline_commit();
""", ""), ("""    wgmma_commit_group();
  };""", """    wgmma_commit_group();
    start_tile(t + STAGES - 2);         // into the stage of tile t-2
    __pipeline_commit();
  };""")]
VARIANTS = {"file": [], "copies_after_mma": COPIES_AFTER_MMA}
CONFIGS = [("file", (256, 128, 4, 0)), ("file", (256, 128, 4, 1)), ("file", (256, 128, 3, 1)),
           ("file", (128, 128, 4, 1)), ("file", (256, 128, 4, 0)), ("file", (256, 128, 4, 1))]
SHAPES = [(64, 64, 32), (1, 1, 1), (97, 61, 37), (300, 200, 100), (257, 129, 64), (128, 192, 1000),
          (1000, 777, 333), (513, 1031, 2050)]
BK = 32


def smem_bytes(BM, BN, STAGES):
    stage = (BM * BK + BK * (BN + 8) + 255) // 256 * 256
    return STAGES * stage * 4 + 1024


def compile_kernel(expr: str, path: Path = KERNELS / "10_wgmma.cu", edits=()):
    src = path.read_text()
    for old, new in edits:
        assert old in src, old
        src = src.replace(old, new)
    prog = nvrtc.createProgram(src, path.name, [], [])
    nvrtc.addNameExpression(prog, expr)
    opts = ["--std=c++17", "-lineinfo", "-arch=sm_90a", f"--include-path={KERNELS}",
            *toolchain.cuda_include_options()]
    try:
        nvrtc.compileProgram(prog, opts)
    except nvrtc.NVRTCError:
        raise RuntimeError(nvrtc.getProgramLog(prog))
    log = nvrtc.getProgramLog(prog)
    cubin = nvrtc.getCUBIN(prog)
    lowered = nvrtc.getLoweredName(prog, expr)
    mod = cp.cuda.function.Module()
    mod.load(cubin)
    return mod, mod.get_function(lowered), log


def launcher(fn, cfg):
    BM, BN, STAGES, _ = cfg
    smem = smem_bytes(BM, BN, STAGES)
    driver.funcSetAttribute(fn.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)

    def run(M, N, K, alpha, A, B, beta, C):
        fn(((N + BN - 1) // BN, (M + BM - 1) // BM, 1), (BN // 64 * 128, 1, 1),
           (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B, np.float32(beta), C), shared_mem=smem)
    return run


def check(run, M, N, K, rng, alpha=1.5, beta=-0.5):
    A = cp.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float32))
    B = cp.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float32))
    C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
    C = C0.copy()
    run(M, N, K, alpha, A, B, beta, C)
    cp.cuda.get_current_stream().synchronize()
    ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64)) + beta * C0.astype(cp.float64)
    # TF32: inputs keep 10 mantissa bits, an error up to 2^-10 each (truncation)
    tol = 2.0**-7 * np.sqrt(K) * abs(alpha) * float(cp.abs(A).max() * cp.abs(B).max()) + 1e-5
    err = cp.abs(C.astype(cp.float64) - ref)
    worst = float(err.max()) if err.size else 0.0
    ok = bool(cp.isfinite(C).all()) and worst <= tol
    return ok, worst, tol, (A, B, C0, C)


def probe() -> dict:
    """wgmma_probe.cu with small integers (exact in TF32): the accumulators each thread gets back
    against wgmma.cuh's documented layouts, for each of the 4 steps of 8 along a swizzled row."""
    _, fn, _ = compile_kernel("wgmma_probe", ROOT / "tools" / "experiments" / "wgmma_probe.cu")
    rng = np.random.default_rng(1)
    result = {}
    for s in range(4):
        A = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        Bt = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        d = cp.zeros(128 * 32, cp.float32)
        fn((1, 1, 1), (128, 1, 1), (cp.asarray(A), cp.asarray(Bt), np.int32(s), d))
        got = cp.asnumpy(d).reshape(128, 32)
        D = A.astype(np.float64) @ Bt.T.astype(np.float64)  # 64 x 64
        want = np.empty((128, 32))
        for tid in range(128):
            w, g, t = tid // 32, tid % 32 // 4, tid % 4
            for i in range(32):
                j, e = i // 4, i % 4
                want[tid, i] = D[16 * w + g + 8 * (e // 2), 8 * j + 2 * t + e % 2]
        result[f"step_{s}"] = {"matches_documented_layout": bool((got == want).all()),
                               "mismatches": int((got != want).sum())}
        if not (got == want).all():
            np.savez_compressed(Path(ARGS.out) / f"probe_step{s}.npz", A=A, Bt=Bt, got=got)
    return result


ARGS = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=4096)
    a = ap.parse_args()
    global ARGS
    ARGS = a
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = a.size
    data = {"provenance": bench.provenance(f"python -m tools.experiments.exp_10_wgmma OUT_DIR --size {a.size}"),
            "nvrtc": nvrtc.getVersion(), "size": n, "rows": [], "cublas": []}
    save = lambda: (out / "exp_10_wgmma.json").write_text(json.dumps(data, indent=1))  # noqa: E731

    def cublas(when):
        f, t = bench.time_cublas(n, n, n), bench.time_cublas(n, n, n, tf32=True)
        data["cublas"].append({"when": when, "fp32_tflops": f.tflops(n, n, n), "tf32_tflops": t.tflops(n, n, n),
                               "tf32_median_ms": t.median_ms})
        print(data["cublas"][-1], flush=True)

    try:
        data["probe"] = probe()
    except Exception as e:
        data["probe"] = {"error": f"{type(e).__name__}: {e}"[:3000]}
        traceback.print_exc()
    print("probe", data["probe"], flush=True)
    save()
    cublas("before")
    rng = np.random.default_rng(0)
    for variant, cfg in CONFIGS:
        expr = "sgemm_wgmma<{}, {}, {}, {}>".format(*cfg)
        row = {"variant": variant, "config": expr, "shared_bytes": smem_bytes(*cfg[:3])}
        t0 = time.time()
        try:
            mod, fn, log = compile_kernel(expr, edits=VARIANTS[variant])
            row.update(regs=driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr),
                       local_bytes=driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn.ptr), log=log[-500:])
            run = launcher(fn, cfg)
            fails = []
            for (M, N, K) in SHAPES:
                ok, worst, tol, arrays = check(run, M, N, K, rng)
                if not ok:
                    fails.append({"shape": [M, N, K], "worst": worst, "tol": tol})
                    if len(fails) == 1:
                        np.savez_compressed(out / f"fail_{cfg[0]}_{cfg[1]}_{cfg[2]}_{cfg[3]}.npz",
                                            **{k: cp.asnumpy(v) for k, v in zip("AB0C", arrays)})
            row["verify"] = "pass" if not fails else fails
            if not fails:
                A, B, C = bench.device_operands(n, n, n)
                run(n, n, n, 1.0, A, B, 0.0, C)
                with bench.cublas_tf32():
                    ref = cp.matmul(A, B)
                row["max_rel_diff_vs_cublas_tf32"] = float(cp.abs(C - ref).max() / cp.abs(ref).max())
                t = bench.time_call(lambda: run(n, n, n, 1.0, A, B, 0.0, C), 10, 50)
                row.update(tflops=t.tflops(n, n, n), median_ms=t.median_ms, q1_ms=t.q1_ms, q3_ms=t.q3_ms)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:3000]
            traceback.print_exc()
        row["wall_s"] = round(time.time() - t0, 1)
        data["rows"].append(row)
        print({k: row.get(k) for k in ("variant", "config", "regs", "local_bytes", "verify", "tflops", "error")}, flush=True)
        save()
    cublas("after")
    save()


if __name__ == "__main__":
    main()

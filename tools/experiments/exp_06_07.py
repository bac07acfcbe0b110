"""Stages 06 (bank conflicts) and 07 (vectorized access) at 4096^3 on a GPU: stage 05 as kept, the
three 06 variants in the 8 x 8 configurations (where 05's shared reads conflict) and in 05's
default 16 x 4, and 07 in its default (seed 004's V2 shape) and a few other shapes, against a
measurement-only re-implementation of seed 004's V2 design (A transposed in shared memory, float4
copies: the design stage 07 follows), timed in the same run.
07 is also measured with its unchecked loop switched off (every tile through the checked copy),
to show what that loop is worth beside issuing all loads of a tile before its stores.
Raw CuPy launches, NVRTC options as the course's ("--std=c++17", "-lineinfo"); each kernel is
checked against cuBLAS, then timed three times, interleaved (median of 50 launches after 10
warm-ups each); registers, shared and local memory from the compiled function. A kernel that
does not compile or is wrong is recorded and skipped. After the timings (so that a fault cannot
cost them), each course kernel is checked again at odd shapes, beta != 0, one of them with
interior tiles and a last partial tile (K % BK != 0), and one with A, B and C one float past a
16-byte boundary (the kernels must fall back to 4-byte accesses).
Made results/stages_06_09_h200_2026-11-22/exp_06_07.json.
    python -m tools.experiments.exp_06_07 OUT.json"""
import json
import math
import sys
import time
import traceback
from pathlib import Path

import cupy as cp

from helpers.core.paths import KERNELS
from helpers.measure import bench
from helpers.run import backend

backend.use("gpu")
OPTIONS = ("--std=c++17", "-lineinfo")
S = 4096
T0 = time.time()

# Seed 004's V2 design, re-implemented for measurement only (not a course kernel): 128 x 128 x 8,
# 256 threads, A transposed in shared memory, 8 x 8 per thread in 4 x 4 quadrants, float4
# everywhere. No bounds checks: M, N, K multiples of 128 (and of 8). C = alpha A B + beta C, as
# the course kernels (seed 004 stores A B alone).
V2_REF = r"""
#define F4(p) (reinterpret_cast<float4*>(&(p))[0])
#define CF4(p) (reinterpret_cast<const float4*>(&(p))[0])
__global__ void __launch_bounds__(256) v2_ref(int M, int N, int K, float alpha, const float* __restrict__ a,
                                              const float* __restrict__ b, float beta, float* __restrict__ c) {
  constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  __shared__ __align__(16) float s_a[BK][BM];
  __shared__ __align__(16) float s_b[BK][BN];
  float r_a[TM], r_b[TN], r_c[TM][TN] = {};
  const int am = tid >> 1, ak = (tid & 1) << 2, bk = tid >> 5, bn = (tid & 31) << 2;
  const int gm = blockIdx.y * BM + am, gn = blockIdx.x * BN + bn;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 va = CF4(a[gm * K + k0 + ak]);
    const float4 vb = CF4(b[(k0 + bk) * N + gn]);
    s_a[ak][am] = va.x; s_a[ak + 1][am] = va.y; s_a[ak + 2][am] = va.z; s_a[ak + 3][am] = va.w;
    F4(s_b[bk][bn]) = vb;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      F4(r_a[0]) = F4(s_a[k][ty * 4]);
      F4(r_a[4]) = F4(s_a[k][ty * 4 + BM / 2]);
      F4(r_b[0]) = F4(s_b[k][tx * 4]);
      F4(r_b[4]) = F4(s_b[k][tx * 4 + BN / 2]);
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) r_c[m][n] += r_a[m] * r_b[n];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockIdx.y * BM + (i / 4) * (BM / 2) + ty * 4 + i % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float* p = &c[row * N + blockIdx.x * BN + h * (BN / 2) + tx * 4];
      float4 v = CF4(*p);
      v.x = alpha * r_c[i][4 * h] + beta * v.x;
      v.y = alpha * r_c[i][4 * h + 1] + beta * v.y;
      v.z = alpha * r_c[i][4 * h + 2] + beta * v.z;
      v.w = alpha * r_c[i][4 * h + 3] + beta * v.w;
      F4(*p) = v;
    }
  }
}
"""


def spec(label, file, kernel, cfg, source=None, course=True):
    """One kernel to measure: cfg = (BM, BN, BK, TM, TN[, extra template arguments])."""
    BM, BN, BK, TM, TN = cfg[:5]
    expr = f"{kernel}<{', '.join(map(str, cfg))}>" if kernel != "v2_ref" else kernel
    return {"label": label, "file": file, "expr": expr, "BM": BM, "BN": BN, "threads": BM * BN // (TM * TN),
            "source": source if source is not None else (KERNELS / file).read_text(), "course": course}


DEFAULT_05, EIGHT_8, EIGHT_16 = (128, 128, 16, 16, 4), (128, 128, 8, 8, 8), (128, 128, 16, 8, 8)
SPECS = []
for cfg in (DEFAULT_05, EIGHT_8, EIGHT_16):
    SPECS.append(spec(f"05 kept {cfg}", "05_2d_thread_tiling.cu", "sgemm_2d_thread_tiling", cfg))
for cfg in (EIGHT_8, EIGHT_16, DEFAULT_05):
    SPECS.append(spec(f"06 padded {cfg}", "06_padded.cu", "sgemm_padded", cfg))
    SPECS.append(spec(f"06 transposed_a {cfg}", "06_transposed_a.cu", "sgemm_transposed_a", cfg))
    SPECS.append(spec(f"06 swizzled {cfg}", "06_swizzled.cu", "sgemm_swizzled", cfg))
SPECS.append(spec(f"06 padded PAD=4 {EIGHT_8}", "06_padded.cu", "sgemm_padded", EIGHT_8 + (4,)))
for cfg in (EIGHT_8, EIGHT_16, (128, 256, 16, 8, 8), (256, 128, 16, 8, 8), (128, 64, 16, 8, 4), (128, 64, 8, 8, 8)):
    SPECS.append(spec(f"07 vectorized {cfg}", "07_vectorized.cu", "sgemm_vectorized", cfg))
SOURCE_07 = (KERNELS / "07_vectorized.cu").read_text()


def edit_07(old, new):
    """07's source with one edit, for a measurement (the edit must apply)."""
    assert SOURCE_07.count(old) == 1, f"07_vectorized.cu no longer contains {old!r} once"
    return SOURCE_07.replace(old, new)


# 07 with every tile copied by the checked loop (its loads still all issued before its stores).
CHECKED_07 = edit_07("const int kUnchecked = interior ? K / BK * BK : 0;", "const int kUnchecked = 0;")
# 07 without the 4 floats of padding after each row of the transposed A tile: its 4-byte stores
# conflict 2-way for BK = 8 (the first run measured 43.0 unpadded against 44.3 padded).
UNPADDED_07 = edit_07("float As[BK][BM + 4];", "float As[BK][BM];")
for cfg in (EIGHT_8, EIGHT_16):
    SPECS.append(spec(f"07, every tile checked {cfg}", "07_vectorized.cu (kUnchecked = 0)", "sgemm_vectorized",
                      cfg, source=CHECKED_07))
    SPECS.append(spec(f"07, As rows not padded {cfg}", "07_vectorized.cu (As[BK][BM])", "sgemm_vectorized",
                      cfg, source=UNPADDED_07))
SPECS.append(spec("seed 004 V2 design (reference, no bounds checks)", "inline V2_REF", "v2_ref", EIGHT_8,
                  source=V2_REF, course=False))

A, B, C = bench.device_operands(S, S, S)
REF = A @ B
results = {s["label"]: {k: s[k] for k in ("file", "expr")} for s in SPECS}
runs = {}


def grid(s, M, N):
    return (math.ceil(N / s["BN"]), math.ceil(M / s["BM"]), 1)


def args(M, N, K, alpha, a, b, beta, c):
    return (cp.int32(M), cp.int32(N), cp.int32(K), cp.float32(alpha), a, b, cp.float32(beta), c)


def write(path):
    Path(path).write_text(json.dumps({
        "provenance": bench.provenance("python -m tools.experiments.exp_06_07 OUT.json"),
        "size": S, "wall_seconds": round(time.time() - T0, 1), "kernels": results}, indent=1))


out = sys.argv[1] if len(sys.argv) > 1 else "exp_06_07.json"
broken = None  # a CUDA error that may have left the context unusable
for s in SPECS:  # compile and check at 4096^3
    r = results[s["label"]]
    try:
        mod = cp.RawModule(code=s["source"], options=OPTIONS, name_expressions=[s["expr"]])
        f = mod.get_function(s["expr"])
        r.update(regs=f.num_regs, shared_bytes=f.shared_size_bytes, local_bytes=f.local_size_bytes)
    except Exception as e:  # noqa: BLE001  (a compile error: record it, go on)
        r["error"] = f"compile: {type(e).__name__}: {e}"[:2000]
        print(f"{s['label']:55s} COMPILE ERROR {str(e).splitlines()[0] if str(e) else type(e).__name__}", flush=True)
        continue
    try:
        C.fill(1e30)
        f(grid(s, S, S), (s["threads"], 1, 1), args(S, S, S, 1, A, B, 0, C))
        rel = float(cp.max(cp.abs(C - REF)) / cp.max(cp.abs(REF)))
        r["max_rel_diff_vs_cublas"] = rel
        if not rel < 1e-5:
            r["error"] = f"wrong at {S}^3: max rel diff {rel:.3g}"
            print(f"{s['label']:55s} WRONG {rel:.3g}", flush=True)
            continue
    except Exception as e:  # noqa: BLE001
        r["error"] = f"launch: {type(e).__name__}: {e}"[:2000]
        print(f"{s['label']:55s} LAUNCH ERROR {e}", flush=True)
        broken = e
        break
    runs[s["label"]] = (f, s)
print(f"compiled and checked {len(runs)} of {len(SPECS)} kernels in {time.time() - T0:.0f} s", flush=True)

rows = {k: [] for k in runs}
rows["cuBLAS (cupy.matmul)"] = []
if broken is None:
    for _ in range(3):
        for k, (f, s) in runs.items():
            run = (lambda f=f, s=s: f(grid(s, S, S), (s["threads"], 1, 1), args(S, S, S, 1, A, B, 0, C)))
            rows[k].append(round(bench.time_call(run, 10, 50).tflops(S, S, S), 3))
        rows["cuBLAS (cupy.matmul)"].append(round(bench.time_call(lambda: cp.matmul(A, B, out=C), 10, 50).tflops(S, S, S), 3))
    for k, r in rows.items():
        if k in results:
            results[k]["tflops_three_runs"] = r
    results["cuBLAS (cupy.matmul)"] = {"tflops_three_runs": rows["cuBLAS (cupy.matmul)"]}
write(out)
print(f"\n{'kernel':55s} {'TFLOP/s, three runs':26s} regs  smem  local")
for k, r in rows.items():
    meta = results.get(k, {})
    print(f"{k:55s} {str(r):26s} {meta.get('regs', ''):>4} {meta.get('shared_bytes', ''):>5} {meta.get('local_bytes', ''):>6}")

# Odd shapes, beta != 0: every edge path (scalar fallbacks where K % 4 or N % 4 != 0), the unchecked
# loop followed by a partial tile (1024 x 1024 x 1036), and operands 4 bytes past a 16-byte boundary.
if broken is None:
    rng = cp.random.default_rng(1)

    def operand(rows, cols, shifted):
        """A random (rows, cols) array; shifted: a view one float into a larger one (misaligned)."""
        flat = rng.uniform(-1, 1, rows * cols + 1, dtype=cp.float32)
        return flat[1:].reshape(rows, cols) if shifted else flat[:-1].reshape(rows, cols)

    for M, N, K, shifted in ((1031, 1029, 1027, False), (1000, 1004, 1012, False), (7, 5, 3, False),
                             (1024, 1024, 1036, False), (1024, 1024, 1024, True)):
        a, b, c0 = operand(M, K, shifted), operand(K, N, shifted), operand(M, N, shifted)
        ref = 1.25 * (a @ b) - 0.75 * c0
        shape = f"{M}x{N}x{K}" + (", pointers + 4 bytes" if shifted else "")
        for k, (f, s) in runs.items():
            if not s["course"]:
                continue
            try:
                c = operand(M, N, shifted)
                c[...] = c0
                f(grid(s, M, N), (s["threads"], 1, 1), args(M, N, K, 1.25, a, b, -0.75, c))
                rel = float(cp.max(cp.abs(c - ref)) / cp.max(cp.abs(ref)))
                results[k].setdefault("odd_shapes_max_rel_diff", {})[shape] = rel
                if not rel < 1e-5:
                    print(f"WRONG at {shape}: {k}: {rel:.3g}", flush=True)
            except Exception:  # noqa: BLE001
                results[k].setdefault("odd_shapes_max_rel_diff", {})[shape] = traceback.format_exc()[-1500:]
                print(f"ERROR at {shape}: {k}", flush=True)
                broken = True
                break
        if broken:
            break
    bad = [k for k, r in results.items() if any(not (isinstance(v, float) and v < 1e-5)
                                                  for v in r.get("odd_shapes_max_rel_diff", {}).values())]
    print(f"odd shapes: {'all course kernels agree with cuBLAS' if not bad else 'FAILED: ' + ', '.join(bad)}")
write(out)
print(f"wrote {out} ({time.time() - T0:.0f} s)")

"""Stages 08 (warp tiling) and 09 (double buffering; multi-stage cp.async pipeline) on a GPU:
several configurations of each, with stage 07 and cuBLAS in the same run. Every kernel is a raw
CuPy RawModule launch (NVRTC, options --std=c++17 -lineinfo), checked against cuBLAS at 4096^3
before it is timed; then three interleaved timings (median of 50 launches each) of every
kernel and of cuBLAS. Per kernel: registers, local memory (spills) and blocks per SM from the
driver. A kernel that fails to compile, launch or verify is recorded with its error and skipped.
Besides the course kernels as they are, a few measurement-only variants (one edit of a course
kernel's source each, labelled "variant:"): 08 and 07 at BK = 8 with each other's address code
(08's lane offsets written out where used; 07's named as in 08), 08 at BK = 16 with its unchecked
loads addressed from pointers advanced a tile at a time, 09 without the unchecked loop,
with one tile a pass instead of two (or STAGES) so that the buffer index is computed per tile,
and with the values of one step k in registers instead of two. After the timings (so that a fault cannot cost them),
every kernel is checked again at odd shapes with beta != 0: edges with K % 4 and N % 4 != 0, the
unchecked loop followed by a partial tile, and A, B, C one float past a 16-byte boundary (the
fallback to 4-byte accesses).
With --sweep, the fastest 08, 09 double-buffering and 09 async-copy configurations and cuBLAS
are also timed at square sizes 512 to 8192.
Made results/stages_06_09_h200_2026-11-22/exp_08_09.json and exp_08_09_b.json.
    python -m tools.experiments.exp_08_09 OUT.json [--sweep]"""
from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path

import cupy as cp

from helpers.core.paths import ROOT
from helpers.measure import bench
from helpers.run import backend

backend.use("gpu")
OPTIONS = ("--std=c++17", "-lineinfo")
S = 4096
SIZES = (512, 1024, 2048, 4096, 6144, 8192)
ODD_SHAPES = ((1031, 1029, 1027, False), (1000, 1004, 1012, False), (7, 5, 3, False),
              (1024, 1024, 1036, False), (1024, 1024, 1024, True))  # True: pointers 4 bytes past 16

K07 = ("07", "kernels/07_vectorized.cu", "sgemm_vectorized")
K08 = ("08", "kernels/08_warp_tiling.cu", "sgemm_warp_tiling")
K09 = ("09db", "kernels/09_double_buffering.cu", "sgemm_double_buffering")
K09A = ("09async", "kernels/09_async_copy.cu", "sgemm_async_copy")


def edit(kernel, edits):
    """The kernel's source with some (old, new) edits, each of which must apply exactly once."""
    text = (ROOT / kernel[1]).read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"{kernel[1]} no longer contains {old!r} once"
        text = text.replace(old, new)
    return text


# Measurement-only variants of 09 (not course kernels): what each of its choices is worth.
DB_ALL_CHECKED = [("numUnchecked = interior ? K / BK : 0;", "numUnchecked = 0;")]
DB_ONE_TILE_A_PASS = [("""  for (; t + 2 < numUnchecked; t += 2) {
    load_tiles((t + 1) * BK, false);  // in flight during the BK steps of tiles t
    multiply_tiles(0, true);
    load_tiles((t + 2) * BK, false);
    multiply_tiles(1, true);
  }""", """  for (; t + 1 < numUnchecked; ++t) {
    load_tiles((t + 1) * BK, false);
    multiply_tiles(t % 2, true);
  }""")]
DB_ONE_STEP_IN_REGISTERS = [("""      if (k + 1 < BK) {
        load_values(s, k + 1, (k + 1) % 2);
      } else if (more) {
        // Buffer 1-s was last read during the previous tiles, before the barrier that ended them.
        store_tiles(1 - s);
        __syncthreads();  // the next tiles are complete before anyone reads them
        load_values(1 - s, 0, 0);  // (BK is even: slot (k+1) % 2 == 0)
      }""", """      load_values(s, k, k % 2);
      if (k + 1 == BK && more) {
        store_tiles(1 - s);
        __syncthreads();
      }"""), ("""  __syncthreads();  // tiles 0 are complete before anyone reads them
  load_values(0, 0, 0);""", """  __syncthreads();""")]
AC_ONE_TILE_A_PASS = [("""  for (; t + 2 * STAGES <= numUnchecked; t += STAGES) {
#pragma unroll
    for (int j = 0; j < STAGES; ++j) multiply_tiles(t + j, j, true, false);
  }""", """  for (; t + STAGES < numUnchecked; ++t) multiply_tiles(t, t % STAGES, true, false);""")]

# 08 at BK = 8 with its lane offsets written out where used: the compiler then increments the load
# pointers from tile to tile as in 07 (561 instructions a tile, no LDC), where with rowBase and
# colBase it recomputes the addresses from the parameters (563, two LDC before the loads). And 07
# with 08's named offsets (563, the LDCs): which of layout and address code makes 08 slower at BK = 8.
W08_INLINE_OFFSETS = [
    ("&As[k][rowBase + g * 4 * LANE_ROWS]", "&As[k][g * 4 * LANE_ROWS + warpRow * WM + laneRow * 4]"),
    ("&Bs[k][colBase + g * 4 * LANE_COLS]", "&Bs[k][g * 4 * LANE_COLS + warpCol * WN + laneCol * 4]"),
    ("const int row = blockRow + rowBase + (i / 4) * 4 * LANE_ROWS + i % 4;",
     "const int row = blockRow + (i / 4) * 4 * LANE_ROWS + warpRow * WM + laneRow * 4 + i % 4;"),
    ("const int col = blockCol + colBase + g * 4 * LANE_COLS;",
     "const int col = blockCol + g * 4 * LANE_COLS + warpCol * WN + laneCol * 4;")]
V07_NAMED_OFFSETS = [
    ("const int threadRow = tid / THREAD_COLS;  // rows 4*threadRow .. +3 of each band of 4*THREAD_ROWS\n",
     "const int threadRow = tid / THREAD_COLS;\n  const int rowBase = threadRow * 4, colBase = threadCol * 4;\n"),
    ("&As[k][g * 4 * THREAD_ROWS + threadRow * 4]", "&As[k][rowBase + g * 4 * THREAD_ROWS]"),
    ("&Bs[k][g * 4 * THREAD_COLS + threadCol * 4]", "&Bs[k][colBase + g * 4 * THREAD_COLS]"),
    ("const int row = blockRow + (i / 4) * 4 * THREAD_ROWS + threadRow * 4 + i % 4;",
     "const int row = blockRow + rowBase + (i / 4) * 4 * THREAD_ROWS + i % 4;"),
    ("const int col = blockCol + g * 4 * THREAD_COLS + threadCol * 4;",
     "const int col = blockCol + colBase + g * 4 * THREAD_COLS;")]

# 08 with its unchecked loads addressed from the tiles' corners, pointers advanced from tile to tile
# (no LDC, no address recomputed from k0: 1120 instructions a tile at 128 x 128 x 16, 125
# registers; at BK = 8 it takes 129 registers, one block per SM). An edit of the copy shared with
# 07: if it pays, it belongs in 07 too.
W08_CORNER_POINTERS = [
    ("      va[i] = !checked ? *reinterpret_cast<const float4*>(p) : row < M ? load4(p, K - col, alignedA) : zero;",
     "      va[i] = !checked ? *reinterpret_cast<const float4*>(&At[e / (BK / 4) * K + e % (BK / 4) * 4])\n"
     "                       : row < M ? load4(p, K - col, alignedA) : zero;"),
    ("      vb[i] = !checked ? *reinterpret_cast<const float4*>(p) : row < K ? load4(p, N - col, alignedB) : zero;",
     "      vb[i] = !checked ? *reinterpret_cast<const float4*>(&Bt[e / (BN / 4) * N + e % (BN / 4) * 4])\n"
     "                       : row < K ? load4(p, N - col, alignedB) : zero;"),
    ("  for (; k0 < kUnchecked; k0 += BK) {", "  for (; k0 < kUnchecked; k0 += BK, At += BK, Bt += BK * N) {"),
    ("  float acc[TM][TN] = {};  // (TM, TN) results in registers\n",
     "  float acc[TM][TN] = {};  // (TM, TN) results in registers\n"
     "  const float* At = A + blockRow * K;  // the corners of the tiles at k0\n  const float* Bt = B + blockCol;\n")]

E88, E816, W816 = (128, 128, 8, 32, 64, 8, 8), (128, 128, 8, 64, 64, 8, 16), (128, 256, 8, 64, 64, 8, 16)
# (kernel, BM, BN, threads, template arguments[, label suffix, source]).
# 08/09: (BM, BN, BK, WM, WN, TM, TN[, STAGES][, MIN_BLOCKS]).
CANDIDATES = [
    (K07, 128, 128, 256, (128, 128, 8, 8, 8)),
    (K07, 128, 128, 256, (128, 128, 16, 8, 8)),
    # 08: 8 x 8 results with 256 threads, and 8 x 16 with 128 (one 128 x 128 tile) or 256 threads
    (K08, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8)),
    (K08, 128, 128, 256, (128, 128, 16, 32, 64, 8, 8)),
    (K08, 128, 128, 256, (128, 128, 8, 64, 32, 8, 8)),
    (K08, 128, 128, 128, (128, 128, 8, 64, 64, 8, 16)),
    (K08, 128, 128, 128, (128, 128, 16, 64, 64, 8, 16)),
    (K08, 128, 256, 256, (128, 256, 8, 64, 64, 8, 16)),
    (K08, 128, 256, 256, (128, 256, 16, 64, 64, 8, 16)),
    (K08, 256, 128, 256, (256, 128, 8, 64, 64, 16, 8)),
    # 09, register-staged double buffering
    (K09, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 2)),
    (K09, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 1)),
    (K09, 128, 128, 256, (128, 128, 16, 32, 64, 8, 8, 2)),
    (K09, 128, 128, 256, (128, 128, 16, 32, 64, 8, 8, 1)),
    (K09, 128, 128, 256, (128, 128, 8, 64, 32, 8, 8, 2)),
    (K09, 128, 128, 128, (128, 128, 8, 64, 64, 8, 16, 2)),
    (K09, 128, 128, 128, (128, 128, 16, 64, 64, 8, 16, 2)),
    (K09, 128, 256, 256, (128, 256, 8, 64, 64, 8, 16, 1)),
    (K09, 256, 128, 256, (256, 128, 8, 64, 64, 16, 8, 1)),
    # 09, cp.async pipeline with STAGES stages
    (K09A, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 2, 2)),
    (K09A, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 3, 2)),
    (K09A, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 4, 2)),
    (K09A, 128, 128, 256, (128, 128, 8, 32, 64, 8, 8, 3, 1)),
    (K09A, 128, 128, 256, (128, 128, 16, 32, 64, 8, 8, 2, 2)),
    (K09A, 128, 128, 128, (128, 128, 8, 64, 64, 8, 16, 2, 2)),
    (K09A, 128, 128, 128, (128, 128, 8, 64, 64, 8, 16, 3, 2)),
    (K09A, 128, 128, 128, (128, 128, 8, 64, 64, 8, 16, 4, 2)),
    (K09A, 128, 256, 256, (128, 256, 8, 64, 64, 8, 16, 2, 1)),
    (K09A, 128, 256, 256, (128, 256, 8, 64, 64, 8, 16, 3, 1)),
    (K09A, 256, 128, 256, (256, 128, 8, 64, 64, 16, 8, 3, 1)),
    # measurement-only variants
    (K08, 128, 128, 256, E88, "variant: lane offsets written out where used", edit(K08, W08_INLINE_OFFSETS)),
    (K07, 128, 128, 256, (128, 128, 8, 8, 8), "variant: offsets named as in 08", edit(K07, V07_NAMED_OFFSETS)),
    (K08, 128, 128, 256, (128, 128, 16, 32, 64, 8, 8), "variant: loads from tile-corner pointers",
     edit(K08, W08_CORNER_POINTERS)),
    (K09, 128, 128, 256, E88 + (2,), "variant: every tile checked", edit(K09, DB_ALL_CHECKED)),
    (K09, 128, 128, 256, E88 + (2,), "variant: one tile a pass", edit(K09, DB_ONE_TILE_A_PASS)),
    (K09, 128, 256, 256, W816 + (1,), "variant: one tile a pass", edit(K09, DB_ONE_TILE_A_PASS)),
    (K09, 128, 128, 256, E88 + (2,), "variant: one step's values in registers", edit(K09, DB_ONE_STEP_IN_REGISTERS)),
    (K09, 128, 256, 256, W816 + (1,), "variant: one step's values in registers", edit(K09, DB_ONE_STEP_IN_REGISTERS)),
    (K09A, 128, 128, 256, E88 + (3, 2), "variant: one tile a pass", edit(K09A, AC_ONE_TILE_A_PASS)),
    (K09A, 128, 128, 128, E816 + (4, 2), "variant: one tile a pass", edit(K09A, AC_ONE_TILE_A_PASS)),
]


def include_options() -> tuple[str, ...]:
    """-I for a directory holding <cuda_pipeline.h> (09 async), in case NVRTC's search path lacks it."""
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), cp.cuda.get_cuda_path(), "/usr/local/cuda"]
    dirs = [Path(r) / "include" for r in roots if r]
    try:
        import nvidia
        for base in nvidia.__path__:
            dirs += sorted(Path(base).glob("*/include")) + sorted(Path(base).glob("*/*/include"))
    except ImportError:
        pass
    found = [d for d in dirs if (d / "cuda_pipeline.h").exists()]
    return (f"-I{found[0]}",) if found else ()


class Candidate:
    def __init__(self, kernel, BM, BN, threads, targs, variant=None, source=None):
        (self.stage, self.file, name) = kernel
        self.expr = f"{name}<{', '.join(map(str, targs))}>"
        self.BM, self.BN, self.threads = BM, BN, threads
        self.variant, self.source = variant, source
        self.label = f"{self.stage} {self.expr}" + (f" ({variant})" if variant else "")
        self.fn, self.error, self.info = None, None, {}

    def grid(self, M, N):
        return (-(-N // self.BN), -(-M // self.BM))

    def build(self, extra):
        t0 = time.perf_counter()
        try:
            code = self.source if self.source is not None else (ROOT / self.file).read_text()
            mod = cp.RawModule(code=code, options=OPTIONS + extra, name_expressions=[self.expr])
            self.fn = mod.get_function(self.expr)
            blocks = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(self.fn.kernel.ptr, self.threads, 0)
            self.info = {"regs": int(self.fn.num_regs), "local_bytes": int(self.fn.local_size_bytes),
                         "static_smem": int(self.fn.shared_size_bytes), "blocks_per_sm": int(blocks),
                         "compile_s": round(time.perf_counter() - t0, 1)}
        except Exception as e:  # a compile or load error: record it, go on
            self.error = f"build: {type(e).__name__}: {str(e)[-1500:]}"

    def launcher(self, M, N, K, A, B, C, alpha=1.0, beta=0.0):
        args = (cp.int32(M), cp.int32(N), cp.int32(K), cp.float32(alpha), A, B, cp.float32(beta), C)
        grid, block = self.grid(M, N), (self.threads,)
        return lambda: self.fn(grid, block, args)

    def check(self, M, N, K, A, B, C, ref) -> bool:
        try:
            C.fill(1e30)  # finite poison: beta = 0 multiplies it, an element never written keeps it
            self.launcher(M, N, K, A, B, C)()
            cp.cuda.Device().synchronize()
            rel = float(cp.max(cp.abs(C - ref)) / cp.max(cp.abs(ref)))
            if not rel < 1e-5:
                self.error = f"wrong at {M}x{N}x{K}: largest difference {rel:.3g} of the largest element"
                return False
            self.info.setdefault("max_rel_diff", {})[str(M)] = rel
            return True
        except Exception as e:
            self.error = f"launch at {M}x{N}x{K}: {type(e).__name__}: {str(e)[-800:]}"
            return False


def time_rounds(runs: dict, M, N, K, rounds=3) -> dict:
    """Interleaved rounds: every entry of `runs` (label -> zero-argument launch) once per round."""
    out = {k: [] for k in runs}
    for _ in range(rounds):
        for k, f in runs.items():
            out[k].append(round(bench.time_call(f, 10, 50).tflops(M, N, K), 3))
    return out


def median(xs):
    return sorted(xs)[len(xs) // 2]


def odd_shapes(cands) -> bool:
    """alpha = 1.25, beta = -0.75 at ODD_SHAPES; records the largest relative difference per shape.
    False if a launch failed (the context may be unusable)."""
    rng = cp.random.default_rng(1)

    def operand(rows, cols, shifted):
        """A random (rows, cols) array; shifted: a view one float into a larger one (misaligned)."""
        flat = rng.uniform(-1, 1, rows * cols + 1, dtype=cp.float32)
        return flat[1:].reshape(rows, cols) if shifted else flat[:-1].reshape(rows, cols)

    for M, N, K, shifted in ODD_SHAPES:
        a, b, c0 = operand(M, K, shifted), operand(K, N, shifted), operand(M, N, shifted)
        ref = 1.25 * (a @ b) - 0.75 * c0
        shape = f"{M}x{N}x{K}" + (", pointers + 4 bytes" if shifted else "")
        for c in cands:
            try:
                out = operand(M, N, shifted)
                out[...] = c0
                c.launcher(M, N, K, a, b, out, 1.25, -0.75)()
                rel = float(cp.max(cp.abs(out - ref)) / cp.max(cp.abs(ref)))
                c.info.setdefault("odd_shapes_max_rel_diff", {})[shape] = rel
                if not rel < 1e-5:
                    print(f"WRONG at {shape}: {c.label}: {rel:.3g}", flush=True)
            except Exception:  # noqa: BLE001
                c.info.setdefault("odd_shapes_max_rel_diff", {})[shape] = traceback.format_exc()[-1500:]
                print(f"ERROR at {shape}: {c.label}", flush=True)
                return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sweep", action="store_true", help="also time the best configurations at sizes 512..8192")
    opts = ap.parse_args()
    t_start = time.perf_counter()
    extra = include_options()
    print(f"extra NVRTC options: {extra or 'none'}", flush=True)
    cands = [Candidate(*c) for c in CANDIDATES]
    for c in cands:
        c.build(extra if c.stage == "09async" else ())
        print(f"{c.label:100s} {c.info or c.error}", flush=True)

    A, B, C = bench.device_operands(S, S, S)
    ref = A @ B
    ok = [c for c in cands if c.fn is not None and c.check(S, S, S, A, B, C, ref)]
    for c in cands:
        if c.error:
            print(f"FAILED {c.label}: {c.error}", flush=True)
    Cb = cp.empty_like(C)
    runs = {"cublas": lambda: cp.matmul(A, B, out=Cb)}
    runs.update({c.label: c.launcher(S, S, S, A, B, C) for c in ok})
    tf = time_rounds(runs, S, S, S)
    cublas = median(tf["cublas"])

    def rows():
        out = []
        for c in cands:
            row = {"stage": c.stage, "file": c.file, "expr": c.expr, "variant": c.variant, "block": c.threads,
                   "grid_tile": [c.BM, c.BN], **c.info, "error": c.error}
            if c.label in tf:
                row.update({"tflops_three_runs": tf[c.label], "tflops": median(tf[c.label]),
                            "pct_cublas": round(100 * median(tf[c.label]) / cublas, 1)})
            out.append(row)
        return out

    print(f"\n{'kernel':100s} {'TFLOP/s (3 runs)':>26s} {'%cuBLAS':>8s} regs blk/SM local")
    print(f"{'cuBLAS (cupy.matmul, TF32 off)':100s} {str(tf['cublas']):>26s} {100.0:8.1f}")
    for r, c in zip(rows(), cands):
        if "tflops" in r:
            print(f"{c.label:100s} {str(r['tflops_three_runs']):>26s} {r['pct_cublas']:8.1f} "
                  f"{r['regs']:4d} {r['blocks_per_sm']:6d} {r['local_bytes']:5d}", flush=True)
    out = {"provenance": bench.provenance("python -m tools.experiments.exp_08_09 OUT.json"
                                          + (" --sweep" if opts.sweep else "")),
           "size": S, "nvrtc_options": list(OPTIONS), "extra_options_09async": list(extra),
           "cublas_tflops_three_runs": tf["cublas"], "cublas_tflops": cublas}

    if opts.sweep:
        best = {}
        for stage in ("08", "09db", "09async"):
            timed = [c for c in ok if c.stage == stage and c.variant is None and c.label in tf]
            if timed:
                best[stage] = max(timed, key=lambda c: median(tf[c.label]))
        sweep = []
        for n in SIZES:
            A2, B2, C2 = bench.device_operands(n, n, n)
            ref2 = A2 @ B2
            C2b = cp.empty_like(C2)
            runs = {"cublas": lambda A2=A2, B2=B2, C2b=C2b: cp.matmul(A2, B2, out=C2b)}
            for stage, c in best.items():
                if c.check(n, n, n, A2, B2, C2, ref2):
                    runs[c.label] = c.launcher(n, n, n, A2, B2, C2)
                else:
                    print(f"FAILED at {n}: {c.label}: {c.error}", flush=True)
            t = time_rounds(runs, n, n, n)
            row = {"size": n, "tflops_three_runs": t, "tflops": {k: median(v) for k, v in t.items()}}
            sweep.append(row)
            print(f"{n:5d} " + "  ".join(f"{k}: {median(v):.2f}" for k, v in t.items()), flush=True)
            del A2, B2, C2, C2b, ref2
            cp.get_default_memory_pool().free_all_blocks()
        out["sweep"] = {"kernels": {s: c.label for s, c in best.items()}, "rows": sweep}

    out["rows"] = rows()
    out["wall_s"] = round(time.perf_counter() - t_start, 1)
    Path(opts.out).write_text(json.dumps(out, indent=1))  # the timings are safe before the odd shapes
    fine = odd_shapes(ok)
    bad = [c.label for c in ok if any(not (isinstance(v, float) and v < 1e-5)
                                      for v in c.info.get("odd_shapes_max_rel_diff", {}).values())]
    print(f"odd shapes: {'all kernels agree with cuBLAS' if fine and not bad else 'FAILED: ' + ', '.join(bad)}")
    out["rows"] = rows()
    out["wall_s"] = round(time.perf_counter() - t_start, 1)
    Path(opts.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {opts.out} in {out['wall_s']} s")


if __name__ == "__main__":
    main()

"""`python -m helpers sweep`: the library call timed as a user makes it, beside cuBLAS, on a GPU.

At each shape, on fresh random data (U[-1, 1)):
- sgemm(A, B) and sgemm(A, B, precision="tf32") as called: a new output from CuPy's pool each call, the plan
  looked up, the operands checked, the launches enqueued; and with beta = 1 in place, sgemm(A, B, C, beta=1.0,
  out=C), as BLAS's gemm updates C;
- cuBLAS in the same process: cupy.matmul(A, B, out=...) in FP32 (TF32 off) and in TF32 (CuPy's compute type
  switched to TF32), and with beta = 1 cublasGemmEx into C (FP32, or FAST_TF32);
- 09_double_buffering at its default (the fixed best FP32 kernel), and at small shapes cupy.matmul(A, B) with a new
  output, the call that launch-bound sizes are judged against.
Each is verified first (FP32 against cuBLAS FP32; TF32's error against a float64 product beside cuBLAS TF32's
error on the same data), then timed with CUDA events around each call (cupyx.profiler.benchmark: the host's
work before the launch is inside the events, as a user timing a call sees it), in `rounds` interleaved rounds
of `n_repeat` calls; a time is the median of the rounds' medians. The output of the last timed call is verified
too (a kernel that skipped repeated work would show). A shape passed as held out (--held-out) is marked so,
and the targets of issue 31 are judged on those shapes where there are any.
"""

from __future__ import annotations

import contextlib
import math
import statistics

import numpy as np

from helpers.core import paths, progress, stages
from helpers.core.errors import InputError, VerificationError
from helpers.measure import bench
from helpers.measure.dispatch_table import SWEEP_SHAPES
from helpers.run import backend, dispatch, dispatch_tf32, sgemm as library

# The dispatcher's sweep shapes, and the issue's: 256^3 (launch-bound), 8192^3, and a small C with a long K.
DEFAULT_SHAPES = SWEEP_SHAPES + ((256, 256, 256), (8192, 8192, 8192), (512, 512, 16384), (1000, 1000, 8000))
MATMUL_FLOPS = 2 * 1024**3     # cupy.matmul with a new output is timed up to this size (launch-bound shapes)
TF32_ERROR_RATIO = 1.2         # the target: TF32's error at most this times cuBLAS TF32's
CALLS = ("sgemm", "cublas")


def _timing(fn, n_warmup: int, n_repeat: int) -> tuple[float, float]:
    """(median GPU ms between CUDA events around each call, median host µs inside the call)."""
    from cupyx.profiler import benchmark
    r = benchmark(fn, (), n_warmup=n_warmup, n_repeat=n_repeat)
    return float(np.median(r.gpu_times[0]) * 1e3), float(np.median(r.cpu_times) * 1e6)


def cublas_gemm(A, B, C, alpha: float, beta: float, tf32: bool) -> None:
    """C = alpha A B + beta C by cublasGemmEx in place (row-major, as C^T = B^T A^T), FP32 or FAST_TF32."""
    import cupy as cp
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas
    handle = device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    (M, K), N = A.shape, B.shape[1]
    a, b = np.array(alpha, np.float32), np.array(beta, np.float32)
    compute = cublas.CUBLAS_COMPUTE_32F_FAST_TF32 if tf32 else cublas.CUBLAS_COMPUTE_32F
    f32 = 0   # CUDA_R_32F
    cublas.gemmEx(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, N, M, K, a.ctypes.data, B.data.ptr, f32, N,
                  A.data.ptr, f32, K, b.ctypes.data, C.data.ptr, f32, N, compute, cublas.CUBLAS_GEMM_DEFAULT)


def _errors(out, ref64, scale: float) -> dict:
    import cupy as cp
    e = cp.abs(out.astype(cp.float64) - ref64) / scale
    return {"rms": float(cp.sqrt(cp.mean(e * e))), "max": float(e.max())}


class _Calls:
    """The timed calls of one shape, with what the last of each gave (verified after its timing)."""

    def __init__(self, A, B, C0):
        import cupy as cp
        self.cp, self.A, self.B, self.C0 = cp, A, B, C0
        self.last, self.count = {}, {}
        M, N = A.shape[0], B.shape[1]
        self.out = cp.empty((M, N), cp.float32)
        self.C = {key: C0.copy() for key in ((p, who) for p in ("fp32", "tf32") for who in CALLS)}

    def fn(self, precision: str, beta: int, who: str):
        cp, A, B = self.cp, self.A, self.B
        key = (precision, beta, who)
        self.count.setdefault(key, 0)   # counted over every round: C keeps what each round added
        if beta == 0 and who == "sgemm":
            def call():
                self.last[key] = library.sgemm(A, B, precision=precision)
        elif beta == 0:
            def call():
                cp.matmul(A, B, out=self.out)
        elif who == "sgemm":
            C = self.C[(precision, who)]

            def call():
                library.sgemm(A, B, C, beta=1.0, precision=precision, out=C)
                self.count[key] += 1
        else:
            C = self.C[(precision, who)]

            def call():
                cublas_gemm(A, B, C, 1.0, 1.0, precision == "tf32")
                self.count[key] += 1
        return call

    def context(self, precision: str, who: str):
        return bench.cublas_tf32() if precision == "tf32" and who == "cublas" else contextlib.nullcontext()


def _verify_shape(A, B, C0, M, N, K) -> tuple[dict, object, object]:
    """Each call verified once before any timing: FP32 against cuBLAS FP32, TF32's errors against float64 beside
    cuBLAS TF32's. Returns (the row's verification fields, A B in float64, cuBLAS FP32's A B)."""
    cp = __import__("cupy")
    ref64 = cp.matmul(A.astype(cp.float64), B.astype(cp.float64))
    scale = float(cp.sqrt(cp.mean(ref64 * ref64))) or 1.0
    ref32 = cp.matmul(A, B)
    big = float(cp.max(cp.abs(ref32))) or 1.0
    fields = {}
    for precision in ("fp32", "tf32"):
        for beta in (0.0, 1.0):
            mine = library.sgemm(A, B, C0 if beta else None, beta=beta, precision=precision)
            rel = float(cp.max(cp.abs(mine - (ref32 + (C0 if beta else 0))))) / big
            if not rel < bench.AGREEMENT[precision]:   # NaN fails too
                label = library.plan(M, N, K, bool(beta), precision, "cupy").choice.label()
                raise VerificationError(f"sgemm ({precision}, beta = {beta:g}: {label}) differs from cuBLAS FP32 at "
                                        f"{M}x{N}x{K}: largest difference {rel:.2e} of the largest element; not timing it.")
            fields[f"{precision}_beta{beta:g}_max_rel_diff_vs_cublas_fp32"] = rel
    with bench.cublas_tf32():
        theirs = cp.matmul(A, B)
    mine = library.sgemm(A, B, precision="tf32")
    fields["tf32_errors"] = {"sgemm": _errors(mine, ref64, scale), "cublas_tf32": _errors(theirs, ref64, scale),
                             "fp32_sgemm": _errors(library.sgemm(A, B), ref64, scale),
                             "note": "|C - A B in float64| / RMS(A B in float64), U[-1, 1) data"}
    e = fields["tf32_errors"]
    fields["tf32_error_ratio"] = e["sgemm"]["rms"] / e["cublas_tf32"]["rms"]
    return fields, ref64, ref32


def _after_timing(calls: _Calls, ref32, M: int, N: int, K: int) -> None:
    """The timed calls' own results: beta = 0's last output, and beta = 1's C after every call added A B once."""
    cp = calls.cp
    big = float(cp.max(cp.abs(ref32))) or 1.0
    for (precision, beta, who), out in calls.last.items():
        rel = float(cp.max(cp.abs(out - ref32))) / big
        if not rel < bench.AGREEMENT[precision]:
            raise VerificationError(f"the last timed sgemm ({precision}) at {M}x{N}x{K} differs from cuBLAS FP32 by "
                                    f"{rel:.2e} of the largest element: its timing is not reported.")
    for (precision, beta, who), n in calls.count.items():
        if n:
            C = calls.C[(precision, who)]
            want = calls.C0.astype(cp.float64) + n * ref32.astype(cp.float64)
            rel = float(cp.max(cp.abs(C - want))) / (float(cp.max(cp.abs(want))) or 1.0)
            if not rel < n * bench.AGREEMENT[precision]:
                raise VerificationError(f"after {n} timed calls of {who} ({precision}, beta = 1) at {M}x{N}x{K}, C is "
                                        f"not C0 + {n} A B (largest difference {rel:.2e}): its timing is not reported.")


def _measure_shape(M: int, N: int, K: int, n_repeat: int, rounds: int, seed: int) -> dict:
    import cupy as cp
    rng = cp.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
    C0 = rng.uniform(-1, 1, (M, N), dtype=cp.float32)
    fields, ref64, ref32 = _verify_shape(A, B, C0, M, N, K)
    del ref64
    calls = _Calls(A, B, C0)
    fixed = stages.variant("09_double_buffering")
    times: dict[str, list] = {}
    host: dict[str, list] = {}
    small = 2.0 * M * N * K <= MATMUL_FLOPS
    for _ in range(rounds):
        for beta in (0, 1):
            for precision in ("fp32", "tf32"):
                for who in CALLS:
                    key = f"{precision}_beta{beta}_{who}"
                    with calls.context(precision, who):
                        ms, us = _timing(calls.fn(precision, beta, who), 5, n_repeat)
                    times.setdefault(key, []).append(ms)
                    host.setdefault(key, []).append(us)
        times.setdefault("fixed", []).append(bench.time_variant(fixed, M, N, K, n_warmup=5, n_repeat=n_repeat)[0].median_ms)
        if small:
            ms, us = _timing(lambda: cp.matmul(A, B), 5, n_repeat)
            times.setdefault("cupy_matmul", []).append(ms)
            host.setdefault("cupy_matmul", []).append(us)
    _after_timing(calls, ref32, M, N, K)
    ms = {k: statistics.median(v) for k, v in times.items()}
    us = {k: statistics.median(v) for k, v in host.items()}
    flops = 2.0 * M * N * K
    fp32, tf32 = library.plan(M, N, K, precision="fp32", kind="cupy").choice, \
        library.plan(M, N, K, precision="tf32", kind="cupy").choice
    pct = lambda p, b: 100 * ms[f"{p}_beta{b}_cublas"] / ms[f"{p}_beta{b}_sgemm"]
    row = {"M": M, "N": N, "K": K,
           # FP32, beta = 0 (the keys of the dispatcher's earlier sweeps, read by dispatch_table.load_sweep)
           "choice": fp32.label(), "source": fp32.source, "why": fp32.why,
           "dispatcher_ms": ms["fp32_beta0_sgemm"], "dispatcher_tflops": flops / ms["fp32_beta0_sgemm"] / 1e9,
           "cublas_ms": ms["fp32_beta0_cublas"], "cublas_tflops": flops / ms["fp32_beta0_cublas"] / 1e9,
           "fixed_ms": ms["fixed"], "fixed_tflops": flops / ms["fixed"] / 1e9,
           "pct_cublas": pct("fp32", 0), "fixed_pct_cublas": 100 * ms["fp32_beta0_cublas"] / ms["fixed"],
           "max_rel_diff_vs_cublas": fields["fp32_beta0_max_rel_diff_vs_cublas_fp32"],
           "fp32_beta1": {"sgemm_ms": ms["fp32_beta1_sgemm"], "cublas_ms": ms["fp32_beta1_cublas"],
                          "pct_cublas": pct("fp32", 1)},
           "tf32": {"choice": tf32.label(), "source": tf32.source, "why": tf32.why, "estimate_ms": tf32.estimate_ms,
                    "sgemm_ms": ms["tf32_beta0_sgemm"], "sgemm_tflops": flops / ms["tf32_beta0_sgemm"] / 1e9,
                    "cublas_ms": ms["tf32_beta0_cublas"], "cublas_tflops": flops / ms["tf32_beta0_cublas"] / 1e9,
                    "pct_cublas": pct("tf32", 0), "error_ratio": fields["tf32_error_ratio"],
                    "errors": fields["tf32_errors"],
                    "beta1": {"sgemm_ms": ms["tf32_beta1_sgemm"], "cublas_ms": ms["tf32_beta1_cublas"],
                              "pct_cublas": pct("tf32", 1)}},
           "host_us_per_call": {k: v for k, v in us.items() if k.endswith("beta0_sgemm") or k.endswith("beta0_cublas")
                                or k == "cupy_matmul"},
           "rounds_ms": times,
           "verification": {k: v for k, v in fields.items() if k.endswith("_vs_cublas_fp32")}}
    if small:
        row["cupy_matmul_ms"] = ms["cupy_matmul"]
        row["vs_cupy_matmul"] = ms["fp32_beta0_sgemm"] / ms["cupy_matmul"]
    return row


def sweep(shapes=DEFAULT_SHAPES, held_out=(), n_repeat: int = 30, rounds: int = 3, command: str | None = None) -> dict:
    """On a GPU: every shape (and every held-out one, marked so) measured as the module's docstring says."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"rounds = {rounds!r}: at least one round of timings. Fix: e.g. --rounds 3.")
    everything = [(s, False) for s in shapes] + [(s, True) for s in held_out]
    for (M, N, K), _ in everything:
        bench.check_timing(M, N, K, n_repeat)
        library.plan(M, N, K, kind="cupy")   # sizes checked, kernels compiled before any timing
    table = dispatch.current_table()
    rows = []
    for i, ((M, N, K), hidden) in enumerate(progress.bar(everything, desc="sweep", unit="shape")):
        rows.append({**_measure_shape(M, N, K, n_repeat, rounds, seed=1000 + i), "held_out": hidden})
    return {"provenance": bench.provenance(command), "table": paths.rel(table.path), "rounds": rounds,
            "repeats_per_round": n_repeat, "fixed_kernel": f"09_double_buffering ({stages.variant('09_double_buffering').default.label()})",
            "what": "sgemm(A, B) and sgemm(A, B, precision='tf32') as called (new output each call); with beta = 1 "
                    "sgemm(A, B, C, beta=1.0, out=C) in place; cuBLAS: cupy.matmul(A, B, out=...) and, with beta = 1, "
                    "cublasGemmEx into C; CUDA events around each call, median of each round's median",
            "tf32_model": {"calibrated_on": dispatch_tf32.SWEEP_FILE, "tile_rates_from": dispatch_tf32.RATES_FILE,
                           **{name: getattr(dispatch_tf32, name) for name in dispatch_tf32.CONSTANTS.values()}},
            "rows": rows, "summary": summary(rows),
            "held_out_summary": summary([r for r in rows if r["held_out"]]) if held_out else None,
            "targets": targets(rows)}


def _geo(values) -> float | None:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary(rows: list[dict]) -> dict:
    """Geometric means and lowest % of cuBLAS (FP32 and TF32, beta 0 and 1), the largest TF32 error ratio, 4096^3 and
    8192^3 in FP32, 256^3 against cupy.matmul; and the earlier sweeps' keys (FP32, beta = 0, the fixed kernel)."""
    if not rows:
        return {"shapes": 0}
    at = lambda n: next((r for r in rows if (r["M"], r["N"], r["K"]) == (n, n, n)), None)
    out = {"shapes": len(rows),
           "geomean_pct_cublas": _geo(r["pct_cublas"] for r in rows), "min_pct_cublas": min(r["pct_cublas"] for r in rows),
           "pct_cublas_4096": at(4096)["pct_cublas"] if at(4096) else None,
           "fixed_geomean_pct_cublas": _geo(r["fixed_pct_cublas"] for r in rows),
           "fixed_min_pct_cublas": min(r["fixed_pct_cublas"] for r in rows)}
    if "tf32" not in rows[0]:   # a sweep of the dispatcher alone (before the library call was measured)
        return out
    series = {"fp32_beta1": [r["fp32_beta1"]["pct_cublas"] for r in rows],
              "tf32": [r["tf32"]["pct_cublas"] for r in rows],
              "tf32_beta1": [r["tf32"]["beta1"]["pct_cublas"] for r in rows]}
    for name, values in series.items():
        out[f"{name}_geomean_pct_cublas"], out[f"{name}_min_pct_cublas"] = _geo(values), min(values)
    out["tf32_max_error_ratio"] = max(r["tf32"]["error_ratio"] for r in rows)
    out["pct_cublas_8192"] = at(8192)["pct_cublas"] if at(8192) else None
    out["vs_cupy_matmul_256"] = at(256).get("vs_cupy_matmul") if at(256) else None
    return out


def targets(rows: list[dict]) -> list[dict]:
    """Issue 31's targets, each with its value and whether it is met (None: not measured here): the means, lowest
    values and errors over the held-out rows where there are any (else over all), the sizes named over all."""
    s = summary([r for r in rows if r.get("held_out")] or rows)
    sizes = summary(rows)
    if "tf32_geomean_pct_cublas" not in s:
        return []
    s = {**s, **{k: sizes[k] for k in ("vs_cupy_matmul_256", "pct_cublas_4096", "pct_cublas_8192")}}
    want = [("FP32 geometric mean, % of cuBLAS FP32", s["geomean_pct_cublas"], ">=", 100),
            ("FP32 lowest", s["min_pct_cublas"], ">=", 90),
            ("FP32 beta = 1 geometric mean", s["fp32_beta1_geomean_pct_cublas"], ">=", 100),
            ("FP32 beta = 1 lowest", s["fp32_beta1_min_pct_cublas"], ">=", 90),
            ("TF32 geometric mean, % of cuBLAS TF32", s["tf32_geomean_pct_cublas"], ">=", 100),
            ("TF32 lowest", s["tf32_min_pct_cublas"], ">=", 90),
            ("TF32 beta = 1 geometric mean", s["tf32_beta1_geomean_pct_cublas"], ">=", 100),
            ("TF32 beta = 1 lowest", s["tf32_beta1_min_pct_cublas"], ">=", 90),
            ("TF32 RMS error / cuBLAS TF32's, largest", s["tf32_max_error_ratio"], "<=", TF32_ERROR_RATIO),
            ("256^3: sgemm time / cupy.matmul time", s["vs_cupy_matmul_256"], "<=", 1.5),
            ("4096^3 FP32, % of cuBLAS", s["pct_cublas_4096"], ">=", 100),
            ("8192^3 FP32, % of cuBLAS", s["pct_cublas_8192"], ">=", 100)]
    return [{"what": w, "value": v, "target": f"{op} {t}",
             "met": None if v is None else (v >= t if op == ">=" else v <= t)} for w, v, op, t in want]


def misses(data: dict, below: float = 90.0) -> list[tuple[int, int, int, str, int]]:
    """(M, N, K, precision, beta) of every measurement under `below` % of cuBLAS: the shapes to profile."""
    out = []
    for r in data["rows"]:
        for precision, beta, pct in (("fp32", 0, r["pct_cublas"]), ("fp32", 1, r["fp32_beta1"]["pct_cublas"]),
                                     ("tf32", 0, r["tf32"]["pct_cublas"]), ("tf32", 1, r["tf32"]["beta1"]["pct_cublas"])):
            if pct < below:
                out.append((r["M"], r["N"], r["K"], precision, beta))
    return out


def table_text(data: dict) -> str:
    """The short table printed at the end of the command: % of cuBLAS per shape and call, then the targets."""
    lines = [backend.banner(), f"{'shape':>20} {'FP32 %':>7} {'b=1 %':>6} {'TF32 %':>7} {'b=1 %':>6} {'err x':>6} "
                               f"{'host us':>8}  choice (FP32 | TF32)"]
    for r in data["rows"]:
        shape = f"{r['M']}x{r['N']}x{r['K']}{'*' if r.get('held_out') else ''}"
        t = r["tf32"]
        lines.append(f"{shape:>20} {r['pct_cublas']:>7.1f} {r['fp32_beta1']['pct_cublas']:>6.1f} {t['pct_cublas']:>7.1f} "
                     f"{t['beta1']['pct_cublas']:>6.1f} {t['error_ratio']:>6.2f} "
                     f"{r['host_us_per_call']['fp32_beta0_sgemm']:>8.1f}  {r['choice']} | {t['choice']}")
    if any(r.get("held_out") for r in data["rows"]):
        lines.append("(* held out)")
    lines.append("targets" + (" (means, lowest and errors over the held-out shapes)" if data.get("held_out_summary")
                               else "") + ":")
    for t in data["targets"]:
        value = "not measured" if t["value"] is None else f"{t['value']:.2f}"
        lines.append(f"  {'MET ' if t['met'] else 'MISS' if t['met'] is False else '  - '} {t['what']}: {value} "
                     f"(target {t['target']})")
    return "\n".join(lines)

"""Timing the CPU versions on one thread, and against single-threaded OpenBLAS (NumPy's matmul
limited by threadpoolctl): one call at a time, or the whole benchmark that the committed
results/cpu_gemm_*.json come from (tools/cpu_gemm_bench.py).
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass

import numpy as np

from helpers.core import progress
from helpers.course.cpu_gemm.versions import VERSIONS, as_version, check, operands
from helpers.measure import verify


@dataclass(frozen=True)
class Timing:
    median_s: float
    q1_s: float
    q3_s: float
    min_s: float
    repeats: int

    def gflops(self, M: int, N: int, K: int) -> float:
        return 2.0 * M * N * K / self.median_s / 1e9


def time_call(fn, n_warmup: int = 1, n_repeat: int = 5) -> Timing:
    """Calls fn() n_warmup times untimed (compilation, caches), then n_repeat times timed."""
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(statistics.median(times), q[0], q[2], min(times), len(times))


def time_version(v, M: int, N: int | None = None, K: int | None = None, n_warmup: int = 1, n_repeat: int = 5,
                 **params) -> Timing:
    """Times version v on random M x N x K operands (alpha 1, beta 0), one thread."""
    N, K = N or M, K or M
    fn = as_version(v).function(**params)
    A, B, C = operands(M, N, K)
    one, zero = np.float32(1), np.float32(0)
    return time_call(lambda: fn(one, A, B, zero, C), n_warmup, n_repeat)


def time_openblas(M: int, N: int | None = None, K: int | None = None, n_warmup: int = 2,
                  n_repeat: int = 9) -> Timing:
    """NumPy's matmul (OpenBLAS SGEMM) limited to one thread, same operands as time_version."""
    from threadpoolctl import threadpool_limits
    N, K = N or M, K or M
    A, B, C = operands(M, N, K)
    with threadpool_limits(limits=1, user_api="blas"):
        return time_call(lambda: np.matmul(A, B, out=C), n_warmup, n_repeat)


def benchmark(sizes=(1024, 512), n_repeat: int = 5, versions=VERSIONS, log=None) -> list[dict]:
    """Every version and single-threaded OpenBLAS at each size, one row each. Each version is
    checked on two odd shapes first. Timing runs in rounds (every contestant once per round,
    after one untimed warm-up round), so slow drifts of a shared machine hit all of them alike;
    the row keeps the median, quartiles and minimum."""
    log = log or (lambda *_: None)
    for v in versions:
        for s in (verify.shape("primes"), verify.shape("non-multiples of every tile")):
            c = check(v, s)
            if not c.ok:
                raise verify.VerificationError(f"{v.label()} is wrong, not timed:\n{c.details()}")
    from threadpoolctl import threadpool_limits
    rows = []
    shown = progress.bar(total=len(sizes) * (n_repeat + 1), desc="timing rounds", unit="round")
    for n in sizes:
        A, B, C = operands(n, n, n)
        one, zero = np.float32(1), np.float32(0)
        calls = {v.name: functools.partial(v.function(), one, A, B, zero, C) for v in versions}
        calls["openblas"] = functools.partial(np.matmul, A, B, out=C)
        times: dict[str, list[float]] = {name: [] for name in calls}
        with threadpool_limits(limits=1, user_api="blas"):
            for rnd in range(n_repeat + 1):
                for name, fn in calls.items():
                    t = time.perf_counter()
                    fn()
                    if rnd:                        # round 0 is the warm-up
                        times[name].append(time.perf_counter() - t)
                log(f"{n}^3: round {rnd} of {n_repeat} done")
                shown.update()
        base = statistics.median(times["openblas"])
        for v in (*versions, None):
            name = v.name if v else "openblas"
            ts = times[name]
            q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
            med = statistics.median(ts)
            rows.append({"version": name, "params": v.params if v else {}, "M": n, "N": n, "K": n,
                         "median_s": med, "q1_s": q[0], "q3_s": q[2], "min_s": min(ts), "repeats": len(ts),
                         "gflops": 2.0 * n**3 / med / 1e9, "pct_openblas": 100.0 * base / med,
                         "intensity_flop_per_byte": v.intensity() if v else None})
    shown.close()
    return rows


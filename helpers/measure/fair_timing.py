"""Timing a kernel someone else wrote, so that the kernel cannot game its own time (issue 32, item 11).

A benchmark that launches a kernel many times on the same arguments times whatever the kernel does when it is
launched again, and a kernel may remember its arguments (a `__device__` global) and return at once: on an H100
such a kernel was timed at 852.85 TFLOP/s, "1921.7 % of cuBLAS", with every step passed. Judges' leaderboards
were gamed the same way (times above the bandwidth bound, a cached result replayed). So, here:

- every launch, warm-up and timed, runs on fresh inputs: new random A and B written into the same arrays, and C
  full of NaN, outside the timed interval; CUDA events bracket the launch alone;
- the C of every launch is compared with cuBLAS's product of that launch's own A and B: a launch that skipped
  its work leaves NaN, one that replayed a cached result leaves the wrong numbers, and either is named;
- the median is checked against the speed of light, the GPU's peak (FP32 on the CUDA cores, or TF32 on the
  tensor cores) and the time to move A, B and C through DRAM once: a faster time is refused, never reported.

`time_fresh` takes the device-specific parts as arguments (refill, check, clock), so the logic runs on the CPU
in the tests with a fake clock (tests/measure/test_fair_timing.py); `gpu_parts` makes the GPU's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from helpers.core import gpu_specs
from helpers.core.errors import VerificationError
from helpers.measure.bench import AGREEMENT, Timing


class UnfairTimingError(VerificationError):
    """A kernel's timed launches did not do the work they were timed for, or the time is faster than the GPU."""


@dataclass(frozen=True)
class SpeedOfLight:
    tflops: float          # the arithmetic peak
    bandwidth_tbs: float   # DRAM
    source: str

    def fastest_ms(self, M: int, N: int, K: int) -> float:
        """No kernel computes C = A B faster than its arithmetic at the peak, or than reading A and B and writing C
        once through DRAM."""
        compute = 2.0 * M * N * K / (self.tflops * 1e12) * 1e3
        memory = 4.0 * (M * K + K * N + M * N) / (self.bandwidth_tbs * 1e12) * 1e3
        return max(compute, memory)


def time_fresh(launch: Callable[[], None], refill: Callable[[int], None], check: Callable[[int], str | None],
               clock: Callable[[Callable[[], None]], float], n_repeat: int, n_warmup: int = 3) -> Timing:
    """Times `launch` n_repeat times after n_warmup untimed launches. Before each, refill(i) writes fresh inputs
    (and poisons the output); clock(launch) runs it and returns its milliseconds; after each, check(i) returns
    what is wrong with launch i's output, or None. UnfairTimingError names the first launch that was wrong."""
    times = []
    for i in range(n_warmup + n_repeat):
        refill(i)
        ms = clock(launch)
        problem = check(i)
        if problem:
            which = f"warm-up launch {i + 1}" if i < n_warmup else f"timed launch {i - n_warmup + 1} of {n_repeat}"
            raise UnfairTimingError(
                f"{which}, on fresh A and B and a C full of NaN, {problem}. Every launch of a kernel must compute "
                f"its C from the A and B it is given: one that remembers an earlier launch (a __device__ variable "
                f"holding its arguments, or a result kept from before) is timed for work it did not do.")
        if i >= n_warmup:
            times.append(ms)
    t = np.asarray(times)
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return Timing(float(med), float(q1), float(q3), float(t.min()), int(t.size))


def check_speed_of_light(t: Timing, M: int, N: int, K: int, limit: SpeedOfLight, what: str = "the kernel") -> None:
    """UnfairTimingError where the median is faster than the GPU can compute the product at all."""
    fastest = limit.fastest_ms(M, N, K)
    if t.median_ms < fastest:
        raise UnfairTimingError(
            f"{what} was timed at {t.median_ms:.4f} ms ({t.tflops(M, N, K):.1f} TFLOP/s) at {M} × {N} × {K}, faster "
            f"than this GPU can compute it ({fastest:.4f} ms at {limit.tflops:.1f} TFLOP/s and {limit.bandwidth_tbs:g} "
            f"TB/s, {limit.source}): the time is not reported. A time above the speed of light means the launches "
            f"did not do the work: check that every launch computes its whole C.")


def speed_of_light(device, precision: str = "fp32") -> SpeedOfLight:
    """This GPU's limits: FP32 from its properties (SMs × lanes × 2 × boost clock), or its datasheet; TF32 (the
    tensor cores) from the datasheet, else 8 × FP32, above every GPU's ratio (the A100's is 8, the H100's 7.4)."""
    spec = gpu_specs.lookup(device.name)
    fp32 = device.fp32_peak_tflops or (spec.fp32_tflops if spec else None)
    bandwidth = device.memory_bandwidth_tbs or (spec.dram_tbs if spec else None)
    if fp32 is None or bandwidth is None:
        raise UnfairTimingError(f"{device.name}: neither its properties nor the datasheet table give its peak, so a "
                                f"time cannot be checked against it and is not reported.")
    if precision == "tf32":
        peak = spec.tf32_tflops if spec and spec.tf32_tflops else 8 * fp32
        return SpeedOfLight(peak, bandwidth, "TF32 tensor-core peak, " + ("datasheet" if spec and spec.tf32_tflops
                                                                           else "8 × the FP32 peak"))
    return SpeedOfLight(fp32, bandwidth, "FP32 peak from the device's properties" if device.fp32_peak_tflops
                        else "FP32 peak, datasheet")


def gpu_parts(A, B, C, precision: str = "fp32", seed: int = 0):
    """(refill, check, clock) for time_fresh on the GPU: fresh uniform [-1, 1) A and B written into the given
    arrays (the kernel's arguments stay the same arrays) and C filled with NaN; C checked against cupy.matmul of
    that launch's A and B (in FP32, to AGREEMENT[precision]); CUDA events around the launch alone."""
    import cupy as cp
    rng = cp.random.default_rng(seed + 1)

    def refill(i: int) -> None:
        A[...] = rng.uniform(-1, 1, A.shape, dtype=cp.float32)
        B[...] = rng.uniform(-1, 1, B.shape, dtype=cp.float32)
        C.fill(cp.nan)

    def check(i: int) -> str | None:
        ref = cp.matmul(A, B)
        worst = float(cp.max(cp.abs(C - ref)) / cp.max(cp.abs(ref)))
        if not worst < AGREEMENT[precision]:            # NaN fails too
            unwritten = int(cp.count_nonzero(cp.isnan(C)))
            return (f"left {unwritten:,} elements of C unwritten" if unwritten else
                    f"gave a C that differs from cuBLAS's product of its inputs by {worst:.2e} of the largest element")
        return None

    def clock(launch) -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end)

    return refill, check, clock

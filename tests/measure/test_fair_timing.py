"""A kernel cannot game its own time (helpers/measure/fair_timing.py; issue 32, item 11).

On the CPU, with a fake clock: kernels written in NumPy that skip a repeated launch or replay a cached result are
caught at the launch that did it, an honest one is timed, and a time faster than the GPU's peak is refused. On a
GPU (`gpu`), the held-out-style cheat tests/kernels/cheat_03_skips_repeats.cu through exercise 03's check: it is
never reported at an impossible speed, and the course's solution still is timed.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from helpers.core import paths
from helpers.core.device import DeviceInfo
from helpers.measure import fair_timing
from helpers.measure.bench import Timing

M = N = K = 32


def _parts(A, B, C, seed=0):
    """refill, check and a fake clock for NumPy arrays: what gpu_parts does with CuPy and CUDA events."""
    rng = np.random.default_rng(seed)

    def refill(i):
        A[...] = rng.uniform(-1, 1, A.shape)
        B[...] = rng.uniform(-1, 1, B.shape)
        C.fill(np.nan)

    def check(i):
        ref = A @ B
        worst = float(np.max(np.abs(C - ref)) / np.max(np.abs(ref)))
        if not worst < 1e-5:
            unwritten = int(np.isnan(C).sum())
            return f"left {unwritten:,} elements of C unwritten" if unwritten else f"differs by {worst:.2e}"
        return None

    def clock(launch):
        launch()
        return 0.5          # ms: what the events would say
    return refill, check, clock


def _arrays():
    return np.zeros((M, K), np.float32), np.zeros((K, N), np.float32), np.zeros((M, N), np.float32)


def test_an_honest_kernel_is_timed_on_fresh_inputs_every_launch():
    A, B, C = _arrays()
    seen = []

    def kernel():
        seen.append((A[0, 0], B[0, 0]))
        C[...] = A @ B
    t = fair_timing.time_fresh(kernel, *_parts(A, B, C), n_repeat=10, n_warmup=3)
    assert t.median_ms == 0.5 and t.repeats == 10
    assert len(set(seen)) == 13          # 13 launches, 13 different inputs


def test_a_kernel_that_skips_a_repeated_launch_is_caught_at_that_launch():
    A, B, C = _arrays()
    remembered = set()

    def kernel():                          # the cheat: the same arrays and sizes again? nothing to do
        stamp = (id(A), id(B), id(C), M, N, K)
        if stamp in remembered:
            return
        C[...] = A @ B
        remembered.add(stamp)
    with pytest.raises(fair_timing.UnfairTimingError, match=r"warm-up launch 2, on fresh A and B and a C full of "
                                                            r"NaN, left 1,024 elements of C unwritten"):
        fair_timing.time_fresh(kernel, *_parts(A, B, C), n_repeat=10, n_warmup=3)


def test_a_kernel_that_replays_a_result_it_kept_is_caught():
    A, B, C = _arrays()
    kept = {}

    def kernel():                          # cache replay: the first result, written again
        if "C" not in kept:
            kept["C"] = A @ B
        C[...] = kept["C"]
    with pytest.raises(fair_timing.UnfairTimingError, match=r"warm-up launch 2.*differs"):
        fair_timing.time_fresh(kernel, *_parts(A, B, C), n_repeat=10, n_warmup=3)


def test_a_kernel_honest_through_the_warm_up_and_cheating_when_timed_is_caught():
    A, B, C = _arrays()
    launches = []

    def kernel():
        launches.append(1)
        if len(launches) <= 3:
            C[...] = A @ B
    with pytest.raises(fair_timing.UnfairTimingError, match=r"timed launch 1 of 10"):
        fair_timing.time_fresh(kernel, *_parts(A, B, C), n_repeat=10, n_warmup=3)


H100 = DeviceInfo("gpu", "NVIDIA H100 80GB HBM3", "9.0", 132, 1.98, 128, 3.35)


def test_the_speed_of_light_is_the_gpus_peak_and_its_dram():
    fp32 = fair_timing.speed_of_light(H100)
    assert fp32.tflops == pytest.approx(132 * 128 * 2 * 1.98 / 1000) and "properties" in fp32.source
    assert fair_timing.speed_of_light(H100, "tf32").tflops == 494.7          # the datasheet's dense TF32
    unknown = DeviceInfo("gpu", "Some Future GPU", "12.0", 100, 2.0, 128, 5.0)
    assert fair_timing.speed_of_light(unknown, "tf32").tflops == pytest.approx(8 * 100 * 128 * 2 * 2.0 / 1000)
    assert fp32.fastest_ms(2048, 2048, 2048) == pytest.approx(2 * 2048 ** 3 / (fp32.tflops * 1e12) * 1e3)
    assert fp32.fastest_ms(2048, 2048, 1) == pytest.approx(4 * (2048 + 2048 + 2048 ** 2) / 3.35e12 * 1e3)
    with pytest.raises(fair_timing.UnfairTimingError, match="neither its properties nor the datasheet"):
        fair_timing.speed_of_light(DeviceInfo("gpu", "Mystery"))


def test_a_time_above_the_speed_of_light_is_refused_not_reported():
    limit = fair_timing.speed_of_light(H100)
    n = 2048
    impossible = Timing(0.0201, 0.02, 0.021, 0.02, 20)     # 855 TFLOP/s, about what the cheat was timed at
    with pytest.raises(fair_timing.UnfairTimingError, match=r"85\d\.\d TFLOP/s.*faster than this GPU can compute it"):
        fair_timing.check_speed_of_light(impossible, n, n, n, limit, "your kernel")
    fair_timing.check_speed_of_light(Timing(0.5, 0.49, 0.51, 0.48, 20), n, n, n, limit)   # 34 TFLOP/s: fine


def test_the_write_it_check_fails_a_kernel_whose_timing_is_unfair(monkeypatch):
    judge = importlib.import_module("helpers.course.write_it.judge")
    from helpers.course.write_it.registry import exercise
    from helpers.course.write_it.verdict import Verdict
    monkeypatch.setattr(judge.backend, "name", lambda: "gpu")

    def unfair(*args):
        raise fair_timing.UnfairTimingError("timed launch 2 of 20, on fresh A and B and a C full of NaN, left it")
    monkeypatch.setattr(judge, "time_beside", unfair)
    v = Verdict("03", "sgemm_tiled", "your cell", "gpu")
    judge._timing(exercise("03"), None, v, 2048)
    assert not v.ok and v.failed_step == "timing" and "timed launch 2 of 20" in v.last_line()


# ---- on a GPU -------------------------------------------------------------------------------------------------
CHEAT = paths.ROOT / "tests" / "kernels" / "cheat_03_skips_repeats.cu"


@pytest.mark.gpu
@pytest.mark.emulator  # the write-it check runs its race and lesson steps on the emulator
def test_on_a_gpu_a_kernel_that_skips_repeated_launches_is_not_reported_at_an_impossible_speed(gpu_backend):
    from helpers.course import write_it
    from helpers.run import backend
    v = write_it.check("03", CHEAT)
    text = str(v)
    assert not v.ok, text
    limit = fair_timing.speed_of_light(backend.current().device_info())
    assert all(value <= limit.tflops for name, value in v.numbers.items() if name.endswith("TFLOP/s")), text
    if v.failed_step == "timing":          # it passed correctness: its timed launches are what gave it away
        assert "launch" in v.cause and "on fresh A and B" in v.cause, text


@pytest.mark.gpu
@pytest.mark.emulator  # the write-it check runs its race and lesson steps on the emulator
def test_on_a_gpu_the_solution_is_still_timed_below_the_speed_of_light(gpu_backend):
    from helpers.course import write_it
    from helpers.run import backend
    solution = paths.ROOT / "helpers" / "course" / "write_it" / "solutions" / "03.cu"
    if not solution.is_file():
        pytest.skip("no write-it solutions in this copy of the course (a teacher's copy has them)")
    v = write_it.check("03", solution)
    assert v.ok, str(v)
    timing = next(s for s in v.steps if s.name == "timing")
    assert timing.ok and v.numbers["yours TFLOP/s"] < fair_timing.speed_of_light(
        backend.current().device_info()).tflops, str(v)


@pytest.fixture
def gpu_backend():
    from helpers.run import backend
    backend.use("gpu")
    yield
    backend.use(None)

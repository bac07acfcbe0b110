"""Write it for stages 11 and 12 (issue 30, point 4). 11, split-K: two kernels, slices of K in the layers of the
grid, a reduction in a fixed order; every shape runs twice and must give the same bits; atomics, overlapping or
uneven slices fail the lesson. 12, a TMA ring of mbarriers: the emulator judges the phases (a wait that never
completes is named with its line), the waits (a read before the copy lands, a copy over a stage being read, a
barrier used before its setup is visible: races its clocks find) and the ring (one producer thread, every stage,
the producer ahead, no __syncthreads in the loops). (tests/course/test_write_it.py runs every exercise's starter
and solution.)"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from helpers.course import write_it

judge_module = importlib.import_module("helpers.course.write_it.judge")   # (write_it.judge: the function)

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def _edited(tmp_path, exercise_id: str, *edits: tuple[str, str], name: str = "edited"):
    text = write_it.exercise(exercise_id).solution_path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{exercise_id}_{name}.cu"
    path.write_text(text)
    return path, text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_contracts_of_11_and_12():
    eleven, twelve = write_it.exercise("11"), write_it.exercise("12")
    text = eleven.contract()
    assert text.startswith("**Exercise 11 · split-K.** Write these kernels:")
    assert ('`extern "C" __global__ void splitk_partial(int M, int N, int K, const float* A, const float* B, '
            'float* partial)`') in text and "splitk_reduce(int M, int N, int S, float alpha" in text
    assert "the same bits at every run" in text and eleven.same_bits
    assert "const __grid_constant__ TensorMap tmA" in twelve.contract() and twelve.gpu_arch == "sm_90"
    assert twelve.launch.grid(65, 33, 7) == (2, 3, 1) and twelve.launch.block == (160,)


REDUCE = ('''  float sum = 0.0f;
  for (int z = 0; z < S; ++z) sum += partial[z * size + e];
  C[e] = alpha * sum + (beta == 0.0f ? 0.0f : beta * C[e]);''')


@pytest.mark.slow
def test_11_the_solution_passes_with_its_slices_measured():
    v = write_it.check("11", write_it.exercise("11").solution_path)
    assert v.ok, str(v)
    correct = next(s for s in v.steps if s.name == "correct")
    assert "every shape run twice on the same data: the same bits both times" in correct.lines
    assert v.numbers["slices"] == 4 and v.numbers["largest slice of K"] == 64
    assert v.numbers["k read by two slices or more"] == v.numbers["k read by no slice"] == 0


def test_11_a_result_whose_bits_change_from_run_to_run_fails_correct(tmp_path, monkeypatch):
    """Right to the tolerance both times, but not the same bits: the check runs every shape twice and compares.
    (The emulator runs a kernel the same way every time, so the second run is made to differ here, by one bit of
    one element; on a GPU, blocks adding in the order they arrive do it themselves. The atomics that would, the
    lesson refuses on any backend: the test below.)"""
    runs = []
    real = judge_module._run

    def run(ex, kernels, s, A, B, C0):
        C = real(ex, kernels, s, A, B, C0)
        runs.append(s.name)
        if s.name == "primes" and runs.count("primes") == 2:
            C.view(np.uint32)[3, 5] ^= 1
        return C
    monkeypatch.setattr(judge_module, "_run", run)
    v = write_it.check("11", write_it.exercise("11").solution_path)
    assert v.failed_step == "correct" and "gave different bits in 1 of 1147 elements" in v.cause, str(v)
    assert v.numbers["elements that differ between two runs"] == 1 and "fixed order" in v.hint
    assert runs[:3] == ["1x1x1", "1x1x1", "primes"]                           # every shape, twice


def test_11_an_atomic_reduction_fails_the_lesson_at_its_line(tmp_path):
    path, text = _edited(tmp_path, "11", (REDUCE, '''  C[e] = beta == 0.0f ? 0.0f : beta * C[e];
  for (int z = 0; z < S; ++z) atomicAdd(&C[e], alpha * partial[z * size + e]);'''))
    v = write_it.check("11", path)
    assert v.failed_step == "lesson" and "calls an atomic" in v.cause, str(v)
    assert v.line == _line_of(text, "atomicAdd(&C[e]")


def test_11_one_layer_taking_all_of_k_fails_the_lesson_with_each_slice(tmp_path):
    path, _ = _edited(tmp_path, "11", (
        "const int kBegin = min(K, (int)blockIdx.z * perSlice * TILE), kEnd = min(K, kBegin + perSlice * TILE);",
        "const int kBegin = blockIdx.z == 0 ? 0 : K, kEnd = K;"))
    v = write_it.check("11", path)
    assert v.failed_step == "lesson" and "the largest slice takes 256 steps of k" in v.cause, str(v)
    assert "slice 1 (block (0, 0, 1)): reads k none" in str(v)


def test_11_an_empty_slice_that_writes_nothing_leaves_nan_and_the_hint_says_where(tmp_path):
    path, _ = _edited(tmp_path, "11", ("if (row < M && col < N) partial", "if (row < M && col < N && kBegin < kEnd) partial"))
    v = write_it.check("11", path)
    assert v.failed_step == "correct" and "NaN" in v.cause and "workspace" in v.hint, str(v)


@pytest.mark.slow
def test_12_the_solution_passes_with_its_ring_measured():
    v = write_it.check("12", write_it.exercise("12").solution_path)
    assert v.ok, str(v)
    n = v.numbers
    assert (n["copy issuers"], n["stages used"], n["producer lead"], n["__syncthreads"]) == (1, 3, 3, 1)
    assert n["copies"] == 2 * n["k-tiles"] == 16


def test_12_barriers_used_before_their_setup_is_visible_race(tmp_path):
    text = write_it.exercise("12").solution_path.read_text()
    path = tmp_path / "12_nosync.cu"
    path.write_text("\n".join(ln for ln in text.splitlines() if "__syncthreads()" not in ln))
    v = write_it.check("12", path)
    # the emulator stops the first use that no __syncthreads orders after the barrier's setup, naming both lines
    assert v.failed_step == "safe" and "no __syncthreads() between the initialization and this use" in v.cause, str(v)
    init_line = int(v.cause.split("mbarrier_init, line ")[1].split(")")[0])
    assert "mbarrier_init" in path.read_text().splitlines()[init_line - 1]
    assert "fence_mbarrier_init()" in v.hint and "__syncthreads()" in v.hint


def test_12_a_consumer_that_does_not_wait_for_the_copies_races_with_them(tmp_path):
    path, _ = _edited(tmp_path, "12", ("    mbarrier_wait(&full[s], (kt / STAGES) & 1);\n", ""))
    v = write_it.check("12", path)
    assert v.failed_step == "safe" and "without having waited (mbarrier_wait)" in v.cause \
        and "the TMA copy of line" in v.cause, str(v)
    assert "full barrier" in v.hint and "parity" in v.hint


def test_12_an_empty_barrier_counting_the_wrong_arrivals_hangs_named_at_its_wait(tmp_path):
    path, text = _edited(tmp_path, "12", ("mbarrier_init(&empty[s], CONSUMERS);", "mbarrier_init(&empty[s], 4);"))
    v = write_it.check("12", path)
    assert v.failed_step == "safe" and "BarrierError" in v.cause and "waits at mbarrier_wait" in v.cause, str(v)
    assert v.line in (_line_of(text, "mbarrier_wait(&empty[s]"), _line_of(text, "mbarrier_wait(&full[s]"))
    assert v.hint.startswith("a wait on an mbarrier never completes") and "counts" in v.hint


def test_12_a_ring_of_one_stage_fails_the_lesson(tmp_path):
    path, _ = _edited(tmp_path, "12",
                      ("const int s = kt % STAGES;\n        mbarrier_wait(&empty[s], ((kt / STAGES) & 1) ^ 1);",
                       "const int s = 0;\n        mbarrier_wait(&empty[s], (kt & 1) ^ 1);"),
                      ("    const int s = kt % STAGES;\n    mbarrier_wait(&full[s], (kt / STAGES) & 1);",
                       "    const int s = 0;\n    mbarrier_wait(&full[s], kt & 1);"))
    v = write_it.check("12", path)
    assert v.failed_step == "lesson" and "the copies use stage 0 of the 3" in v.cause, str(v)
    assert v.numbers["producer lead"] == 1

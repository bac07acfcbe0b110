"""Stage 11's dispatcher on the CPU: the wave model's choices, tables read and refused, and sgemm on the
emulator verified against float64 on fresh random data (padding, split-K, beta, poison)."""

import dataclasses
import json

import numpy as np
import pytest

from helpers.core.errors import KernelArgumentError
from helpers.measure import verify
from helpers.run import dispatch
from helpers.run.sgemm import plan, sgemm

pytestmark = pytest.mark.emulator

RATES = {"128x256": 47.0, "128x128": 48.0, "128x64": 46.0, "64x64": 42.0}
H200 = dispatch.Machine("NVIDIA H200", 132, 4.8, 66.9, RATES, {k: v * 0.97 for k, v in RATES.items()})


def test_a_large_square_is_not_split():
    c = dispatch.model_choice(4096, 4096, 4096, H200)
    assert c.config.SPLITS == 1 and c.source == "model" and not c.pad


def test_a_small_c_with_a_long_k_is_split_to_fill_the_gpu():
    c = dispatch.model_choice(512, 512, 32768, H200)
    tiles = -(-512 // c.config.BM) * -(-512 // c.config.BN)
    assert c.config.SPLITS > 1 and tiles * c.config.SPLITS > tiles
    assert "slices of K" in c.why


def test_the_model_prefers_a_full_wave_to_a_partial_one():
    # 1000^3 with 128 x 256 tiles: 32 blocks for 132 SMs; the model must do better than that
    chosen = dispatch.model_choice(1000, 1000, 1000, H200)
    assert chosen.estimate_ms < dispatch.estimate_ms(1000, 1000, 1000, "128x256", 1, H200)


def test_split_k_pays_for_its_workspace():
    one = dispatch.estimate_ms(512, 512, 4096, "128x128", 1, H200)
    # same waves (16 blocks -> 32 -> both one wave): the split halves the depth but adds the traffic
    two = dispatch.estimate_ms(512, 512, 4096, "128x128", 2, H200)
    assert two < one
    assert two > one / 2  # the workspace and the second launch are not free


def test_misaligned_rows_are_padded_where_the_copies_cost_less_than_checked_loads():
    assert dispatch.model_choice(4095, 4095, 4095, H200).pad
    assert dispatch.model_choice(4096, 4097, 4096, H200).pad
    assert not dispatch.model_choice(4097, 4096, 4096, H200).pad  # M is free: rows keep their alignment
    assert not dispatch.model_choice(250, 250, 250, H200).pad     # tiny: the copies' launches cost more
    big = dispatch.padding_ms(4095, 4095, 4095, H200)
    assert 0 < dispatch.padding_ms(250, 250, 250, H200) < big
    assert dispatch.padding_ms(4096, 4096, 4095, H200) < big    # K alone: A and B, not C


def _table(tmp_path, **changes):
    data = {"provenance": {"gpu": "NVIDIA H200"}, "machine": {"gpu": "NVIDIA H200", "sm_count": 132, "dram_tbs": 4.8,
                                                              "fp32_peak_tflops": 66.9, "rates": H200.rates,
                                                              "split_rates": H200.split_rates},
            "shapes": [{"M": 1000, "N": 1000, "K": 1000,
                        "best": {"tile": "64x64", "splits": 2, "pad": False, "median_ms": 0.07}}]}
    data.update(changes)
    path = tmp_path / "dispatch_h200_2026-11-25.json"
    path.write_text(json.dumps(data))
    return path


def test_a_table_holds_measured_choices_and_the_model_covers_the_rest(tmp_path):
    table = dispatch.read_table(_table(tmp_path))
    hit = dispatch.choose(1000, 1000, 1000, table)
    assert (hit.source, hit.tile, hit.config.SPLITS) == ("table", "64x64", 2)
    assert dispatch.choose(1001, 1000, 1000, table).source == "model"
    assert dispatch.table_for("NVIDIA H200", tmp_path).path.name == "dispatch_h200_2026-11-25.json"


@pytest.mark.parametrize("changes, words", [
    ({"machine": {"gpu": "x", "sm_count": 132, "dram_tbs": 4.8, "fp32_peak_tflops": 66.9, "rates": {"9x9": 1.0},
                  "split_rates": RATES}}, "machine.rates"),
    ({"machine": {"gpu": "x", "sm_count": 132, "dram_tbs": 4.8, "fp32_peak_tflops": 66.9, "rates": RATES}},
     "split_rates"),
    ({"shapes": [{"M": 1, "N": 1, "K": 1, "best": {"tile": "64x64", "splits": 99, "pad": False, "median_ms": 1}}]},
     "a row of 'shapes'"),
    ({"shapes": [{"M": 1, "N": 1}]}, "a row of 'shapes'"),
])
def test_a_damaged_table_is_named_with_the_fix(tmp_path, changes, words):
    with pytest.raises(Exception, match="dispatch-table|Fix") as e:
        dispatch.read_table(_table(tmp_path, **changes))
    assert words in str(e.value)


def test_no_table_says_how_to_make_one(tmp_path):
    with pytest.raises(dispatch.DispatchTableError, match="python -m helpers dispatch-table"):
        dispatch.table_for(None, tmp_path)


def _choice(tile, splits, pad):
    return dispatch.Choice(dataclasses.replace(dispatch.CANDIDATES[tile], SPLITS=splits), pad, "test", "test")


@pytest.mark.parametrize("M, N, K, tile, splits, pad, alpha, beta", [
    (67, 45, 203, "64x64", 3, True, 1.25, -0.75),     # padded N and K, split, beta != 0
    (70, 130, 96, "128x128", 1, False, 1.0, 0.0),     # aligned, one slice, beta = 0 (C not read)
    (33, 9, 130, "64x64", 16, True, 0.5, 2.0),        # more slices than tiles of K hold for some
    (129, 260, 41, "128x256", 2, False, 1.0, 0.0),    # misaligned K left unpadded: the checked path
    (200, 70, 64, "128x64", 1, True, 1.0, 0.5),       # the 128 x 64 tile, whole (09's kernel), N padded
    (130, 64, 200, "128x64", 3, False, -1.0, 0.0),    # and split
])
def test_sgemm_on_the_emulator_matches_float64(M, N, K, tile, splits, pad, alpha, beta):
    rng = np.random.default_rng()
    s = verify.Shape("sgemm", M, N, K, alpha, beta)
    A, B, C0 = verify.random_operands(s, rng)
    C_before = C0.copy()
    out = sgemm(A, B, C0 if beta else None, alpha, beta, choice=_choice(tile, splits, pad))
    ref, tol = verify.reference(A, B, C0, alpha, beta)
    check = verify.compare(out, C0, ref, tol, s)
    assert check.ok, check.details()
    assert isinstance(out, np.ndarray) and out.shape == (M, N) and out.flags.c_contiguous
    np.testing.assert_array_equal(C0, C_before)  # C is read, never written


def test_split_k_gives_the_same_bits_every_run():
    rng = np.random.default_rng()
    A = rng.uniform(-1, 1, (40, 300)).astype(np.float32)
    B = rng.uniform(-1, 1, (300, 36)).astype(np.float32)
    choice = _choice("64x64", 4, False)
    first = sgemm(A, B, choice=choice)
    assert np.array_equal(first, sgemm(A, B, choice=choice))
    # and differs from one slice only by rounding (the sums are grouped differently)
    np.testing.assert_allclose(first, sgemm(A, B, choice=_choice("64x64", 1, False)), rtol=1e-4, atol=1e-4)


def test_every_element_is_written():
    rng = np.random.default_rng()
    A = rng.uniform(-1, 1, (20, 24)).astype(np.float32)
    B = rng.uniform(-1, 1, (24, 30)).astype(np.float32)
    p = plan(20, 30, 24, choice=_choice("64x64", 2, True))
    assert not np.isnan(p.run(A, B, poison=True)).any()


@pytest.mark.parametrize("call, words", [
    (lambda A, B: sgemm(A.astype(np.float64), B), "float64"),
    (lambda A, B: sgemm(A, B[:3]), "A's columns must equal B's rows"),
    (lambda A, B: sgemm(A, B, beta=0.5), "no C was given"),
    (lambda A, B: sgemm(A, B, np.zeros((2, 2), np.float32), beta=1.0), "C must be 4x6"),
    (lambda A, B: sgemm(A.tolist(), B), "NumPy or CuPy array"),
    (lambda A, B: sgemm(A[None], B), "2-D"),
])
def test_bad_operands_are_named(call, words):
    A = np.ones((4, 5), np.float32)
    B = np.ones((5, 6), np.float32)
    with pytest.raises(KernelArgumentError, match=words):
        call(A, B)


@pytest.mark.parametrize("M, N, K", [(0, 5, 3), (4, 0, 3), (4, 5, 0)])
def test_a_side_of_zero_gives_what_numpy_gives(M, N, K):
    A, B = np.ones((M, K), np.float32), np.ones((K, N), np.float32)
    C = np.full((M, N), 2.0, np.float32)
    np.testing.assert_array_equal(sgemm(A, B), A @ B)
    np.testing.assert_array_equal(sgemm(A, B, C, 1.0, 0.5), A @ B + 0.5 * C)


def test_the_exercise_checker_wants_whole_numbers():
    from helpers.course.exercises import check_11_exercise_5
    assert check_11_exercise_5((64, 1)).ok
    for answer in ((64, 1.5), (64.4, 1)):
        assert not check_11_exercise_5(answer).ok

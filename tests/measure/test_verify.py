"""Verification: tolerances that catch real bugs, NaN that never passes, poison that shows."""

import numpy as np
import pytest

from helpers.measure import verify
from helpers.core.errors import VerificationError
from helpers.measure.verify import Shape


def _operands(rng, s):
    A, B, C0 = verify.random_operands(s, rng)
    ref, tol = verify.reference(A, B, C0, s.alpha, s.beta)
    return A, B, C0, ref, tol


def test_random_operands_are_fresh_and_never_zero(rng):
    s = Shape("t", 8, 9, 10)
    A1, B1, _ = verify.random_operands(s, rng)
    A2, _, _ = verify.random_operands(s, rng)
    assert not np.array_equal(A1, A2)
    assert np.count_nonzero(A1) == A1.size and np.count_nonzero(B1) == B1.size


def test_float32_result_passes(rng):
    s = Shape("t", 64, 48, 777)
    A, B, C0, ref, tol = _operands(rng, s)
    C = (np.float32(s.alpha) * (A @ B) + np.float32(s.beta) * C0).astype(np.float32)
    assert verify.compare(C, C0, ref, tol, s).ok


@pytest.mark.parametrize("K", [7, 256, 4096])
def test_an_off_by_one_k_loop_fails_at_every_K(rng, K):
    s = Shape("t", 16, 16, K, alpha=1.0, beta=0.0)
    A, B, C0, ref, tol = _operands(rng, s)
    C = (A @ B - np.outer(A[:, -1], B[-1, :])).astype(np.float32)  # the loop stopped at K - 1
    check = verify.compare(C, C0, ref, tol, s)
    assert not check.ok and check.wrong >= s.M * s.N // 4


@pytest.mark.parametrize("K", [7, 256, 4096])
def test_one_missing_product_is_found_and_located(rng, K):
    s = Shape("t", 16, 16, K, alpha=1.0, beta=0.0)
    A, B, C0, ref, tol = _operands(rng, s)
    C = (A @ B).astype(np.float32)
    i, j = 3, 5
    k = int(np.argmax(np.abs(A[i, :] * B[:, j])))  # the element's largest product goes missing
    C[i, j] -= A[i, k] * B[k, j]
    check = verify.compare(C, C0, ref, tol, s)
    assert not check.ok and check.wrong == 1 and check.worst[0][:2] == (i, j)


def test_nan_never_passes(rng):
    s = Shape("t", 4, 4, 4)
    A, B, C0, ref, tol = _operands(rng, s)
    C = ref.astype(np.float32)
    C[1, 2] = np.nan
    check = verify.compare(C, C0, ref, tol, s)
    assert not check.ok and check.nan == 1 and check.worst[0][:2] == (1, 2)


def test_unwritten_elements_are_counted(rng):
    for beta in (0.0, -0.75):  # poisoned C, and random C
        s = Shape("t", 10, 12, 9, beta=beta)
        A, B, C0, ref, tol = _operands(rng, s)
        C = ref.astype(np.float32)
        C[-1, :] = C0[-1, :]  # the last row never written
        check = verify.compare(C, C0, ref, tol, s)
        assert not check.ok and check.unwritten == 12 and "never written" in check.details()


def test_beta_zero_starts_c_full_of_nan_and_catches_a_kernel_that_reads_it(rng):
    s = verify.shape("beta = 0 (poisoned C)")
    A, B, C0, ref, tol = _operands(rng, s)
    assert s.beta == 0 and np.isnan(C0).all()  # BLAS: with beta = 0, C need not hold numbers
    assert np.isfinite(ref).all()
    right = (np.float32(s.alpha) * (A @ B)).astype(np.float32)
    assert verify.compare(right, C0, ref, tol, s).ok
    reads_c = (np.float32(s.alpha) * (A @ B) + np.float32(s.beta) * C0).astype(np.float32)  # 0 * NaN = NaN
    check = verify.compare(reads_c, C0, ref, tol, s)
    assert not check.ok and check.nan == s.M * s.N and "must not read C" in check.details()


def test_catalogue_covers_the_promised_shapes():
    names = {s.name for s in verify.CATALOGUE}
    for must in ("1x1x1", "primes", "single row", "single column", "tall", "wide",
                 "non-multiples of every tile", "large", "beta = 0 (poisoned C)"):
        assert must in names
    odd = verify.shape("non-multiples of every tile")
    for tile in (2, 4, 8, 16, 32, 64, 128, 256):
        assert odd.M % tile and odd.N % tile and odd.K % tile
    assert all(s.alpha != 1.0 or s.beta == 0.0 for s in verify.CATALOGUE)


def test_report_raises_with_the_evidence(rng):
    s = Shape("t", 4, 4, 4)
    A, B, C0, ref, tol = _operands(rng, s)
    bad = verify.compare(np.zeros((4, 4), np.float32), C0, ref, tol, s)
    report = verify.Report("demo", [bad])
    assert "FAIL" in report.verdicts()
    with pytest.raises(VerificationError, match=r"C\[\d, \d\] = 0, expected"):
        report.raise_if_failed()


# ---- TF32: the tolerance holds for truncation and rounding, on zero-mean and on same-sign data -------------------
def _tf32(x: np.ndarray, nearest: bool) -> np.ndarray:
    """x with its low 13 mantissa bits rounded to nearest (ties to even) or dropped (truncated toward zero)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if nearest:
        u = u + 0xFFF + ((u >> 13) & 1)
    return (u & 0xFFFFE000).astype(np.uint32).view(np.float32)


def _tf32_result(A, B, nearest: bool) -> np.ndarray:
    """What tensor cores with exact sums would give: the products of the TF32 inputs, summed in float64."""
    return (_tf32(A, nearest).astype(np.float64) @ _tf32(B, nearest).astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("positive", [False, True], ids=["U[-1,1)", "U[0,1)"])
@pytest.mark.parametrize("nearest", [False, True], ids=["truncated", "rounded"])
@pytest.mark.parametrize("K", [64, 512, 4096])
def test_the_tf32_tolerance_holds_for_truncation_and_rounding_on_any_sign(rng, K, nearest, positive):
    s = Shape("t", 32, 32, K, alpha=1.0, beta=0.0)
    A, B, C0 = verify.random_operands(s, rng, positive)
    ref, tol = verify.reference(A, B, C0, 1.0, 0.0, "tf32")
    check = verify.compare(_tf32_result(A, B, nearest), C0, ref, tol, s)
    assert check.ok, check.details()
    if positive and not nearest and K >= 512:  # the bias term is what lets truncation pass on same-sign data
        bias = verify.TF32_TRUNCATION_BIAS * np.abs(A.astype(np.float64) @ B.astype(np.float64))
        assert not verify.compare(_tf32_result(A, B, nearest), C0, ref, tol - bias, s).ok


def test_truncations_bias_is_within_its_bound_and_near_it(rng):
    """The bias the tolerance assumes (2^-10 of the sum, uniformly distributed low bits) against what truncation does
    on U[0, 1): under it, and not far under it (else the tolerance would be loose for nothing)."""
    s = Shape("t", 64, 64, 4096, alpha=1.0, beta=0.0)
    A, B, _ = verify.random_operands(s, rng, positive=True)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    relative = (exact - _tf32_result(A, B, nearest=False)) / exact
    assert 0.5 * verify.TF32_TRUNCATION_BIAS < relative.mean() < verify.TF32_TRUNCATION_BIAS


@pytest.mark.parametrize("positive", [False, True], ids=["U[-1,1)", "U[0,1)"])
def test_a_skipped_step_of_k_still_fails_in_tf32(rng, positive):
    s = Shape("t", 32, 32, 512, alpha=1.0, beta=0.0)
    A, B, C0 = verify.random_operands(s, rng, positive)
    ref, tol = verify.reference(A, B, C0, 1.0, 0.0, "tf32")
    keep = np.ones(s.K, bool)
    keep[200:208] = False  # one step of 8 along K skipped, as test_10's broken kernel does
    C = (_tf32(A, False)[:, keep].astype(np.float64) @ _tf32(B, False)[keep].astype(np.float64)).astype(np.float32)
    check = verify.compare(C, C0, ref, tol, s)
    assert not check.ok and check.wrong > s.M * s.N // 2


def test_positive_operands_are_in_zero_one(rng):
    A, B, C0 = verify.random_operands(Shape("t", 9, 10, 11), rng, positive=True)
    for x in (A, B, C0):
        assert x.min() >= 0 and x.max() < 1 and np.count_nonzero(x) == x.size

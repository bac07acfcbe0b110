"""The BLAS contract on every registered kernel, on the CPU emulator: with beta = 0, C is not read
(NaN or Inf in C never reaches the result, as with BLAS and cuBLAS, where C may come from
np.empty); with beta != 0, a NaN in C reaches its own element of the result and no other, as IEEE
arithmetic has it. (verify's catalogue holds the beta = 0 case too, on every backend.)"""

import numpy as np
import pytest

from helpers.core import stages
from helpers.measure import verify
from helpers.run import gemm

pytestmark = pytest.mark.emulator

# N % 4 == 0: the kernels' 16-byte (and wgmma's 8-byte) stores of C; N odd: their scalar ones.
SHAPES = (verify.Shape("vector stores", 37, 68, 19), verify.Shape("scalar stores", 37, 65, 19))


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_beta_zero_never_reads_c(variant, cpu_backend, rng):
    for s in SHAPES:
        A, B, _ = verify.random_operands(s, rng)
        C0 = np.resize(np.array([np.nan, np.inf, -np.inf], np.float32), (s.M, s.N))
        C = gemm.run(variant, A, B, C0, s.alpha, 0.0)
        ref, tol = verify.reference(A, B, C0, s.alpha, 0.0, variant.precision)
        check = verify.compare(C, C0, ref, tol, s)
        assert check.ok, f"{variant.name}, C full of NaN and Inf, beta = 0: {check.details()}"


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_beta_nonzero_takes_a_nan_in_c_to_its_own_element_only(variant, cpu_backend, rng):
    for s in SHAPES:
        A, B, C0 = verify.random_operands(s, rng)
        poisoned = {(0, 0), (17, 33), (s.M - 1, s.N - 1)}  # a corner, inside, the last element
        for i, j in poisoned:
            C0[i, j] = np.nan
        C = gemm.run(variant, A, B, C0, s.alpha, s.beta)
        assert {(int(i), int(j)) for i, j in zip(*np.nonzero(np.isnan(C)))} == poisoned, variant.name
        ref, tol = verify.reference(A, B, C0, s.alpha, s.beta, variant.precision)
        right = np.abs(C.astype(np.float64) - ref) <= tol
        assert right[~np.isnan(C)].all(), f"{variant.name}, {s.name}: wrong beside the NaN"

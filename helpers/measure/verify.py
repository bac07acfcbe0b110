"""Verification that cannot be fooled: float64 references on fresh random data.

- A and B are drawn fresh for every check, uniform in [-1, 1) (or [0, 1): see below): never zeros,
  never reused.
- With beta != 0, C starts random too, so an element the kernel never wrote keeps a value
  that does not match; with beta == 0, C starts full of NaN (POISON). BLAS and cuBLAS promise
  that C is not read when beta == 0 (it may hold anything, np.empty's garbage included), so a
  kernel that computes beta * C there gets 0 * NaN = NaN and fails, as does one that never
  writes an element.
- An element passes when |C - ref| <= tol, tol = 8 sqrt(K) u (|alpha| |A| |B| + |beta| |C0|)
  elementwise, with u the unit roundoff (2^-24 for FP32): rounding grows like sqrt(K) on random
  data, while one missing or doubled product is far larger. NaN never passes.
- TF32 (tensor cores) keeps 10 mantissa bits of each input, so a product a_ik b_kj is off by e_k
  times itself, |e_k| < 2 * 2^-10 truncated (the tensor cores dropping the low 13 bits: always
  toward zero), |e_k| <= 2^-10 rounded to nearest. Write e_k = mu + eta_k, mu the mean: the error of
  the sum is mu * sum_k a_ik b_kj + sum_k a_ik b_kj eta_k.
  * The second part has zero mean and independent terms: it grows like the products' root sum of
    squares, and the tolerance adds 8 * 2^-10 * |alpha| sqrt(sum_k (a_ik b_kj)^2).
  * The first is the bias. Rounding to nearest (ties to even) has mu = 0. Truncation does not: an
    input x in [2^e, 2^(e+1)) loses its low bits d in [0, 2^(e-10)), so its relative error d / x
    averages at most 2^-11 when those bits are uniformly distributed, and a product's at most 2^-10.
    On zero-mean data sum_k a_ik b_kj is itself small and the bias hides in the first term; on
    same-sign data (U[0, 1)) it grows like K, not sqrt(K), and leaves the first term behind (3.5
    times it at K = 4096 without this term). So the tolerance also adds 2^-10 |alpha| |(A B)_ij|.
  (The FP32 form with u = 2^-10 would be far looser than one missing product on zero-mean data.)
- The catalogue draws A and B uniform in [-1, 1) by default, and in [0, 1) with positive=True: the
  tolerance must hold for both (tests/measure/test_verify.py, tests/stages/test_10.py, test_12.py).
- Failures report the worst elements, and how many kept the poison (never written).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from helpers.run import backend
from helpers.run import gemm
from helpers.core.errors import VerificationError
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant

FP32_UNIT_ROUNDOFF = 2.0**-24
# TF32 keeps 10 of FP32's 23 mantissa bits: an input is off by up to 2^-11 rounded, 2^-10 truncated.
TF32_INPUT_ERROR = 2.0**-10
# The mean relative error of a product of two truncated TF32 inputs, at most (uniformly distributed low bits): the
# bias that truncation adds to a sum, proportional to the sum itself.
TF32_TRUNCATION_BIAS = 2.0**-10
# C's initial value where beta == 0: a kernel must neither read it (0 * NaN = NaN) nor leave it.
POISON = np.float32(np.nan)
SAFETY = 8.0


@dataclass(frozen=True)
class Shape:
    name: str
    M: int
    N: int
    K: int
    alpha: float = 1.25
    beta: float = -0.75

    @property
    def dims(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"


# Odd sizes on purpose: none of 257, 193, 139, ... is a multiple of any tile size.
CATALOGUE: tuple[Shape, ...] = (
    Shape("1x1x1", 1, 1, 1),
    Shape("primes", 31, 37, 41),
    Shape("single row", 1, 97, 63),
    Shape("single column", 97, 1, 63),
    Shape("tall", 517, 9, 35),
    Shape("wide", 9, 517, 35),
    Shape("long K", 13, 11, 1031),
    Shape("beta = 0 (poisoned C)", 65, 67, 69, alpha=1.0, beta=0.0),
    Shape("non-multiples of every tile", 257, 193, 139),
    Shape("large", 512, 512, 512, alpha=0.5, beta=2.0),
)

# A learner's kernel may take a vector path for C where N is a multiple of 4 (float4 rows), which the catalogue's
# poisoned shape (N = 67) never reaches: the write-it checks poison C there too.
WRITE_IT_SHAPES: tuple[Shape, ...] = CATALOGUE + (
    Shape("beta = 0, N a multiple of 4 (poisoned C)", 63, 68, 37, alpha=1.0, beta=0.0),
)


def shape(name: str) -> Shape:
    for s in CATALOGUE:
        if s.name == name:
            return s
    raise KeyError(f"no shape {name!r} in the catalogue: {', '.join(s.name for s in CATALOGUE)}")


def host_bytes(M: int, N: int, K: int, reference: bool = True) -> int:
    """This machine's memory a check of M x N x K holds at its peak: the float32 operands and, with
    `reference`, the float64 reference, tolerance and comparison (measured with tracemalloc: up to
    24 bytes per element of A and B and 72 per element of C)."""
    return 24 * (M * K + K * N) + 72 * M * N if reference else 4 * (M * K + K * N + M * N)


def check_inputs(s: Shape, reference: bool = True, what: str = "verifying it") -> None:
    """That a run of shape `s` can be done, before anything compiles or allocates: sizes, alpha and
    beta, and the memory it needs (gemm.check_problem, the checks of every entry point)."""
    gemm.check_problem(s.M, s.N, s.K, host_bytes(s.M, s.N, s.K, reference), what, alpha=s.alpha, beta=s.beta)


def random_operands(s: Shape, rng: np.random.Generator, positive: bool = False):
    """A, B and C0 of shape s: uniform in [-1, 1), or in [0, 1) with `positive` (same-sign data, where rounding
    errors that always go one way add up); C0 full of NaN where beta == 0."""
    low = 0.0 if positive else -1.0
    A = rng.uniform(low, 1, (s.M, s.K)).astype(np.float32)
    B = rng.uniform(low, 1, (s.K, s.N)).astype(np.float32)
    C0 = (rng.uniform(low, 1, (s.M, s.N)).astype(np.float32) if s.beta != 0
          else np.full((s.M, s.N), POISON, np.float32))
    return A, B, C0


def reference(A, B, C0, alpha, beta, precision: str = "fp32"):
    """alpha A B + beta C0 in float64, and the elementwise tolerance for a result computed in
    `precision` ("fp32", or "tf32" for tensor-core inputs) and stored in float32."""
    A64, B64, C64 = (x.astype(np.float64) for x in (A, B, C0))
    product = A64 @ B64
    ref = alpha * product + (beta * C64 if beta != 0 else 0.0)
    magnitude = abs(alpha) * (np.abs(A64) @ np.abs(B64)) + (abs(beta) * np.abs(C64) if beta != 0 else 0.0)
    tol = SAFETY * np.sqrt(A.shape[1]) * FP32_UNIT_ROUNDOFF * magnitude + np.finfo(np.float32).tiny
    if precision == "tf32":
        tol += abs(alpha) * (SAFETY * TF32_INPUT_ERROR * np.sqrt(np.square(A64) @ np.square(B64))
                             + TF32_TRUNCATION_BIAS * np.abs(product))
    elif precision != "fp32":
        raise ValueError(f"precision is 'fp32' or 'tf32', not {precision!r}")
    return ref, tol


@dataclass
class Check:
    """The verdict on one shape, with the evidence."""
    shape: Shape
    ok: bool
    max_error: float
    worst_ratio: float                   # max |C - ref| / tol; <= 1 passes
    wrong: int
    nan: int
    unwritten: int
    worst: list[tuple[int, int, float, float, float]] = field(default_factory=list)  # i, j, got, want, tol

    @property
    def verdict(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.shape.dims:>13}  {self.shape.name}"

    def _unwritten_cause(self) -> str:
        if self.shape.beta == 0:  # on a CPU, 0 * NaN keeps the NaN's bits: reading C looks the same
            return ("never written or computed from C (still hold the initial NaN of C; with beta = 0 "
                    "a kernel must not read C)")
        return "never written (still hold the initial C)"

    def details(self) -> str:
        if self.ok:
            return f"{self.verdict}  (max error {self.max_error:.2e}, {self.worst_ratio:.2f} of tolerance)"
        size = self.shape.M * self.shape.N
        lines = [f"{self.verdict}  {self.wrong} of {size} elements wrong"
                 + (f", {self.nan} NaN" if self.nan else "")
                 + (f", {self.unwritten} {self._unwritten_cause()}" if self.unwritten else "")]
        for i, j, got, want, tol in self.worst:
            lines.append(f"      C[{i}, {j}] = {got:.6g}, expected {want:.6g} (tolerance {tol:.1e})")
        return "\n".join(lines)


def compare(C, C0, ref, tol, s: Shape, worst: int = 5) -> Check:
    C64 = C.astype(np.float64)
    err = np.abs(C64 - ref)
    bad = ~(err <= tol)  # NaN compares false, so it is bad
    ratio = np.where(np.isnan(err), np.inf, err / tol)
    # Still C's initial bits (compared as bits: NaN == NaN is false).
    same = np.asarray(C, np.float32).view(np.uint32) == np.asarray(C0, np.float32).view(np.uint32)
    unwritten = int(np.sum(bad & same))
    order = np.argsort(ratio, axis=None)[::-1][:worst] if bad.any() else []
    rows = [(int(i), int(j), float(C[i, j]), float(ref[i, j]), float(tol[i, j]))
            for i, j in (np.unravel_index(k, C.shape) for k in order)]
    finite = err[np.isfinite(err)]
    return Check(s, not bad.any(), float(finite.max()) if finite.size else float("inf"),
                 float(ratio.max()), int(bad.sum()), int(np.isnan(C).sum()), unwritten, rows)


def check(variant: Variant, s: Shape, config: KernelConfig | None = None,
          rng: np.random.Generator | None = None, positive: bool = False) -> Check:
    """Runs the kernel once on fresh random data of shape `s` (in [0, 1) with `positive`) and compares with
    float64."""
    check_inputs(s)
    rng = rng or np.random.default_rng()
    A, B, C0 = random_operands(s, rng, positive)
    C = gemm.run(variant, A, B, C0, s.alpha, s.beta, config)
    ref, tol = reference(A, B, C0, s.alpha, s.beta, variant.precision)
    return compare(C, C0, ref, tol, s)


@dataclass
class Report:
    """Checks of one kernel configuration over a set of shapes."""
    title: str
    checks: list[Check]
    backend: str = ""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def verdicts(self) -> str:
        """Only what is the same on every backend and run: for nbval's output checks."""
        head = f"{self.title}: {'all' if self.ok else 'NOT all'} {len(self.checks)} shapes correct"
        return "\n".join([head] + [f"  {c.verdict}" for c in self.checks])

    def __str__(self) -> str:
        head = self.verdicts().splitlines()[0] + (f" (backend: {self.backend})" if self.backend else "")
        return "\n".join([head] + [f"  {c.details()}" for c in self.checks])

    def raise_if_failed(self) -> "Report":
        if not self.ok:
            raise VerificationError(str(self))
        return self


def check_catalogue(variant: Variant, config: KernelConfig | None = None,
                    shapes: tuple[Shape, ...] = CATALOGUE, seed: int | None = None, positive: bool = False) -> Report:
    """Every shape of the catalogue, fresh random data each (seed only to replay a failure), uniform in [-1, 1)
    or, with `positive`, in [0, 1); config=None: the variant's default for the architecture in use
    (backend.arch())."""
    config = config or variant.default_for(backend.arch())
    rng = np.random.default_rng(seed)
    title = f"{variant.name} ({config.label()}{', data in [0, 1)' if positive else ''})"
    return Report(title, [check(variant, s, config, rng, positive) for s in shapes], backend.name())

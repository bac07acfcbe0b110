"""Stage 10 on the emulator: the tensor cores' TF32 is really emulated (the kernel's error is
TF32's, far beyond FP32's), the rounding modes differ as TF32 says they should, a broken kernel
is caught within TF32's tolerance, and wmma misuse stops with a message that names the fix."""

import numpy as np
import pytest

from helpers.core import paths
from helpers.run import gemm
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import KernelCrashError
from helpers.core.configs import TensorCoreConfig

V = stages.variant("10_tensor_cores")
SMALL = TensorCoreConfig(32, 32, 16, 16, 16, 2)  # 4 warps: quick on the emulator


def _errors(C, A, B):
    """|C - AB| / RMS(AB) against float64: (largest, RMS)."""
    ref = A.astype(np.float64) @ B.astype(np.float64)
    e = np.abs(C.astype(np.float64) - ref) / np.sqrt(np.mean(ref * ref))
    return e.max(), np.sqrt(np.mean(e * e))


@pytest.fixture
def operands(rng):
    return rng.uniform(-1, 1, (64, 128)).astype(np.float32), rng.uniform(-1, 1, (128, 48)).astype(np.float32)


def test_only_the_tensor_core_stages_are_tf32():
    assert V.precision == "tf32"
    assert {v.precision for v in stages.variants() if v.stage_id in ("10", "12")} == {"tf32"}
    assert {v.precision for v in stages.variants() if v.stage_id not in ("10", "12")} == {"fp32"}


def test_the_emulator_computes_in_tf32_not_fp32(cpu_backend, operands):
    A, B = operands
    C = gemm.run(V, A, B, config=SMALL)
    ref, tol32 = verify.reference(A, B, np.zeros((64, 48), np.float32), 1.0, 0.0, "fp32")
    _, tol_tf32 = verify.reference(A, B, np.zeros((64, 48), np.float32), 1.0, 0.0, "tf32")
    err = np.abs(C.astype(np.float64) - ref)
    assert (err <= tol_tf32).all()
    # FP32 arithmetic would stay within FP32's tolerance; TF32's 10-bit inputs do not
    assert (err > tol32).mean() > 0.5
    worst, rms = _errors(C, A, B)
    assert 1e-4 < rms < 1e-3 and worst < 5e-3


def test_rounding_to_nearest_halves_the_error_of_dropping_bits(cpu_backend, operands):
    A, B = operands
    rms = {r: _errors(gemm.run(V, A, B, config=TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=r)), A, B)[1]
           for r in (0, 1, 2)}
    assert rms[0] > 1.7 * rms[1]  # truncation errs twice as far, and always the same way
    assert rms[1] == pytest.approx(rms[2], rel=1e-6)  # the same rounding, in fragments or in shared memory


@pytest.fixture
def edited_kernel(tmp_path, monkeypatch):
    """Writes an edited copy of the stage-10 kernel where the course looks for kernels."""
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    original = (paths.ROOT / "kernels" / V.path.name).read_text()

    def edit(old: str, new: str):
        assert old in original
        (tmp_path / V.path.name).write_text(original.replace(old, new))
    return edit


def test_a_skipped_k_step_fails_verification(cpu_backend, edited_kernel):
    edited_kernel("for (int kk = 0; kk < BK; kk += 8) {", "for (int kk = 0; kk < BK - 8; kk += 8) {")
    report = verify.check_catalogue(V, SMALL, shapes=(verify.shape("primes"),))
    assert not report.ok and "FAIL" in str(report)


def test_misaligned_staging_rows_stop_with_the_wmma_fix(cpu_backend, edited_kernel, operands):
    # rows of 18 floats: ldm is not a multiple of 4 floats, which wmma does not allow
    edited_kernel("LDC = 16 + 4;", "LDC = 16 + 2;")
    with pytest.raises(KernelCrashError, match="store_matrix_sync") as e:
        gemm.run(V, *operands, config=SMALL)
    assert "multiple of 4 floats" in str(e.value) and "10_tensor_cores.cu" in str(e.value)


def test_misaligned_tile_rows_stop_at_the_asynchronous_copy(cpu_backend, edited_kernel, operands):
    # rows of BK + 2 floats: the 16-byte copies into them are misaligned before wmma sees them
    edited_kernel("LDA = BK + 4,", "LDA = BK + 2,")
    with pytest.raises(KernelCrashError, match="__pipeline_memcpy_async") as e:
        gemm.run(V, *operands, config=SMALL)
    assert "Fix:" in str(e.value)


def test_the_explorer_bounds_a_tf32_kernel_by_the_tensor_cores_not_the_fp32_roof(cpu_backend):
    from helpers.views import widgets
    text = widgets.describe_tile_config(widgets.run_tile_config(V.name, **{f: getattr(SMALL, f) for f in
                                                                         widgets.config_fields(V)}))
    assert "PASS" in text and "TF32 runs on the tensor cores" in text and "494.7" in text
    assert "roofline bound on" not in text

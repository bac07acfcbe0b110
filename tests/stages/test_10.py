"""Stage 10 on the emulator: the tensor cores' TF32 is really emulated (the kernel's error is
TF32's, far beyond FP32's), the rounding modes differ as TF32 says they should, a broken kernel
is caught within TF32's tolerance, and wmma misuse stops with a message that names the fix."""

import dataclasses
import re

import numpy as np
import pytest

from helpers.core import paths
from helpers.run import gemm
from helpers.core import stages
from helpers.measure import accesses, intensity, memory, verify
from helpers.views import display
from helpers.core.errors import BarrierError, KernelCrashError
from helpers.core.configs_tensor_cores import MmaSyncConfig, TensorCoreConfig
from helpers.core.kernel_source import strip_comments

pytestmark = pytest.mark.emulator

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


def test_only_the_tensor_core_kernels_are_tf32():
    # stages 10 and 12, and stage 11's stream-K, which is stage 12's kernel
    tensor_cores = lambda v: v.stage_id in ("10", "12") or v.name == "11_stream_k"
    assert V.precision == "tf32"
    assert {v.precision for v in stages.variants() if tensor_cores(v)} == {"tf32"}
    assert {v.precision for v in stages.variants() if not tensor_cores(v)} == {"fp32"}


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


@pytest.mark.parametrize("round_", [0, 1])
def test_the_catalogue_passes_on_same_sign_data(cpu_backend, round_):
    """U[0, 1): truncation's errors all go one way there, and the tolerance must hold all the same."""
    for variant, config in ((V, TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=round_)),
                            (MMA, dataclasses.replace(MMA_SMALL, ROUND=round_))):
        report = verify.check_catalogue(variant, config, positive=True)
        assert report.ok, str(report)


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


# ---- 10_mma_sync: wmma's instruction, mma.sync, with the fragment layout made explicit ----------------------------
MMA = stages.variant("10_mma_sync")
MMA_SMALL = MmaSyncConfig(32, 32, 16, 16, 16, 2)


def _lines_with(variant, text: str) -> list[int]:
    return [n for n, line in enumerate(variant.path.read_text().splitlines(), 1) if text in line]


def _code(variant) -> set[str]:
    """The kernel file's code lines, stripped (comments and blank lines left out)."""
    return {ln.strip() for ln in strip_comments(variant.path.read_text()).splitlines() if ln.strip()}


def _between(variant, start: str, end: str) -> list[str]:
    """The code lines from the one that starts with `start` to the one before `end` (comments left out)."""
    lines = [ln.strip() for ln in strip_comments(variant.path.read_text()).splitlines() if ln.strip()]
    first = next(i for i, ln in enumerate(lines) if ln.startswith(start))
    last = next(i for i, ln in enumerate(lines) if i > first and ln.startswith(end))
    return lines[first:last]


def _changed_lines(old, new) -> int:
    return sum(1 for ln in display.diff_text(old, new, 0, code_only=True).splitlines()
               if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


@pytest.mark.parametrize("round_", [0, 1, 2])
def test_mma_sync_is_tf32_accurate_and_gives_wmmas_bits(cpu_backend, rng, round_):
    """An odd shape (partial tiles in M, N and K, N odd: the 4-byte stores): within TF32's tolerance of float64 with
    beta = 0 and C full of NaN (never read), and with beta != 0 the very bits of 10_tensor_cores, whose emulated
    wmma uses the same layout and order of products."""
    M, N, K = 37, 45, 67
    A, B = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)
    poisoned = np.full((M, N), np.nan, np.float32)
    C = gemm.run(MMA, A, B, poisoned, 1.5, 0.0, config=dataclasses.replace(MMA_SMALL, ROUND=round_))
    ref, tol = verify.reference(A, B, poisoned, 1.5, 0.0, "tf32")
    assert (np.abs(C.astype(np.float64) - ref) <= tol).all()
    C0 = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    ours = gemm.run(MMA, A, B, C0, 1.5, -0.5, config=dataclasses.replace(MMA_SMALL, ROUND=round_))
    wmma = gemm.run(V, A, B, C0, 1.5, -0.5, config=TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=round_))
    np.testing.assert_array_equal(ours, wmma)


def test_the_step_from_wmma_changes_only_the_fragments_and_the_epilogue():
    """10_mma_sync is 10_tensor_cores with mma.sync in PTX's layout: wmma and the staging tile are gone, the
    copies and the pipeline are 10_tensor_cores' lines, the configurations are the same, and the diff is a
    fraction of the one from 09_async_copy to wmma."""
    assert MMA.parent == V.name and stages.variant("10_wgmma").parent == MMA.name
    assert [c.template_args() for c in (MMA.default, *MMA.alternatives)] == \
           [c.template_args() for c in (V.default, *V.alternatives)]
    ours = _code(MMA)
    assert not [ln for ln in ours if re.search(r"wmma|nvcuda|<mma\.h>|\bCs\b|\bcs\b|LDC|__syncwarp", ln)]
    for start, end in (("auto copy_tiles", "auto round_tiles"), ("auto start_tile", "};"),
                       ("for (int p = 0; p < STAGES - 1; ++p)", "for (int kk = 0; kk < BK; kk += 8)")):
        assert _between(MMA, start, end) == _between(V, start, end), start
    assert _changed_lines(V.name, MMA.name) < _changed_lines("09_async_copy", V.name) / 2


@pytest.mark.parametrize("K, words", [(16, "finished without reaching it"), (48, "no thread of the block can go on")])
def test_a_lane_that_skips_the_mma_stops_naming_its_line(cpu_backend, tmp_path, monkeypatch, rng, K, words):
    # one tile: lane 5 finishes while its warp waits in the mma; more: it waits at the next tile's __syncthreads
    call = "for (int j = 0; j < FN; ++j) mma_m16n8k8_tf32("
    original = MMA.path.read_text()
    assert original.count(call) == 1
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    (tmp_path / MMA.path.name).write_text(original.replace(call, call.replace("mma_", "if (lane != 5) mma_")))
    line = _lines_with(MMA, "if (lane != 5) mma_m16n8k8_tf32(")[0]
    A, B = rng.uniform(-1, 1, (32, K)).astype(np.float32), rng.uniform(-1, 1, (K, 32)).astype(np.float32)
    with pytest.raises(BarrierError, match=words) as e:
        gemm.run(MMA, A, B, config=MMA_SMALL)
    assert f"10_mma_sync.cu:{line}:" in str(e.value) if K == 16 else f"warp collective (line {line})" in str(e.value)


@pytest.mark.parametrize("config", [MMA_SMALL, MMA.default], ids=lambda c: c.label())
def test_each_lane_loads_its_documented_elements_one_wavefront_a_load(config):
    """The trace of the kernel file: lane 4g + t loads A (g, t), (g+8, t), (g, t+4), (g+8, t+4) and B (t, g),
    (t+4, g) of each fragment, 4 bytes a load, each load of the warp one wavefront (no bank conflict); the only
    shared stores are the tiles' copies (no staging tile)."""
    tr = accesses.kernel_trace(MMA, config, 64, 64, 64)
    (a_line,), (b_line,) = _lines_with(MMA, "a[i][0] = p[0]"), _lines_with(MMA, "b[j][0] = p[0]")
    loads = accesses.shared_requests(tr, first_only=False)
    frags = {ln: [q for q in loads if q.line == ln] for ln in (a_line, b_line)}
    assert {q.line for q in loads} == {a_line, b_line}
    for q in frags[a_line] + frags[b_line]:
        assert q.size == 4 and q.lanes.size == 32 and memory.banks(q).wavefronts == 1
    g, t = np.arange(32) // 4, np.arange(32) % 4
    lda, ldb, b_origin = config.BK + 4, config.BN + 8, config.STAGES * config.BM * (config.BK + 4)
    first_a, first_b = frags[a_line][:4], frags[b_line][:2]   # fragment 0 of the first step of tile 0, warp 0
    for e, q in enumerate(first_a):
        words = (q.offsets - accesses.array_origin(tr, q)) // 4
        np.testing.assert_array_equal(words[np.argsort(q.lanes)], (g + 8 * (e % 2)) * lda + t + 4 * (e // 2))
    for e, q in enumerate(first_b):
        words = (q.offsets - accesses.array_origin(tr, q)) // 4
        np.testing.assert_array_equal(words[np.argsort(q.lanes)], b_origin + (t + 4 * e) * ldb + g)
    copies = set(_lines_with(MMA, "__pipeline_memcpy_async("))
    assert {q.line for q in accesses.shared_requests(tr, op="store")} <= copies


def test_the_intensity_model_counts_the_traced_shared_loads():
    # one block (32 x 32) and ROUND = 1: every shared load is a fragment element
    tr = accesses.kernel_trace(MMA, MMA_SMALL, 32, 32, 64)
    traced = sum(q.lanes.size * q.size for w in range(MMA_SMALL.warps())
                 for q in accesses.shared_requests(tr, warp=w, first_only=False))
    assert traced == intensity.intensity(MMA, 32, 32, 64, MMA_SMALL).smem_bytes


def test_exercise_10_3_messages_point_at_the_table_the_notebook_shows():
    """A cold learner got 'Correct: 2.68' for 2.67, field names of a file the notebook never shows, and no word that
    2.62 came from section 3's emulator table."""
    from helpers.course.exercises import stage10
    want = stage10._ex10_3_ratio()
    right = stage10.check_10_exercise_3(round(want, 2))
    assert right.ok and f"{want:.3f}" in right.message
    close = stage10.check_10_exercise_3(round(want - 0.06, 2))
    assert not close.ok and "section 3's emulator run" in close.message and "rms_err_over_rms" not in close.message
    far = stage10.check_10_exercise_3(9.0)
    assert not far.ok and "RMS error / RMS(C)" in far.message
    assert "upside down" in stage10.check_10_exercise_3(round(1 / want, 3)).message

"""Hopper's warpgroup MMA on the emulator (helpers/emulator/runtime/include/wgmma.cuh): the same
register layouts and swizzle as an H100 measured, the 10_wgmma kernel verified in TF32, and the
misuses a GPU would answer with wrong results or a hang stopped with their line and fix."""

import json
import re

import numpy as np
import pytest

from helpers.core import paths
from helpers.run import gemm
from helpers.core import stages
from helpers.measure import trace
from helpers.measure import verify
from helpers.core.errors import BarrierError, KernelCrashError
from helpers.run.kernel_loader import load_kernel
from helpers.core.configs import WgmmaConfig

pytestmark = pytest.mark.emulator

ROOT = paths.ROOT
PROBE = ROOT / "tools" / "experiments" / "wgmma_probe.cu"
GPU_PROBE = ROOT / "results" / "stage_10_h100_2026-11-24" / "exp_10_wgmma_first.json"
V = stages.variant("10_wgmma")
KERNEL = V.path  # kernels/10_wgmma.cu, before any test points paths.KERNELS elsewhere
SMALL = WgmmaConfig(64, 64, 3)  # one warpgroup, 64 x 64 tiles: quick on the emulator
ODD = verify.shape("non-multiples of every tile")  # 5 tiles along K: every stage is refilled


def documented_layout(D):
    """Each thread's 32 accumulators of a 64 x 64 D, as kernels/wgmma.cuh documents them:
    d[4j + e] = D(16w + g + 8 (e / 2), 8j + 2t + e % 2) for thread 32w + 4g + t."""
    tid, i = np.arange(128)[:, None], np.arange(32)[None, :]
    w, g, t, j, e = tid // 32, tid % 32 // 4, tid % 4, i // 4, i % 4
    return D[16 * w + g + 8 * (e // 2), 8 * j + 2 * t + e % 2]


def test_the_h100_probe_matched_the_documented_layout():
    probe = json.loads(GPU_PROBE.read_text())["probe"]
    assert [probe[f"step_{s}"]["matches_documented_layout"] for s in range(4)] == [True] * 4


def test_the_probe_gives_the_documented_layout_at_every_step_of_a_swizzled_row(cpu_backend):
    # tools/experiments/exp_10_wgmma.py's probe(): small integers, exact in TF32 and in FP32 sums
    kernel = load_kernel(PROBE, "wgmma_probe")
    rng = np.random.default_rng(1)
    for s in range(4):
        A = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        Bt = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        d = np.zeros(128 * 32, np.float32)
        kernel((1, 1, 1), (128, 1, 1), (A, Bt, np.int32(s), d))
        np.testing.assert_array_equal(d.reshape(128, 32), documented_layout(A.astype(np.float64) @ Bt.T))


WINDOW = """
__global__ void windows(unsigned long long* out) {
  __shared__ __align__(1024) float tile[256];
  extern __shared__ __align__(128) float dyn[];
  tile[threadIdx.x] = dyn[threadIdx.x] = 0.0f;
  out[0] = __cvta_generic_to_shared(tile);
  out[1] = __cvta_generic_to_shared(dyn);
  out[2] = __cvta_generic_to_shared(dyn + 5);
}
__global__ void not_shared(float* a, unsigned long long* out) {
  out[0] = __cvta_generic_to_shared(a);
}
"""


def test_shared_window_offsets_are_as_aligned_as_declared_and_no_more(cpu_backend, tmp_path):
    (tmp_path / "window.cu").write_text(WINDOW)
    out = np.zeros(3, np.uint64)
    load_kernel(tmp_path / "window.cu", "windows")(1, 32, (out,), shared_mem=1024)
    # dynamic shared memory aligned to 128 bytes but not 256, as after a static array on an H100
    assert out[0] % 1024 == 0 and out[1] % 256 == 128 and out[2] - out[1] == 20 and out[1] != out[0]
    with pytest.raises(KernelCrashError, match="not in shared memory") as e:
        load_kernel(tmp_path / "window.cu", "not_shared")(1, 32, (np.zeros(1, np.float32), out))
    line = WINDOW.splitlines().index("  out[0] = __cvta_generic_to_shared(a);") + 1
    assert f"window.cu:{line}:" in str(e.value)


def test_a_block_of_other_than_whole_warpgroups_is_stopped(cpu_backend):
    a = np.zeros((64, 8), np.float32)
    with pytest.raises(KernelCrashError, match="multiple of 128 threads") as e:
        load_kernel(PROBE, "wgmma_probe")(1, 64, (a, a, np.int32(0), np.zeros(64 * 32, np.float32)))
    assert "has 64 threads" in str(e.value) and "wgmma_probe.cu:" in str(e.value)


@pytest.mark.parametrize("positive", [False, True], ids=["U[-1,1)", "U[0,1)"])
@pytest.mark.parametrize("config", [SMALL, WgmmaConfig(64, 64, 3, ROUND=1)], ids=lambda c: c.label())
def test_10_wgmma_verifies_on_the_catalogue(cpu_backend, config, positive):
    # same-sign data too: truncation's errors all go one way there (verify.py's bias term)
    report = verify.check_catalogue(V, config, positive=positive)
    assert report.ok, str(report)


def test_the_default_verifies_on_an_odd_shape(cpu_backend):
    report = verify.check_catalogue(V, shapes=(ODD,))
    assert report.ok, str(report)


def test_the_result_is_tf32s_not_fp32s(cpu_backend, rng):
    A, B = rng.uniform(-1, 1, (64, 128)).astype(np.float32), rng.uniform(-1, 1, (128, 48)).astype(np.float32)
    C = gemm.run(V, A, B, config=SMALL)
    ref, tol32 = verify.reference(A, B, np.zeros((64, 48), np.float32), 1.0, 0.0, "fp32")
    _, tol_tf32 = verify.reference(A, B, np.zeros((64, 48), np.float32), 1.0, 0.0, "tf32")
    err = np.abs(C.astype(np.float64) - ref)
    assert (err <= tol_tf32).all()
    assert (err > tol32).mean() > 0.5  # FP32 inputs would stay within FP32's tolerance


def test_a_trace_leaves_the_tensor_cores_reads_out(cpu_backend):
    tr = trace.capture_variant(V, SMALL, M=64, N=64, K=96)
    lines = set(tr.records["line"].tolist())
    source = KERNEL.read_text().splitlines()
    mma = next(n for n, text in enumerate(source, 1) if "wgmma_m64k8_tf32<BM>(" in text)
    fragments = {n for n, text in enumerate(source, 1) if "reinterpret_cast<const float2*>(&bs[" in text}
    assert fragments and fragments <= lines and mma not in lines


# ---- misuse, each through an edited copy of the kernel ------------------------------------------

@pytest.fixture
def edited_kernel(tmp_path, monkeypatch):
    """Writes an edited copy of 10_wgmma.cu where the course looks for kernels (without
    kernels/wgmma.cuh beside it: the emulator's own wgmma.cuh is the one included). Returns the
    line of the copy's wgmma_m64k8_tf32 call, which the emulator names for a misuse."""
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    original = KERNEL.read_text()

    def edit(old: str, new: str) -> int:
        assert old in original
        text = original.replace(old, new)
        (tmp_path / KERNEL.name).write_text(text)
        return next(n for n, line in enumerate(text.splitlines(), 1) if "wgmma_m64k8_tf32<BM>(" in line)
    return edit


def test_refilling_a_stage_before_its_products_complete_stops_at_the_copy(cpu_backend, edited_kernel):
    # waiting for tile t-3's products instead of t-2's: the stage of tile t-2 is refilled while its products still
    # read it, a race on a GPU (wrong only sometimes); here the copy into a tile in flight is stopped, with both lines
    line = edited_kernel("wgmma_wait_group<1>();", "wgmma_wait_group<2>();")
    with pytest.raises(KernelCrashError, match="tensor cores are still reading") as e:
        verify.check_catalogue(V, SMALL, shapes=(ODD,))
    text = str(e.value)
    assert f"wgmma_m64k8_tf32 at line {line}" in text and "__pipeline_memcpy_async" in text


def test_tiles_not_aligned_to_1024_bytes_stop_with_the_swizzle_rule(cpu_backend, edited_kernel):
    aligned = re.search(r"float\* const tiles = smem \+ [^;]*;", KERNEL.read_text())
    line = edited_kernel(aligned.group(0), "float* const tiles = smem;")
    with pytest.raises(KernelCrashError, match="1024-byte") as e:
        verify.check_catalogue(V, SMALL, shapes=(verify.shape("primes"),))
    text = str(e.value)
    assert f"10_wgmma.cu:{line}:" in text and "128-byte swizzle" in text and "Fix: align the tiles" in text


def test_a_missing_final_wait_stops_with_the_products_not_waited_for(cpu_backend, edited_kernel):
    line = edited_kernel("wgmma_wait_group<0>();", "")
    with pytest.raises(KernelCrashError, match="never waited for") as e:
        verify.check_catalogue(V, SMALL, shapes=(verify.shape("primes"),))
    assert f"10_wgmma.cu:{line}:" in str(e.value) and "Fix: call wgmma_wait_group<0>()" in str(e.value)


def test_products_issued_by_part_of_a_warpgroup_stop_as_divergence(cpu_backend, edited_kernel):
    edited_kernel("++s) wgmma_m64k8_tf32<BM>(", "++s) if (warp < 2) wgmma_m64k8_tf32<BM>(")
    with pytest.raises(BarrierError, match="meet at different wgmma calls") as e:
        verify.check_catalogue(V, SMALL, shapes=(verify.shape("primes"),))
    assert "wgmma_m64k8_tf32" in str(e.value) and "wgmma_commit_group" in str(e.value)

"""Stage 12 on a GPU (an H100 or H200): the driver's tensor maps, the copy engine's TF32 rounding against cuBLAS
TF32 on the same data, the same results whether the blocks are persistent or not, the emulator's rounding the GPU's,
and a refusal on other GPUs. Skipped, and reported as skipped, where CuPy sees no GPU."""

import numpy as np
import pytest

from helpers.core import stages
from helpers.core.configs_hopper import TensorMapBox, WarpSpecializedConfig as WS
from helpers.core.errors import KernelArgumentError, UnsupportedFeatureError
from helpers.measure import bench
from helpers.run import backend, gemm

pytestmark = pytest.mark.gpu
V = stages.variant("12_warp_specialized")


@pytest.fixture
def hopper_gpu():
    cc = backend.current().device_info().compute_capability
    if V.unsupported_on(cc):
        with pytest.raises(UnsupportedFeatureError, match="H100, H200"):
            gemm.run(V, np.ones((64, 8), np.float32), np.ones((8, 64), np.float32))
        pytest.skip(f"this GPU is compute capability {cc}: the kernel is refused (checked), it needs sm_90a")


def test_errors_match_cublas_tf32_on_the_same_data(hopper_gpu):
    rows = {r["what"]: r for r in bench.precision_rows(1024, ((V, WS(ROUND=1)), (V, WS(ROUND=0))))}
    cublas = rows["cuBLAS TF32"]
    ours = next(r for w, r in rows.items() if w.startswith(V.name) and "ROUND=1" in w)
    trunc = next(r for w, r in rows.items() if w.startswith(V.name) and "ROUND=0" in w)
    for key in ("max_err_over_rms", "rms_err_over_rms"):
        assert ours[key] <= 1.2 * cublas[key], (key, ours, cublas)
    assert trunc["rms_err_over_rms"] > 1.5 * ours["rms_err_over_rms"]   # truncation is measurably worse


def test_persistent_blocks_give_the_same_bits_as_one_block_per_tile(hopper_gpu, rng):
    A = rng.uniform(-1, 1, (1000, 600)).astype(np.float32)
    B = rng.uniform(-1, 1, (600, 1100)).astype(np.float32)
    one = gemm.run(V, A, B, config=WS(PERSISTENT=1))
    per_tile = gemm.run(V, A, B, config=WS(PERSISTENT=0))
    assert np.array_equal(one, per_tile)


PINGPONG = WS(PINGPONG=1, STAGES=WS.PINGPONG_STAGES)


@pytest.mark.parametrize("config", [PINGPONG, WS(PINGPONG=1, PERSISTENT=0), WS(128, 2, 3, ROUND=0, PINGPONG=1)],
                         ids=lambda c: c.label())
def test_pingpong_passes_the_catalogue_on_data_of_either_sign(hopper_gpu, config):
    """Each consumer warpgroup a tile of its own, in turn (the turn mbarriers, one consumer's warps per empty
    barrier, the ring's positions a whole tile apart): the catalogue on U[-1, 1) and U[0, 1)."""
    from helpers.measure import verify
    for positive in (False, True):
        report = verify.check_catalogue(V, config, positive=positive)
        assert report.ok, str(report)


def test_pingpong_blocks_walking_many_tiles_give_the_bits_of_a_block_per_two_tiles(hopper_gpu, rng):
    """2000 x 3100 x 700 in 8 x 49 tiles: on 132 SMs the persistent blocks walk two to three tiles, the turns passing
    back and forth; each tile's products are the same whichever block and consumer takes it."""
    from helpers.measure import verify
    A = rng.uniform(-1, 1, (2000, 700)).astype(np.float32)
    B = rng.uniform(-1, 1, (700, 3100)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (2000, 3100)).astype(np.float32)
    walking = gemm.run(V, A, B, C0.copy(), alpha=0.5, beta=1.5, config=PINGPONG)
    per_two = gemm.run(V, A, B, C0.copy(), alpha=0.5, beta=1.5, config=WS(PINGPONG=1, STAGES=5, PERSISTENT=0))
    assert np.array_equal(walking, per_two)
    ref, tol = verify.reference(A, B, C0, 0.5, 1.5, "tf32")
    assert np.all(np.abs(walking - ref) <= tol)


@pytest.mark.emulator
def test_the_emulators_tf32_rounding_is_the_copy_engines(hopper_gpu, rng):
    """Inputs on ties and near them: the emulator's round-to-nearest-even gives the GPU's bits exactly."""
    from helpers.run import cpu_backend
    M, N, K = 128, 64, 32
    base = rng.uniform(-1, 1, (M, K)).astype(np.float32).view(np.uint32) & 0xFFFFE000
    ties = (base | 0x1000 | (rng.integers(0, 2, (M, K)) * 0x2000).astype(np.uint32)).view(np.float32)  # low bits = half
    B = np.zeros((K, N), np.float32)
    B[np.arange(K), np.arange(K) % N] = 1.0     # C's column j sums A's columns k with k % 64 == j: here one each
    gpu = gemm.run(V, ties, B, config=WS(ROUND=1))
    backend.use("cpu")
    try:
        cpu = gemm.run(V, ties, B, config=WS(ROUND=1))
    finally:
        backend.use("gpu")
    assert np.array_equal(gpu, cpu)
    assert cpu_backend.NAME == "cpu"


def test_the_driver_refuses_a_map_with_a_pitch_that_is_not_16_bytes():
    import cupy as cp
    from helpers.run import gpu_backend
    a = cp.zeros((64, 63), cp.float32)
    with pytest.raises(KernelArgumentError, match="refused the tensor map"):
        gpu_backend.tensor_map(a, TensorMapBox(64, 63, 64, 32), 63)


@pytest.mark.parametrize("config", [WS(CLUSTER=2), WS(128, 2, 4, CLUSTER=2), WS(CLUSTER=2, PERSISTENT=0)],
                         ids=lambda c: c.label())
def test_clusters_of_two_sharing_a_by_multicast_verify_on_the_catalogue(hopper_gpu, config):
    # sgemm_warp_specialized_cluster, declared __cluster_dims__(2, 1, 1), launched through the ordinary launch (CuPy's
    # cuLaunchKernel) on a grid of whole clusters; odd tile counts leave a block of a cluster without a tile
    from helpers.measure import verify
    report = verify.check_catalogue(V, config)
    assert report.ok, report


def test_clusters_give_the_same_bits_as_single_blocks(hopper_gpu, rng):
    # the same products in the same order: sharing A's tile by multicast changes where it comes from, not its value
    A = rng.uniform(-1, 1, (1000, 600)).astype(np.float32)
    B = rng.uniform(-1, 1, (600, 1100)).astype(np.float32)
    np.testing.assert_array_equal(gemm.run(V, A, B, config=WS(CLUSTER=2)), gemm.run(V, A, B, config=WS()))


@pytest.mark.parametrize("config", [WS(EPILOGUE=1), WS(BM=128, CONSUMERS=1, STAGES=3, EPILOGUE=1)],
                         ids=lambda c: c.label())
def test_the_tma_store_epilogue_passes_the_catalogue(hopper_gpu, config):
    """EPILOGUE = 1 on the catalogue (its shapes with N % 4 != 0 take the register epilogue: for_output) and on
    shapes whose C a map describes, beta 0 on poisoned C and beta != 0."""
    from helpers.measure import verify
    shapes = verify.CATALOGUE + (verify.Shape("odd, N % 4 = 0", 257, 196, 139),
                                 verify.Shape("beta = 0 (poisoned C), N % 4 = 0", 1031, 516, 300, alpha=1.0, beta=0.0),
                                 verify.Shape("large, N % 4 = 0", 2048, 1028, 1024, alpha=0.5, beta=2.0))
    report = verify.check_catalogue(V, config, shapes=shapes)
    assert report.ok, str(report)


def test_the_tma_store_epilogue_gives_the_register_epilogues_bits(hopper_gpu, rng):
    """The same products, the same alpha A B + beta C in each element: only the way to C differs."""
    A = rng.uniform(-1, 1, (1000, 600)).astype(np.float32)
    B = rng.uniform(-1, 1, (600, 1100)).astype(np.float32)
    C = rng.uniform(-1, 1, (1000, 1100)).astype(np.float32)
    registers = gemm.run(V, A, B, C, alpha=1.5, beta=-0.5, config=WS())
    stored = gemm.run(V, A, B, C, alpha=1.5, beta=-0.5, config=WS(EPILOGUE=1))
    assert np.array_equal(registers, stored)

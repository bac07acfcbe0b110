"""The emulator and a real GPU agree on the test kernels (skipped where there is no GPU).

The same kernel file, the same launch and the same input run once on the CPU emulator and once
through NVRTC/CuPy on the GPU; integer and data-movement kernels must agree bit for bit, and
floating-point ones within a tolerance. Every kernel's result on the GPU is also checked against
an expectation computed here, so that agreement cannot hide a shared mistake.
"""

from __future__ import annotations


import numpy as np
import pytest

from helpers.core import paths
from helpers.run import backend
from helpers.run.kernel_loader import load_kernel

KERNELS = paths.ROOT / "tests" / "kernels"

pytestmark = [pytest.mark.gpu, pytest.mark.emulator]  # each GPU result is compared with the emulator's


@pytest.fixture(autouse=True)
def restore_backend():
    yield
    backend.use(None)


def run_on(name: str, file: str, kernel: str, grid, block, args, shared_mem: int = 0) -> list[np.ndarray]:
    """Launches on backend `name`; returns every array argument, back on the host."""
    backend.use(name)
    bk = backend.current()
    assert bk.NAME == name
    device_args = tuple(bk.to_device(a) if isinstance(a, np.ndarray) else a for a in args)
    load_kernel(KERNELS / file, kernel)(grid, block, device_args, shared_mem=shared_mem)
    bk.synchronize()
    return [bk.to_host(a) for a in device_args if not isinstance(a, np.generic)]


def both(file: str, kernel: str, grid, block, args, shared_mem: int = 0):
    cpu = run_on("cpu", file, kernel, grid, block, args, shared_mem)
    gpu = run_on("gpu", file, kernel, grid, block, args, shared_mem)
    assert len(cpu) == len(gpu)
    return cpu, gpu


def assert_identical(cpu, gpu):
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_array_equal(c, g, err_msg=f"array argument {i}: emulator != GPU")


def test_exchange(rng):
    x = rng.integers(-10**6, 10**6, size=3 * 100, dtype=np.int32)
    cpu, gpu = both("barriers.cu", "exchange", 3, 100, (x, np.zeros_like(x)))
    assert_identical(cpu, gpu)
    t = np.arange(100)
    np.testing.assert_array_equal(gpu[1], x.reshape(3, 100)[:, (t + 1) % 100].reshape(-1))


def test_isolation_and_sync_votes(rng):
    cpu, gpu = both("barriers.cu", "isolation", 8, 128, (np.zeros(8 * 128, np.int32),))
    assert_identical(cpu, gpu)
    np.testing.assert_array_equal(gpu[0], np.repeat(np.arange(8), 128))
    pred = rng.integers(0, 2, size=4 * 128, dtype=np.int32)
    pred[128:256] = 1
    cpu, gpu = both("barriers.cu", "sync_votes", 4, 128, (pred, np.zeros(12, np.int32)))
    assert_identical(cpu, gpu)
    assert gpu[1].reshape(4, 3)[:, 0].tolist() == pred.reshape(4, 128).sum(1).tolist()


@pytest.mark.parametrize("width, src, delta, lane_mask", [
    (32, 5, 3, 1), (32, 31, 1, 16), (8, 3, 2, 5), (8, 1, 9, 8), (16, 2, 4, 12),
])
def test_shuffles(rng, width, src, delta, lane_mask):
    v = rng.integers(-2**31, 2**31 - 1, size=64, dtype=np.int32)
    cpu, gpu = both("warp.cu", "shuffles", 1, 64, (v, np.zeros(4 * 64, np.int32), np.int32(width), np.int32(src),
                                                    np.int32(delta), np.int32(lane_mask)))
    assert_identical(cpu, gpu)


def test_shuffle_doubles_and_votes(rng):
    v = rng.standard_normal(64)
    cpu, gpu = both("warp.cu", "shuffle_double", 1, 64, (v, np.zeros(64), np.zeros(64)))
    assert_identical(cpu, gpu)
    np.testing.assert_array_equal(gpu[1], v[np.arange(64) ^ 5])
    pred = rng.integers(0, 2, size=96, dtype=np.int32)
    pred[32:64] = 1
    cpu, gpu = both("warp.cu", "votes", 1, 96, (pred, np.zeros(18, np.uint32)))
    assert_identical(cpu, gpu)
    assert gpu[1][6:9].tolist() == [0xFFFFFFFF, 1, 1]


def test_warp_rotate_and_reductions(rng):
    x = rng.integers(-1000, 1000, size=96, dtype=np.int32)
    cpu, gpu = both("warp.cu", "warp_rotate", 1, 96, (x, np.zeros(192, np.int32)))
    assert_identical(cpu, gpu)
    xi = rng.integers(-10**6, 10**6, size=512, dtype=np.int32)
    cpu, gpu = both("warp.cu", "warp_sum_int", 4, 128, (xi, np.zeros(16, np.int32)))
    assert_identical(cpu, gpu)
    np.testing.assert_array_equal(gpu[1], xi.reshape(-1, 32).sum(1))
    cpu, gpu = both("warp.cu", "warp_max_xor", 4, 128, (xi, np.zeros_like(xi)))
    assert_identical(cpu, gpu)
    xf = rng.standard_normal(512).astype(np.float32)
    cpu, gpu = both("warp.cu", "warp_sum_float", 4, 128, (xf, np.zeros(16, np.float32)))
    np.testing.assert_allclose(cpu[1], gpu[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gpu[1], xf.reshape(-1, 32).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, threads", [(256, 64), (3000, 96)])
def test_vector_loads_and_dynamic_shared(rng, n, threads):
    x = rng.standard_normal(2 * threads * 4).astype(np.float32)
    cpu, gpu = both("memory.cu", "vector_copy", 2, threads, (x, np.zeros_like(x)))
    assert_identical(cpu, gpu)
    y = rng.standard_normal(3 * n).astype(np.float32)
    cpu, gpu = both("memory.cu", "dynamic_reverse", 3, threads, (y, np.zeros_like(y), np.int32(n)), shared_mem=4 * n)
    assert_identical(cpu, gpu)
    np.testing.assert_array_equal(gpu[1].reshape(3, n), y.reshape(3, n)[:, ::-1])


def test_alignment():
    args = (np.zeros(3, np.float32), np.zeros(5, np.int32), np.zeros(7), np.zeros(13, np.uint8), np.ones(4, np.uint64))
    cpu, gpu = both("memory.cu", "alignment", 1, 32, args)
    assert cpu[4].tolist() == gpu[4].tolist() == [0, 0, 0, 0]


def test_atomics(rng):
    n = 64 * 128
    values = rng.integers(0, 10**9, size=n, dtype=np.int32)
    args = (values, np.zeros(2, np.int32), np.zeros(1, np.float32), np.array([-2**31], np.int32),
            np.array([-1], np.int32), np.zeros(1, np.int32))
    cpu, gpu = both("atomics.cu", "atomics_global", 64, 128, args)
    for result in (cpu, gpu):
        _, counters, fcount, maximum, winner, wins = result
        assert counters.tolist() == [n, int((values % 7).sum())]
        assert fcount[0] == n and maximum[0] == values.max() and wins[0] == 1 and 0 <= winner[0] < n
    cpu, gpu = both("atomics.cu", "atomics_shared", 6, 200, (np.zeros(6, np.int32),))
    assert_identical(cpu, gpu)
    many = rng.integers(0, 10**6, size=40 * 256, dtype=np.int32)
    cpu, gpu = both("atomics.cu", "histogram", 40, 256, (many, np.zeros(37, np.uint32), np.int32(37)))
    assert_identical(cpu, gpu)
    np.testing.assert_array_equal(gpu[1], np.bincount(many % 37, minlength=37))


@pytest.mark.parametrize("expr", ["scale<2>", "scale<3>"])
def test_templates(rng, expr):
    x = rng.standard_normal(1000).astype(np.float32)
    cpu, gpu = both("language.cu", expr, 4, 256, (x, np.zeros_like(x), np.int32(1000)))
    assert_identical(cpu, gpu)


def test_device_functions_and_3d_indices(rng):
    x = rng.integers(-50, 50, size=500, dtype=np.int32)
    cpu, gpu = both("language.cu", "helpers_unroll", 4, 128, (x, np.zeros_like(x), np.int32(500)))
    assert_identical(cpu, gpu)
    total = 2 * 3 * 2 * 4 * 2 * 3
    cpu, gpu = both("language.cu", "ids3d", (2, 3, 2), (4, 2, 3), (np.full(12 * total, -1, np.int32),))
    assert_identical(cpu, gpu)
    assert (gpu[0] >= 0).all()

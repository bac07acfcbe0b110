"""Every bad input named by the harness gets a clear error that says the cause and the fix."""

import numpy as np
import pytest

from helpers.run import backend
from helpers.run import gemm
from helpers.core import stages
from helpers.core.errors import KernelArgumentError, KernelCompileError, LaunchConfigError
from helpers.run.kernel_loader import load_kernel

pytestmark = pytest.mark.emulator

NAIVE = stages.variant("02_naive_coalesced")


def _ab(rng, M=8, N=6, K=5):
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32))


@pytest.mark.parametrize("mutate, message", [
    (lambda A, B: (A.astype(np.float64), B), "float64; SGEMM kernels take float32"),
    (lambda A, B: (A, B.T.copy()), "A's columns must equal B's rows"),
    (lambda A, B: (np.asfortranarray(A), B), "not C-contiguous"),
    (lambda A, B: (A[:, ::2], B[:3]), "not C-contiguous"),
    (lambda A, B: (A.ravel(), B), "2-D matrix"),
    (lambda A, B: (A.tolist(), B), "NumPy array"),
])
def test_bad_operands(rng, mutate, message):
    A, B = mutate(*_ab(rng))
    with pytest.raises(KernelArgumentError, match=message):
        gemm.run(NAIVE, A, B)


def test_bad_c_shape(rng):
    A, B = _ab(rng)
    with pytest.raises(KernelArgumentError, match="C must be 8x6"):
        gemm.run(NAIVE, A, B, np.zeros((6, 8), np.float32), beta=1.0)


def test_inputs_are_left_untouched(rng):
    A, B = _ab(rng)
    C = rng.uniform(-1, 1, (8, 6)).astype(np.float32)
    copies = [x.copy() for x in (A, B, C)]
    out = gemm.run(NAIVE, A, B, C, alpha=2.0, beta=1.0)
    assert all(np.array_equal(x, y) for x, y in zip((A, B, C), copies))
    assert not np.array_equal(out, C)


@pytest.fixture
def naive_kernel():
    return load_kernel(NAIVE.path, NAIVE.kernel)


def _args(xp, M=8, N=8, K=8):
    A, B, C = (xp.ones((8, 8), dtype=np.float32) for _ in range(3))
    return [np.int32(M), np.int32(N), np.int32(K), np.float32(1), A, B, np.float32(0), C]


def test_untyped_python_scalars_are_refused(naive_kernel):
    args = _args(backend.current().xp)
    args[0] = 8
    with pytest.raises(KernelArgumentError, match=r"argument 0 \(M\) is a plain Python int.*np\.int32"):
        naive_kernel((1, 1), (8, 8), args)
    args[0], args[3] = np.int32(8), 1.0
    with pytest.raises(KernelArgumentError, match=r"argument 3 \(alpha\).*np\.float32"):
        naive_kernel((1, 1), (8, 8), args)


@pytest.mark.parametrize("grid, block, shared, message", [
    ((1, 1), (64, 32), 0, "2048 threads; a CUDA block holds at most 1024"),
    ((1, 1), (1, 1, 128), 0, "block dimension z is 128"),
    ((1, 70000), (8, 8), 0, "grid dimension y is 70000"),
    ((0, 1), (8, 8), 0, "below 1"),
    ((1, 1), (8, 8), 10**6, "more than the"),
    ((1, 1), "8x8", 0, "1 to 3 whole numbers"),
])
def test_launch_configurations_a_gpu_would_refuse(naive_kernel, grid, block, shared, message):
    with pytest.raises(LaunchConfigError, match=message):
        naive_kernel(grid, block, _args(backend.current().xp), shared_mem=shared)


def test_arrays_of_the_wrong_backend_or_layout(naive_kernel):
    xp = backend.current().xp
    args = _args(xp)
    args[4] = xp.ones((8, 16), dtype=np.float32)[:, ::2]
    with pytest.raises(KernelArgumentError, match=r"argument 4 \(A\) is not C-contiguous"):
        naive_kernel((1, 1), (8, 8), args)
    if backend.name() == "gpu":
        args = _args(xp)
        args[5] = np.ones((8, 8), np.float32)
        with pytest.raises(KernelArgumentError, match="NumPy array in host memory"):
            naive_kernel((1, 1), (8, 8), args)


def test_unknown_kernel_name_lists_the_ones_there():
    with pytest.raises(KernelArgumentError, match="found: sgemm_naive_coalesced"):
        load_kernel(NAIVE.path, "sgemm_tiled<16>")


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="kernels/"):
        load_kernel("kernels/does_not_exist.cu", "k")


def test_compile_error_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(int M, float* C) {\n  C[0] = undeclared_thing;\n}\n")
    with pytest.raises(KernelCompileError) as e:
        load_kernel(bad, "k")
    assert "bad.cu" in str(e.value) and ":2" in str(e.value) and "undeclared_thing" in str(e.value)


@pytest.fixture
def backend_env(monkeypatch):
    """Sets TBT_BACKEND for one test, then restores the automatic choice."""
    def force(value):
        monkeypatch.setenv("TBT_BACKEND", value)
        backend.current.cache_clear()
    yield force
    monkeypatch.delenv("TBT_BACKEND", raising=False)
    backend.current.cache_clear()


def test_forcing_an_unknown_backend_is_refused(backend_env):
    backend_env("tpu")
    with pytest.raises(backend.BackendUnavailableError, match="use gpu, cpu or auto"):
        backend.current()


def test_forcing_the_gpu_without_one_says_how_to_recover(backend_env):
    if backend.gpu_available():
        pytest.skip("this machine has a GPU, so forcing it is no error")
    backend_env("gpu")
    with pytest.raises(backend.BackendUnavailableError, match="CuPy sees no CUDA GPU"):
        backend.current()

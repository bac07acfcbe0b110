import pytest
"""A learner who edits a kernel file sees the edit at the next launch, without restarting Python."""


import numpy as np

from helpers.core import paths
from helpers.run import gemm
from helpers.core import stages

pytestmark = pytest.mark.emulator


def test_an_edited_kernel_file_is_compiled_again(tmp_path, monkeypatch, rng):
    v = stages.variant("02_naive_coalesced")
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    edited = tmp_path / v.path.name
    original = (paths.ROOT / "kernels" / v.path.name).read_text()
    edited.write_text(original)
    A, B = (rng.uniform(-1, 1, (9, 9)).astype(np.float32) for _ in range(2))
    first = gemm.run(v, A, B)
    np.testing.assert_allclose(first, A @ B, rtol=1e-5, atol=1e-5)
    line = "alpha * acc + beta * (beta == 0.0f ? 0.0f : C[row * N + col])"
    assert line in original, "the test edits this line of the kernel: update it with the kernel"
    edited.write_text(original.replace(line, "2.0f * alpha * acc"))
    second = gemm.run(v, A, B)
    np.testing.assert_allclose(second, 2 * (A @ B), rtol=1e-5, atol=1e-5)


def test_an_edited_header_beside_the_kernel_is_compiled_again(tmp_path):
    from helpers.run import backend
    from helpers.run.kernel_loader import load_kernel
    bk = backend.current()
    (tmp_path / "scale.cuh").write_text("#define SCALE 2.0f\n")
    (tmp_path / "k.cu").write_text('#include "scale.cuh"\n__global__ void k(float* out) { out[threadIdx.x] = SCALE; }\n')
    out = bk.to_device(np.zeros(4, np.float32))
    load_kernel(tmp_path / "k.cu", "k")(1, 4, (out,))
    assert (bk.to_host(out) == 2.0).all()
    (tmp_path / "scale.cuh").write_text("#define SCALE 3.0f\n")   # the .cu file itself is unchanged
    load_kernel(tmp_path / "k.cu", "k")(1, 4, (out,))
    assert (bk.to_host(out) == 3.0).all()

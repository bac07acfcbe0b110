"""helpers.sgemm as a library on a GPU (issue 31): TF32 right at odd shapes and with stream-K, the same bits every run,
launches that do not wait for the GPU, one allocation per call (the output; a split's workspace besides), no file
opened and no plan built by a repeated call, threads on their own streams, out= in place, NumPy in and out.
Skipped, and reported as skipped, where CuPy sees no GPU (tests/run/test_sgemm_library.py runs the same on the
emulator)."""

import sys
import threading
import time

import numpy as np
import pytest

from helpers.core.paths import ROOT
from helpers.measure import bench, verify
from helpers.run import backend, dispatch_tf32, sgemm as library, sgemm_plans
from helpers.run.sgemm import sgemm

pytestmark = pytest.mark.gpu


def _operands(M, N, K, seed=0):
    import cupy as cp
    rng = cp.random.default_rng(seed)
    return (rng.uniform(-1, 1, (M, K), dtype=cp.float32), rng.uniform(-1, 1, (K, N), dtype=cp.float32),
            rng.uniform(-1, 1, (M, N), dtype=cp.float32))


class _Agreement:
    def __init__(self, rel, precision):
        self.ok, self.rel, self.precision = rel < bench.AGREEMENT[precision], rel, precision

    def details(self):
        return f"largest difference {self.rel:.2e} of the largest element ({self.precision})"


def _right(out, A, B, C0, alpha, beta, precision):
    """Element by element against float64 (verify's tolerances) for small products; for large ones, on the GPU, the
    largest difference from a float64 product relative to its largest element, as the sweep checks."""
    import cupy as cp
    M, K, N = A.shape[0], A.shape[1], B.shape[1]
    if M * N * K > 2e8:
        ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64)) + beta * C0.astype(cp.float64)
        return _Agreement(float(cp.abs(out - ref).max() / cp.abs(ref).max()), precision)
    A, B, C0, out = (cp.asnumpy(x) for x in (A, B, C0, out))
    s = verify.Shape("sgemm", M, N, K, alpha, beta)
    ref, tol = verify.reference(A, B, C0, alpha, beta, precision)
    return verify.compare(out, C0, ref, tol, s)


@pytest.mark.parametrize("M, N, K, beta", [(512, 512, 16384, 0.0), (1000, 1000, 8000, 1.0), (4095, 4097, 333, -0.5),
                                            (3, 5000, 7, 0.0), (257, 129, 20001, 1.0), (256, 256, 256, 0.0)])
def test_tf32_is_right_where_stream_k_shares_tiles_and_elsewhere(M, N, K, beta):
    A, B, C0 = _operands(M, N, K)
    before = C0.copy()
    out = sgemm(A, B, C0 if beta else None, 1.5, beta, precision="tf32")
    check = _right(out, A, B, C0, 1.5, beta, "tf32")
    assert check.ok, f"{library.plan(M, N, K, beta != 0, 'tf32', 'cupy').choice.label()}: {check.details()}"
    assert bool((C0 == before).all())


@pytest.mark.parametrize("M, N, K", [(33, 9, 4097), (257, 193, 1391), (1000, 1000, 8000), (511, 1025, 2049)])
def test_every_tf32_option_is_right_on_the_gpu(M, N, K):
    # every configuration the TF32 model weighs at the shape (tiles, SK_WAVES, SLICES), as the library launches it
    A, B, C0 = _operands(M, N, K)
    options = dispatch_tf32.options(M, N, K, backend.sm_count())
    for cfg in options:
        choice = dispatch_tf32.Tf32Choice(dispatch_tf32.STREAM_K_VARIANT, cfg, "test", "every option")
        out = sgemm(A, B, C0, 1.5, -0.5, precision="tf32", choice=choice)
        check = _right(out, A, B, C0, 1.5, -0.5, "tf32")
        assert check.ok, f"{choice.label()} at {M}x{N}x{K}: {check.details()}"
    assert {(c.BM, c.CONSUMERS) for c in options} == set(dispatch_tf32.TILE_SHAPES)


def test_stream_k_gives_the_same_bits_every_run():
    A, B, _ = _operands(512, 512, 16384)
    assert library.plan(512, 512, 16384, precision="tf32", kind="cupy").choice.kernel_config.SK_WAVES > 0
    first = sgemm(A, B, precision="tf32")
    assert bool((first == sgemm(A, B, precision="tf32")).all())


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_a_call_enqueues_and_returns_before_the_gpu_is_done(precision):
    import cupy as cp
    A, B, _ = _operands(8192, 8192, 8192)
    sgemm(A, B, precision=precision)
    cp.cuda.get_current_stream().synchronize()
    start = time.perf_counter()
    outs = [sgemm(A, B, precision=precision) for _ in range(4)]
    host = time.perf_counter() - start
    cp.cuda.get_current_stream().synchronize()
    total = time.perf_counter() - start
    assert host < total / 2, (host, total)   # four products on the GPU, the host back after a fraction of them
    assert _right(outs[-1][:64], A[:64], B, cp.zeros((64, 8192), cp.float32), 1.0, 0.0, precision).ok


class _Allocations:
    """Counts the allocations from CuPy's memory pool while it is active."""

    def __init__(self):
        from cupy.cuda import memory_hook

        class Hook(memory_hook.MemoryHook):
            name = "count"

            def __init__(self):
                self.sizes = []

            def malloc_preprocess(self, **kwargs):
                self.sizes.append(kwargs["size"])
        self.hook = Hook()

    def __enter__(self):
        self.hook.__enter__()
        return self.hook.sizes

    def __exit__(self, *exc):
        return self.hook.__exit__(*exc)


def test_a_repeated_call_allocates_its_output_and_nothing_else():
    import cupy as cp
    A, B, C = _operands(1024, 1024, 1024)
    sgemm(A, B)
    split = [bool(library.plan(1024, 1024, 1024, beta, kind="cupy")._workspace) for beta in (False, True)]
    with _Allocations() as sizes:
        sgemm(A, B)
    assert sizes[0] == 1024 * 1024 * 4 and len(sizes) == 1 + split[0]   # the output (and a split's workspace)
    out = cp.empty((1024, 1024), cp.float32)
    sgemm(A, B, C, beta=1.0, out=C)
    with _Allocations() as sizes:
        sgemm(A, B, out=out)
        sgemm(A, B, C, beta=1.0, out=C)
    assert len(sizes) == sum(split)   # into out: nothing but a split's workspace
    A, B, _ = _operands(512, 512, 16384)
    sgemm(A, B, precision="tf32")
    with _Allocations() as sizes:   # the output, and stream-K's workspace for the parts of shared tiles
        sgemm(A, B, precision="tf32")
    assert len(sizes) == 2 and sizes[0] == 512 * 512 * 4


_opened: list | None = None


def _audit(event, args):
    if _opened is not None and event == "open" and isinstance(args[0], str):
        _opened.append(args[0])


sys.addaudithook(_audit)


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_a_repeated_call_builds_nothing_and_opens_no_file_of_the_course(monkeypatch, precision):
    global _opened
    A, B, C = _operands(300, 200, 1000)
    sgemm(A, B, C, 2.0, 0.5, precision=precision)
    monkeypatch.setattr(sgemm_plans, "build", lambda *a, **k: pytest.fail("built again"))
    monkeypatch.setattr(library, "RECHECK_SECONDS", 0.0)
    _opened = []
    try:
        out = sgemm(A, B, C, 2.0, 0.5, precision=precision)
        seen = list(_opened)
    finally:
        _opened = None
    assert [p for p in seen if p.startswith(str(ROOT))] == []
    assert _right(out, A, B, C, 2.0, 0.5, precision).ok


def test_threads_on_their_own_streams_get_right_results():
    import cupy as cp
    jobs = [(*_operands(M, N, K, seed), p) for seed, (M, N, K, p) in
            enumerate(((512, 512, 16384, "tf32"), (1000, 999, 500, "fp32"), (512, 512, 16384, "tf32"), (777, 333, 4000, "fp32")))]
    # the operands come from kernels on the null stream, which a non-blocking stream does not wait for: without this,
    # a thread's first kernels may read them unfinished (one result of NaN and garbage, 1 run in 8 under load)
    cp.cuda.Device().synchronize()
    results, errors = [], []

    def work(mine):
        try:
            with cp.cuda.Stream(non_blocking=True) as stream:
                for A, B, C, p in mine * 3:
                    results.append((sgemm(A, B, C, 1.0, -1.0, precision=p), A, B, C, p))
                stream.synchronize()
        except Exception as e:   # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(jobs[i::2],)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert len(results) == 12
    for out, A, B, C, p in results:
        assert _right(out, A, B, C, 1.0, -1.0, p).ok


def test_numpy_in_numpy_out_and_out_in_place():
    rng = np.random.default_rng()
    A = rng.uniform(-1, 1, (301, 77)).astype(np.float32)
    B = rng.uniform(-1, 1, (77, 45)).astype(np.float32)
    C = rng.uniform(-1, 1, (301, 45)).astype(np.float32)
    C0 = C.copy()
    assert backend.name() == "gpu"
    out = sgemm(A, B, C, 1.0, 2.0, precision="tf32")
    assert isinstance(out, np.ndarray) and _right(out, A, B, C0, 1.0, 2.0, "tf32").ok
    assert sgemm(A, B, C, 1.0, 2.0, out=C) is C and _right(C, A, B, C0, 1.0, 2.0, "fp32").ok

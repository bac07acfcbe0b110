"""helpers.sgemm as a library (issue 31) on the CPU emulator: right in FP32 and TF32 at odd shapes; a repeated call
is a lookup that opens no file of the course (an audit hook counts every `open`); the plan is built again when its
kernel file changes; two threads calling at once get right results; inputs that alias are fine and bad ones are
named (issue 32.9)."""

import dataclasses
import sys
import threading

import numpy as np
import pytest

from helpers.core import kernel_source, stages
from helpers.core.configs_stream_k import StreamKConfig
from helpers.core.errors import InputError, KernelArgumentError
from helpers.core.paths import ROOT
from helpers.measure import verify
from helpers.run import dispatch, dispatch_tf32, sgemm as library, sgemm_plans
from helpers.run.sgemm import sgemm

pytestmark = pytest.mark.emulator


def _right(out, A, B, C0, alpha, beta, precision):
    s = verify.Shape("sgemm", A.shape[0], B.shape[1], A.shape[1], alpha, beta)
    C0 = np.zeros(out.shape, np.float32) if C0 is None else C0
    ref, tol = verify.reference(A, B, C0, alpha, beta, precision)
    return verify.compare(out, C0, ref, tol, s)


@pytest.mark.parametrize("M, N, K, beta, precision", [
    (67, 45, 203, 0.0, "fp32"), (130, 70, 1000, -0.5, "tf32"), (1, 97, 63, 1.0, "tf32"), (33, 9, 4097, 0.0, "tf32"),
    (257, 193, 139, 2.0, "fp32"),
])
def test_right_at_odd_shapes_as_the_dispatcher_chooses(cpu_backend, rng, M, N, K, beta, precision):
    s = verify.Shape("sgemm", M, N, K, 1.25, beta)
    A, B, C0 = verify.random_operands(s, rng)
    before = C0.copy()
    out = sgemm(A, B, C0 if beta else None, 1.25, beta, precision=precision)
    check = _right(out, A, B, C0, 1.25, beta, precision)
    assert check.ok, f"{library.plan(M, N, K, beta != 0, precision).choice.label()}: {check.details()}"
    np.testing.assert_array_equal(C0, before)


def test_tf32_on_the_emulator_runs_what_an_h100_or_h200_would_run(cpu_backend):
    # the emulator stands for sm_90 (TBT_ARCH unset): stage 12's kernel with stream-K where few tiles leave SMs idle
    long_k = library.plan(512, 512, 16384, precision="tf32").choice
    assert long_k.variant == "11_stream_k" and long_k.kernel_config.SK_WAVES > 0 and "stream-K" in long_k.why
    big = library.plan(4096, 4096, 4096, precision="tf32").choice
    assert big.variant == "11_stream_k" and big.kernel_config.SK_WAVES == 0


@pytest.mark.parametrize("arch, variant", [("sm_86", "10_mma_sync"), ("sm_75", "11_split_k")])
def test_tf32_elsewhere_runs_what_that_gpu_has(monkeypatch, arch, variant):
    monkeypatch.setattr(dispatch_tf32.backend, "arch", lambda: arch)
    choice = dispatch_tf32.choose(512, 512, 16384)
    assert choice.variant == variant
    if arch == "sm_75":
        assert "no TF32 tensor cores" in choice.why and choice.config.SPLITS > 1   # FP32 split-K


@pytest.mark.parametrize("sk_waves", [1, 2])
def test_stream_k_parts_are_added_in_one_order_every_run(cpu_backend, rng, sk_waves):
    # 1,531 x 765 in 128 x 64 tiles: 144 tiles for 132 blocks; with SK_WAVES = 2 every tile is shared out
    cfg = StreamKConfig(128, 1, 3, SK_WAVES=sk_waves)
    choice = dispatch_tf32.Tf32Choice("11_stream_k", cfg, "test", "by hand")
    A = rng.uniform(-1, 1, (1531, 69)).astype(np.float32)
    B = rng.uniform(-1, 1, (69, 765)).astype(np.float32)
    first = sgemm(A, B, precision="tf32", choice=choice)
    assert _right(first, A, B, None, 1.0, 0.0, "tf32").ok
    assert np.array_equal(first, sgemm(A, B, precision="tf32", choice=choice))
    assert cfg.parts(1531, 765, 69, 132) > 0


# ---- a repeated call is a lookup ---------------------------------------------------------------------------------
_opened: list | None = None


def _audit(event, args):
    if _opened is not None and event == "open" and isinstance(args[0], (str, bytes)):
        _opened.append(args[0] if isinstance(args[0], str) else args[0].decode(errors="replace"))


sys.addaudithook(_audit)


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_a_repeated_call_opens_no_file_of_the_course(cpu_backend, rng, monkeypatch, precision):
    global _opened
    A = rng.uniform(-1, 1, (70, 130)).astype(np.float32)
    B = rng.uniform(-1, 1, (130, 61)).astype(np.float32)
    C = rng.uniform(-1, 1, (70, 61)).astype(np.float32)
    sgemm(A, B, C, 0.5, 1.5, precision=precision)       # builds the plan: reads the kernel, its headers, the table
    builds = []
    monkeypatch.setattr(sgemm_plans, "build", lambda *a, **k: builds.append(a) or pytest.fail("built again"))
    monkeypatch.setattr(library, "RECHECK_SECONDS", 0.0)   # and stats its files at every call
    _opened = []
    try:
        out = sgemm(A, B, C, 0.5, 1.5, precision=precision)
        seen = list(_opened)
    finally:
        _opened = None
    assert _right(out, A, B, C, 0.5, 1.5, precision).ok
    root = str(ROOT)
    course = [p for p in seen if p.startswith(root) or p.endswith((".cu", ".cuh", ".json"))]
    assert course == [] and builds == [], course   # (the emulator's own buffer files are not the course's)


def test_the_hook_sees_the_opens_of_a_first_call(cpu_backend, rng):
    global _opened
    library.forget_plans()
    kernel_source.forget()
    dispatch.forget_tables()
    A = rng.uniform(-1, 1, (20, 24)).astype(np.float32)
    _opened = []
    try:
        sgemm(A, A.T.copy())
        seen = list(_opened)
    finally:
        _opened = None
    assert any(p.endswith(".cu") for p in seen) and any(p.endswith(".json") and "dispatch_" in p for p in seen)


def test_an_edited_kernel_builds_its_plan_again(cpu_backend, rng, tmp_path, monkeypatch):
    original = (ROOT / "kernels" / "09_double_buffering.cu").read_text()
    (tmp_path / "09_double_buffering.cu").write_text(original)
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    monkeypatch.setattr(library, "RECHECK_SECONDS", 0.0)
    choice = dispatch.Choice(dispatch.CANDIDATES["64x64"], False, "test", "by hand")
    A = rng.uniform(-1, 1, (40, 36)).astype(np.float32)
    B = rng.uniform(-1, 1, (36, 44)).astype(np.float32)
    first = sgemm(A, B, choice=choice)
    assert _right(first, A, B, None, 1.0, 0.0, "fp32").ok
    assert original.count("= alpha * acc") == 5, "the test edits these lines of the kernel: update it with the kernel"
    (tmp_path / "09_double_buffering.cu").write_text(original.replace("= alpha * acc", "= 2.0f * alpha * acc"))
    np.testing.assert_allclose(sgemm(A, B, choice=choice), 2 * first, rtol=1e-6)


def test_two_threads_calling_at_once_get_right_results(cpu_backend, rng):
    library.forget_plans()   # both threads find no plan: one builds it while the other waits for it
    jobs = [(rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32), p)
            for M, N, K, p in ((45, 37, 99, "fp32"), (45, 37, 99, "fp32"), (31, 70, 300, "tf32"), (45, 37, 99, "fp32"))]
    results, errors = {}, []
    barrier = threading.Barrier(2)

    def work(which):
        try:
            barrier.wait()
            for i, (A, B, p) in enumerate(jobs[which::2] * 2):
                results[(which, i)] = (sgemm(A, B, precision=p), A, B, p)
        except Exception as e:   # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert len(results) == 8
    for out, A, B, p in results.values():
        assert _right(out, A, B, None, 1.0, 0.0, p).ok


# ---- inputs -------------------------------------------------------------------------------------------------------
def test_read_only_inputs_that_alias_are_fine(cpu_backend, rng):
    X = rng.uniform(-1, 1, (40, 40)).astype(np.float32)
    X.flags.writeable = False
    assert _right(sgemm(X, X.view()), X, X, None, 1.0, 0.0, "fp32").ok
    assert _right(sgemm(X, X[:, :], X.T, 1.0, 0.5), X, X, X.T, 1.0, 0.5, "fp32").ok   # C a view of A too


def test_out_takes_the_result_and_may_be_c_itself(cpu_backend, rng):
    A = rng.uniform(-1, 1, (33, 21)).astype(np.float32)
    B = rng.uniform(-1, 1, (21, 18)).astype(np.float32)   # N % 4 != 0: computed padded, copied into out
    C = rng.uniform(-1, 1, (33, 18)).astype(np.float32)
    C0 = C.copy()
    out = np.full((33, 18), np.nan, np.float32)
    assert sgemm(A, B, C, 2.0, -1.0, out=out) is out and _right(out, A, B, C0, 2.0, -1.0, "fp32").ok
    assert sgemm(A, B, C, 2.0, -1.0, out=C) is C and _right(C, A, B, C0, 2.0, -1.0, "fp32").ok


@pytest.mark.parametrize("call, words", [
    (lambda A, B, C: sgemm(A, B, out=A[:, :6]), "C-contiguous 4x6"),
    (lambda A, B, C: sgemm(A, B, C, out=np.zeros((4, 6), np.float64)), "float64"),
    (lambda A, B, C: (lambda X: sgemm(X, X.copy(), out=X))(np.ones((4, 4), np.float32)), "out overlaps A"),
    (lambda A, B, C: sgemm(A, B, C, beta=1.0, out=C[::-1]), "C-contiguous"),
    (lambda A, B, C: sgemm(A, B, C, beta=1.0, out=np.concatenate([C, C])[1:5]), None),   # apart from C: fine
    (lambda A, B, C: sgemm(np.ma.masked_array(A, A > 0.5), B), "masked array"),
    (lambda A, B, C: sgemm(np.ones((4, 0), np.float32), np.ones((0, 6), np.float32), beta=2.0), "no C was given"),
    (lambda A, B, C: sgemm(A, B, precision="fp16"), "precision"),
])
def test_bad_inputs_are_named(call, words, cpu_backend):
    A, B, C = np.ones((4, 5), np.float32), np.ones((5, 6), np.float32), np.ones((4, 6), np.float32)
    if words is None:
        assert (call(A, B, C) == 6.0).all()
        return
    with pytest.raises((KernelArgumentError, InputError), match=words):
        call(A, B, C)


def test_k_zero_gives_what_numpy_gives_into_out_too():
    A, B, C = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32), np.full((3, 4), 2.0, np.float32)
    out = np.full((3, 4), np.nan, np.float32)
    assert sgemm(A, B, C, 1.0, 0.5, out=out) is out
    np.testing.assert_array_equal(out, 0.5 * C)


def test_a_plan_holds_no_array_between_runs(cpu_backend, rng):
    p = library.plan(30, 20, 10)
    arrays = [f for f in dataclasses.fields(p) if isinstance(getattr(p, f.name), np.ndarray) and f.name != "_none"]
    assert arrays == [] and (p._none is None or p._none.size == 1)

"""Stage 01: every CPU version correct on odd shapes, block sizes that refuse bad values, the
block-size panel's run/describe/draw functions, the exercise checkers, the committed results."""

import json
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from helpers.core import paths
from helpers.course import cpu_gemm
from helpers.course import exercises  # noqa: E402
from helpers.measure import verify  # noqa: E402

ROOT = paths.ROOT


@pytest.mark.parametrize("v", cpu_gemm.VERSIONS, ids=lambda v: v.name)
def test_every_version_is_correct_on_the_catalogue(v):
    report = cpu_gemm.check_catalogue(v)
    assert report.ok, str(report)


@pytest.mark.parametrize("name, params", [
    ("register_block", dict(MR=1, NR=64)),
    ("register_block", dict(MR=3, NR=48)),
    ("register_block", dict(MR=5, NR=16)),       # NR = 16: LLVM leaves it scalar, still correct
    ("register_block", dict(MR=7, NR=1)),
    ("cache_block", dict(MR=3, NR=16, MC=9, KC=7, NC=32)),     # many blocks in every loop, odd KC
    ("cache_block", dict(MR=6, NR=64, MC=96, KC=64, NC=128)),
    ("cache_block", dict(MR=1, NR=1, MC=1, KC=1, NC=1)),
    ("cache_block", dict(MR=8, NR=96, MC=512, KC=1024, NC=4992)),  # blocks larger than the matrices
])
def test_other_block_sizes_are_correct(name, params):
    shapes = [verify.shape(n) for n in ("1x1x1", "primes", "single row", "single column", "tall", "wide",
                                        "long K", "non-multiples of every tile")]
    report = cpu_gemm.check_catalogue(name, shapes, **params)
    assert report.ok, str(report)


@pytest.mark.parametrize("v", cpu_gemm.VERSIONS, ids=lambda v: v.name)
def test_beta_zero_ignores_nan_in_c(v):
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (19, 23)).astype(np.float32)
    B = rng.uniform(-1, 1, (23, 70)).astype(np.float32)
    C0 = np.full((19, 70), np.nan, np.float32)
    C = cpu_gemm.run(v, A, B, C0, alpha=2.0, beta=0.0)
    np.testing.assert_allclose(C, 2.0 * (A.astype(np.float64) @ B), rtol=1e-5, atol=1e-5)


def test_run_leaves_its_inputs_alone_and_refuses_bad_shapes():
    A, B, C0 = cpu_gemm.operands(5, 6, 7)
    copies = [x.copy() for x in (A, B, C0)]
    cpu_gemm.run("cache_block", A, B, C0, 1.0, 1.0)
    for x, y in zip((A, B, C0), copies):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="do not chain"):
        cpu_gemm.run("loop_order_ikj", A, B.T, C0)


@pytest.mark.parametrize("sizes, rule", [
    (dict(MR=4, MC=130), "MC = 130 must be a multiple of MR = 4"),
    (dict(NR=48, NC=1024), "NC = 1024 must be a multiple of NR = 48"),
    (dict(MR=0), "out of range"),
    (dict(NR=300), "out of range"),
    (dict(KC=2.5), "whole number"),
    (dict(MR=True), "whole number"),
])
def test_bad_block_sizes_name_the_broken_rule(sizes, rule):
    with pytest.raises(ValueError, match=rule):
        cpu_gemm.check_block_sizes(**sizes)


def test_versions_registry():
    names = [v.name for v in cpu_gemm.VERSIONS]
    assert names == ["naive_ijk", "loop_order_ikj", "unroll_k4", "register_block", "cache_block"]
    with pytest.raises(KeyError, match="naive_ijk"):
        cpu_gemm.version("nope")
    with pytest.raises(TypeError, match="MR, NR"):
        cpu_gemm.version("register_block").function(MC=4)
    assert cpu_gemm.version("cache_block").function() is cpu_gemm.version("cache_block").function(MR=4)
    for v in cpu_gemm.VERSIONS:
        assert "def sgemm_" in v.source()
        assert v.name in str(cpu_gemm.show_source(v.name))
    assert "+    K4 = K - K % 4" in cpu_gemm.source_diff("loop_order_ikj", "unroll_k4")


def test_intensities():
    v = cpu_gemm.version
    assert v("naive_ijk").intensity() == pytest.approx(0.25)
    assert v("loop_order_ikj").intensity() == pytest.approx(1 / 6)
    assert v("unroll_k4").intensity() == pytest.approx(1 / 3)
    assert v("register_block").intensity() == pytest.approx(2 * 4 * 64 / (68 * 4))
    assert v("cache_block").intensity(MR=8, NR=8) == pytest.approx(2.0)


def test_the_compiler_vectorizes_the_blocked_versions():
    """x86 only: the blocked versions compile to vector FMAs; with 512-bit vectors (the sizes were
    tuned for them) every accumulator of the block stays in a register."""
    bits = cpu_gemm.vector_bits()
    if bits < 256:
        pytest.skip("not an x86 core with AVX2 or AVX-512")
    naive = cpu_gemm.fma_instructions("naive_ijk")
    assert naive["scalar"] > 0 and naive["512-bit"] == naive["256-bit"] == 0
    for name in ("register_block", "cache_block"):
        f = cpu_gemm.fma_instructions(name)
        assert f[f"{bits}-bit"] >= 16, f
        if bits == 512:
            assert f["on the stack"] == 0, f


def test_ceilings_are_measured_and_ordered():
    peak = cpu_gemm.fma_peak(seconds=0.05)
    chain = cpu_gemm.fma_latency_gflops(seconds=0.05)
    assert peak > 4 * chain > 0
    assert cpu_gemm.copy_bandwidth(16 * 1024, seconds=0.02) > 0
    sizes = cpu_gemm.bandwidth_sizes({"L1": 48 * 1024, "L2": 2 * 2**20, "L3": 100 * 2**20})
    assert sizes == {"L1": 12 * 1024, "L2": 2**19, "DRAM": 400 * 2**20}
    assert cpu_gemm.vector_bits() in (0, 128, 256, 512)


def test_timing_helpers():
    t = cpu_gemm.time_version("cache_block", 64, n_repeat=3)
    assert t.repeats == 3 and t.q1_s <= t.median_s <= t.q3_s and t.gflops(64, 64, 64) > 0
    assert cpu_gemm.time_openblas(64, n_repeat=3).gflops(64, 64, 64) > 0


def test_benchmark_rows():
    versions = (cpu_gemm.version("loop_order_ikj"), cpu_gemm.version("register_block"))
    rows = cpu_gemm.benchmark((48,), n_repeat=2, versions=versions)
    assert [r["version"] for r in rows] == ["loop_order_ikj", "register_block", "openblas"]
    assert all(r["repeats"] == 2 and r["gflops"] > 0 for r in rows)
    assert rows[-1]["pct_openblas"] == pytest.approx(100)


# ---- the block-size panel ------------------------------------------------------------------------
def test_run_blocks_verifies_and_counts_without_timing():
    r = cpu_gemm.run_blocks(4, 64, 128, 256, 1024, size=None)
    assert r.error is None and r.ok and r.gflops is None
    assert r.verdict.startswith("PASS")
    assert [w[2] for w in r.working_sets] == ["registers", "L1", "L2", "L3"]
    assert r.working_sets[1][1] == 256 * 64 * 4
    text = cpu_gemm.describe_blocks(r)
    assert "MR=4, NR=64, MC=128, KC=256, NC=1024" in text and "B micro-panel KC x NR: 64 KiB" in text
    fig = cpu_gemm.draw_blocks(r)
    assert len(fig.axes) == 2
    matplotlib.pyplot.close(fig)


def test_run_blocks_times_against_openblas():
    r = cpu_gemm.run_blocks(2, 48, 32, 64, 96, size=96)
    assert r.ok and r.gflops > 0 and r.openblas_gflops > 0
    assert "OpenBLAS (one thread)" in cpu_gemm.describe_blocks(r)
    matplotlib.pyplot.close(cpu_gemm.draw_blocks(r))


def test_run_blocks_reports_bad_sizes_instead_of_raising():
    r = cpu_gemm.run_blocks(MR=4, NR=64, MC=130, KC=256, NC=1024)
    assert r.error and "multiple of MR" in r.error
    assert "not a valid set of block sizes" in cpu_gemm.describe_blocks(r)
    assert cpu_gemm.draw_blocks(r) is None


def test_panel_builds():
    pytest.importorskip("ipywidgets")
    panel = cpu_gemm.blocks_panel(size=64)
    assert len(panel.children) == 3


# ---- exercises ---------------------------------------------------------------------------------
def test_exercise_1():
    assert exercises.check_01_exercise_1(2 * 4 * 64 / (68 * 4))
    assert exercises.check_01_exercise_1("1.88")
    assert "placeholder" in exercises.check_01_exercise_1("?").message
    assert "FMAs per float" in exercises.check_01_exercise_1(256 / 68).message
    assert "only the loads of B" in exercises.check_01_exercise_1(2.0).message
    assert "one FLOP" in exercises.check_01_exercise_1(256 / 272).message
    assert "inverse" in exercises.check_01_exercise_1(272 / 512).message
    assert "naive" in exercises.check_01_exercise_1(0.25).message
    assert "give a number" in exercises.check_01_exercise_1("lots").message


def test_exercise_2():
    assert exercises.check_01_exercise_2(6)
    assert "33 registers" in exercises.check_01_exercise_2(7).message
    assert "accumulators alone" in exercises.check_01_exercise_2(8).message
    assert "largest MR" in exercises.check_01_exercise_2(3).message
    assert "whole number" in exercises.check_01_exercise_2(2.5).message


def test_exercise_3(monkeypatch):
    monkeypatch.setattr(cpu_gemm, "cache_sizes", lambda: {"L1": 48 * 1024})
    assert exercises.check_01_exercise_3(96)
    assert "counts floats" in exercises.check_01_exercise_3(192).message
    assert "more than half" in exercises.check_01_exercise_3(112).message
    assert "a larger multiple" in exercises.check_01_exercise_3(64).message
    assert "not a multiple of 16" in exercises.check_01_exercise_3(100).message
    monkeypatch.setattr(cpu_gemm, "cache_sizes", lambda: {})
    fb = exercises.check_01_exercise_3(64)
    assert fb.ok and "32 KiB is assumed" in fb.message


# ---- committed results and figures --------------------------------------------------------------
def test_committed_results_have_provenance_and_every_version():
    data = cpu_gemm.load_results()
    assert data is not None, "no results/cpu_gemm_*.json committed"
    m = data["machine"]
    for key in ("cpu", "logical_cpus", "numba", "numpy", "numba_vector_bits", "blas", "date", "command"):
        assert m.get(key) not in (None, ""), key
    assert m["blas"][0]["architecture"]
    assert data["ceilings"]["fma_peak_gflops"] > 0 and set(data["ceilings"]["copy_gbs"]) == {"L1", "L2", "DRAM"}
    at_1024 = {r["version"] for r in data["rows"] if r["M"] == 1024}
    assert at_1024 == {v.name for v in cpu_gemm.VERSIONS} | {"openblas"}
    assert "cache_block" in cpu_gemm.results_table(data, 1024)
    assert "bar is" in cpu_gemm.bar_verdict(data)
    assert data["file"].startswith("results/cpu_gemm_")


def test_plots_from_committed_results():
    data = cpu_gemm.load_results()
    for fig in (cpu_gemm.plot_results(data), cpu_gemm.plot_roofline(data), cpu_gemm.plot_blocking()):
        assert fig.axes
        matplotlib.pyplot.close(fig)


def test_committed_figures_are_up_to_date(tmp_path):
    for path in cpu_gemm.draw_figures(tmp_path):
        committed = ROOT / "figures" / path.name
        assert committed.exists(), f"{committed.name} missing: run python tools/cpu_gemm_bench.py --figures"
        assert committed.read_bytes() == path.read_bytes(), \
            f"{committed.name} is stale: run python tools/cpu_gemm_bench.py --figures"


@pytest.mark.slow
def test_bench_tool_writes_json(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "cpu_gemm_bench.py"), "--sizes", "40", "--repeat", "1",
                          "--no-256", "--no-ceilings", "--stdout"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {r["version"] for r in data["rows"]} == {v.name for v in cpu_gemm.VERSIONS} | {"openblas"}
    assert data["machine"]["command"].startswith("python tools/cpu_gemm_bench.py")
    sys.path.insert(0, str(ROOT / "tools"))
    import cpu_gemm_bench
    assert cpu_gemm_bench.machine_slug("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz") == "intel-xeon-platinum-8480"

"""Stages 04 and 05 (1D and 2D thread tiling): configurations that refuse broken tiles, kernels
correct on odd shapes, intensity models checked by hand and by a walk over every thread, the
tuner, and the measured results the registry's defaults come from."""

import hashlib
import json
from fractions import Fraction

import pytest

from helpers.core import paths
from helpers.run import backend
from helpers.measure import intensity
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import KernelCompileError
from helpers.run.kernel_loader import load_kernel
from helpers.core.configs import ThreadTile1DConfig as T1, ThreadTile2DConfig as T2

pytestmark = pytest.mark.emulator

ROOT = paths.ROOT
V04, V05 = stages.variant("04_1d_thread_tiling"), stages.variant("05_2d_thread_tiling")


# ---- the registry --------------------------------------------------------------------------
def test_registered_with_geometry_and_name_expressions():
    assert [v.name for v in stages.stage("04").variants] == ["04_1d_thread_tiling"]
    assert [v.name for v in stages.stage("05").variants] == ["05_2d_thread_tiling"]
    c4, c5 = T1(64, 64, 8, 8), T2(128, 128, 8, 8, 8)
    assert V04.name_expression(c4) == "sgemm_1d_thread_tiling<64, 64, 8, 8>"
    assert V05.name_expression(c5) == "sgemm_2d_thread_tiling<128, 128, 8, 8, 8>"
    assert c4.block() == (512, 1, 1) and c4.grid(100, 300) == (5, 2, 1)      # (ceil(N/BN), ceil(M/BM))
    assert c5.block() == (256, 1, 1) and c5.grid(4096, 4096) == (32, 32, 1)
    assert c4.static_shared_bytes() == (64 + 64) * 8 * 4 and c4.shared_bytes() == 0   # static, not dynamic
    assert T2(12, 12, 4, 3, 3).threads() == 16
    small = [c for v in (V04, V05) for c in v.alternatives if c.threads() <= 64]
    assert small, "list at least one small configuration among the alternatives"


@pytest.mark.parametrize("make, rule", [
    (lambda: T1(0, 64, 8, 8), "at least 1"),
    (lambda: T1(64, 64, 8, 7), "BM = 64 must be a multiple of TM = 7"),
    (lambda: T1(64, 64, 8, 2), "2048 threads; a block holds at most 1024"),
    (lambda: T1(64, 64, 4, 8), "A's tile in whole passes"),
    (lambda: T1(128, 32, 8, 8), "B's tile in whole passes"),
    (lambda: T1(256, 256, 32, 64), "at most 48 KiB"),
    (lambda: T1(64.0, 64, 8, 8), "whole number"),
    (lambda: T1(64, 64, True, 8), "whole number"),
    (lambda: T2(128, 128, 8, 8, 0), "at least 1"),
    (lambda: T2(128, 128, 8, 3, 8), "BM = 128 must be a multiple of TM = 3"),
    (lambda: T2(128, 120, 8, 8, 16), "BN = 120 must be a multiple of TN = 16"),
    (lambda: T2(128, 128, 8, 2, 2), r"BM\*BN/\(TM\*TN\) = 4096 threads"),
    (lambda: T2(64, 64, 2, 4, 4), "A's tile in whole passes"),
    (lambda: T2(128, 16, 8, 4, 2), "B's tile in whole passes"),
    (lambda: T2(256, 256, 32, 8, 8), "65536 bytes of static shared memory"),
    (lambda: T2(128, 128, 8, 8, 8.5), "whole number"),
])
def test_bad_configurations_name_the_broken_rule(make, rule):  # and the class they belong to
    with pytest.raises(ValueError, match=rule) as e:
        make()
    assert str(e.value).startswith(("ThreadTile1DConfig", "ThreadTile2DConfig"))


@pytest.mark.parametrize("path, expression", [
    ("kernels/04_1d_thread_tiling.cu", "sgemm_1d_thread_tiling<64, 64, 4, 8>"),
    ("kernels/05_2d_thread_tiling.cu", "sgemm_2d_thread_tiling<128, 16, 8, 4, 2>"),
])
def test_the_kernels_repeat_the_rules_as_static_asserts(path, expression, cpu_backend):
    # a configuration the Python side refuses does not compile either, if launched by hand
    with pytest.raises(KernelCompileError, match="whole passes"):
        load_kernel(ROOT / path, expression)


# ---- correctness on the emulator -------------------------------------------------------------
@pytest.mark.parametrize("variant, config", [
    (V04, V04.default), (V04, T1(12, 12, 3, 4)), (V04, T1(64, 32, 16, 8)),
    (V05, V05.default), (V05, T2(12, 12, 3, 2, 2)), (V05, T2(64, 128, 8, 8, 4)),
], ids=lambda x: getattr(x, "name", None) or x.label().replace(" ", ""))
def test_correct_on_the_whole_catalogue_on_the_emulator(variant, config, cpu_backend):
    # BK = 3 leaves an odd step after 05's loop unrolled by 2; TM != TN; the tuned defaults
    report = verify.check_catalogue(variant, config)
    assert report.ok, str(report)


# ---- intensity models --------------------------------------------------------------------------
def test_hand_values_at_4096():
    S = 4096
    r4 = intensity.intensity(V04, S, S, S, T1(64, 64, 16, 16))
    # block model: 2K / 4(2K/64 + 2) = 8192 / 520 FLOP/B; smem: 16 FMAs per 17 loads
    assert Fraction(r4.flops, r4.dram_bytes) == Fraction(8192, 4 * (128 + 2))
    assert r4.request_bytes == r4.dram_bytes
    assert Fraction(r4.flops, r4.smem_bytes) == Fraction(2 * 16, 4 * 17)
    r5 = intensity.intensity(V05, S, S, S, T2(128, 128, 16, 16, 4))
    assert Fraction(r5.flops, r5.dram_bytes) == Fraction(8192, 4 * (64 + 2))    # about 31
    assert r5.smem == pytest.approx(2 * 64 / (4 * 20))                           # 3.2 FMAs per load
    r88 = intensity.intensity(V05, S, S, S, T2(128, 128, 8, 8, 8))
    assert r88.smem == pytest.approx(2.0)                                         # 4 FMAs per load
    assert r4.ideal == r5.ideal == pytest.approx(512.0)


@pytest.mark.parametrize("config", [T2(64, 64, 8, 4, 4), T2(128, 128, 16, 16, 4), T2(128, 64, 8, 8, 2)])
def test_smem_fmas_per_load_is_tm_tn_over_tm_plus_tn(config):
    M, N, K = 2 * config.BM, 3 * config.BN, 4 * config.BK
    r = intensity.intensity(V05, M, N, K, config)
    fmas, loads = r.flops // 2, r.smem_bytes // 4
    assert Fraction(fmas, loads) == Fraction(config.TM * config.TN, config.TM + config.TN)


def _walk(config, TN, M, N, K):
    """Follows the kernels' index lines for every thread of every block: the distinct A/B/C elements
    a block touches, every global load and store, every shared load."""
    BM, BN, BK, TM = config.BM, config.BN, config.BK, config.TM
    T = config.threads()
    gx, gy, _ = config.grid(M, N)
    panel = requests = smem = 0
    for by in range(gy):
        for bx in range(gx):
            touched = set()
            block_row, block_col = by * BM, bx * BN
            for tid in range(T):
                for k0 in range(0, K, BK):
                    for p in range(BM * BK // T):
                        e = p * T + tid
                        r, c = e // BK, e % BK
                        if block_row + r < M and k0 + c < K:
                            touched.add(("A", block_row + r, k0 + c))
                            requests += 1
                    for p in range(BK * BN // T):
                        e = p * T + tid
                        r, c = e // BN, e % BN
                        if k0 + r < K and block_col + c < N:
                            touched.add(("B", k0 + r, block_col + c))
                            requests += 1
                    smem += BK * (TM + TN)
                thread_col, thread_row = tid % (BN // TN), tid // (BN // TN)
                for i in range(TM):
                    for j in range(TN):
                        row, col = block_row + thread_row * TM + i, block_col + thread_col * TN + j
                        if row < M and col < N:
                            touched |= {("C", row, col, "r"), ("C", row, col, "w")}
                            requests += 2
            panel += len(touched)
    return 4 * panel, 4 * requests, 4 * smem


@pytest.mark.parametrize("variant, config, TN", [
    (V04, T1(4, 4, 2, 2), 1), (V04, T1(12, 12, 3, 4), 1), (V05, T2(4, 4, 2, 2, 2), 2),
    (V05, T2(12, 12, 3, 2, 2), 2), (V05, T2(8, 4, 4, 4, 1), 1),
], ids=lambda x: getattr(x, "name", None) or (x.label().replace(" ", "") if hasattr(x, "label") else str(x)))
@pytest.mark.parametrize("M, N, K", [(5, 7, 3), (13, 12, 7), (1, 9, 2)])
def test_models_match_a_walk_over_every_thread(variant, config, TN, M, N, K):
    r = intensity.intensity(variant, M, N, K, config)
    panel, requests, smem = _walk(config, TN, M, N, K)
    assert r.dram_bytes == panel
    assert r.request_bytes == requests
    assert r.smem_bytes == smem


def test_a_model_refuses_the_other_stages_configuration():
    with pytest.raises(TypeError, match="ThreadTile2DConfig"):
        intensity.intensity(V05, 8, 8, 8, T1())
    with pytest.raises(TypeError, match="ThreadTile1DConfig"):
        intensity.intensity(V04, 8, 8, 8, T2())


# ---- the tuner and its results ---------------------------------------------------------------------
def _tuner():
    import importlib.util
    spec = importlib.util.spec_from_file_location("tune_04_05", ROOT / "tools" / "tune_04_05.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tuner_candidates_are_valid_and_include_the_defaults():
    tuner = _tuner()
    assert V04.default in tuner.CANDIDATES_04 and V05.default in tuner.CANDIDATES_05
    assert len(set(tuner.CANDIDATES_04)) == len(tuner.CANDIDATES_04) >= 5
    assert len(set(tuner.CANDIDATES_05)) == len(tuner.CANDIDATES_05) >= 5


@pytest.mark.skipif(backend.gpu_available(), reason="checks the refusal on a machine with no GPU")
def test_tuner_refuses_to_time_the_emulator(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _tuner().main(["--out", str(tmp_path / "x.json")])
    assert e.value.code == 2 and "GPU" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


RESULTS = sorted((ROOT / "results").glob("stages_04_05_*.json"))


@pytest.mark.skipif(not RESULTS, reason="no measured results of stages 04 and 05 yet")
@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_measured_results_have_provenance_and_the_defaults_are_the_fastest(path):
    data = json.loads(path.read_text())
    p = data["provenance"]
    assert p["gpu"] and p["date"] and p["tf32"] is False and p["cupy"]
    assert data["repeat"] >= 30 and data["cublas"]["before"]["tflops"] > 0
    rows = [r for r in data["rows"] if "tflops" in r]
    assert rows and all(r["catalogue"] == "pass" and r["repeats"] >= 30 for r in rows)
    assert all(r["max_rel_diff_vs_cublas"] < 1e-5 for r in rows)
    # cuBLAS timed before and after the candidates: how far the GPU itself moved during the run
    c = data["cublas"]
    drift = abs(c["before"]["tflops"] - c["after"]["tflops"]) / max(c["before"]["tflops"], c["after"]["tflops"])
    for v in (V04, V05):
        best = max((r for r in rows if r["variant"] == v.name), key=lambda r: r["tflops"])
        assert data["best"][v.name]["config"] == best["config"]
        if path == RESULTS[-1]:  # the newest measurement sets the registry's defaults
            # the fastest, or as fast as the fastest within the run's own noise (the larger of cuBLAS's drift and 1%)
            default = next(r for r in rows if r["variant"] == v.name and r["config"] == v.default.label())
            assert default["tflops"] >= best["tflops"] * (1 - max(drift, 0.01)), \
                f"make {best['config']} the default of {v.name}: {best['tflops']:.2f} against {default['tflops']:.2f} TFLOP/s"
    if path == RESULTS[-1]:
        sha = hashlib.sha256(V04.path.read_bytes()).hexdigest()
        assert data["kernels"]["04_1d_thread_tiling"]["sha256"] == sha

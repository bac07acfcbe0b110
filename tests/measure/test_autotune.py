"""Autotuning: the search space (every candidate valid, tens per variant, the default first), the
cached search loop (resumes after an interruption, instant when repeated, failures recorded), the
results file, the refusal to time on the CPU emulator, and on a GPU a real search."""

import dataclasses
import json
import re

import pytest

from helpers.measure import tuning_space
from helpers.views import autotune_plots
from helpers.run import toolchain
from helpers.measure import autotune
from helpers.run import backend
from helpers.core import stages
from helpers.core.errors import CourseError
from helpers.core.paths import RESULTS_DIR
from helpers.core.configs import ThreadTile2DConfig, TileConfig
from support import helpers_cli

pytestmark = pytest.mark.emulator


# ---- the search space ------------------------------------------------------------------------------
@pytest.mark.parametrize("v", stages.variants(), ids=lambda v: v.name)
def test_candidates_are_valid_tens_and_start_at_the_default(v):
    space = tuning_space.search_space(v)
    configs = space.configs
    assert configs and configs[0] == v.default, "the registered default is always the first candidate"
    assert len(configs) <= 100, f"{v.name}: {len(configs)} candidates; the search keeps tens"
    assert len(set(configs)) == len(configs)
    for c, d in zip(configs, space.distances):
        assert type(c) is v.config_type
        v.config_type(**dataclasses.asdict(c))   # validate() passes (it raises otherwise)
        assert 0 <= d <= tuning_space.DEFAULT_RADIUS
        if c != v.default:
            assert tuning_space.THREADS[0] <= c.threads() <= tuning_space.THREADS[1]
    assert list(space.distances) == sorted(space.distances), "nearest first"


@pytest.mark.parametrize("name", [v.name for s in stages.REGISTRY if "03" <= s.id <= "09" for v in s.variants])
def test_every_thread_tile_stage_has_more_than_its_default(name):
    assert len(tuning_space.candidates(name)) > (1 if name != "03_smem_tiling" else 2)


def test_left_out_configurations_name_the_rule_that_dropped_them():
    v = stages.variant("08_warp_tiling")
    space = tuning_space.search_space(v)
    rules = {r.rule for r in space.rejected}
    assert "kernel rule" in rules
    for r in space.rejected:
        values = dict(part.split("=") for part in r.label.split(", "))
        if r.rule == "kernel rule":
            with pytest.raises(ValueError, match=re.escape(r.reason)):
                v.config_type(**{k: int(x) for k, x in values.items()})
    summary = space.summary()
    assert f"{len(space.configs)} candidates" in summary
    assert "left out by kernel rule" in summary


def test_register_floor_and_thread_bounds_drop_what_cannot_be_fast():
    # 16 x 16 accumulators + 32 fragment values: 288 registers, more than a thread may have
    too_big = ThreadTile2DConfig(128, 128, 16, 16, 16)
    assert tuning_space.register_floor(too_big) == 16 * 16 + 16 + 16
    rule, reason = tuning_space._search_rule(too_big, "sm_90")
    assert rule == "fits on an SM" and "255" in reason
    rule, reason = tuning_space._search_rule(TileConfig(4), "sm_90")    # 16 threads
    assert rule == "threads" and "16 threads" in reason
    assert tuning_space._search_rule(ThreadTile2DConfig(), "sm_90") is None


def test_ranges_can_be_narrowed_and_fields_without_a_range_stay_fixed(monkeypatch):
    space = tuning_space.search_space("05_2d_thread_tiling", ranges={"BK": (8,)})
    assert {c.BK for c in space.configs} == {8, 16}          # the default's 16 is always in its range
    monkeypatch.delitem(tuning_space.RANGES, "PAD")
    space = tuning_space.search_space("06_padded")
    assert {c.PAD for c in space.configs} == {stages.variant("06_padded").default.PAD}
    assert "PAD: kept at 1" in space.summary()
    full = tuning_space.search_space("03_smem_tiling", radius=None)
    assert [c.tile for c in full.configs] == [32, 16, 8]     # 1, 2 and 4 make blocks of under 64 threads


# ---- the search loop, with a fake GPU (test-only) ---------------------------------------------------
class Interrupted(Exception):
    pass


class FakeRun:
    """Stands in for autotune._GpuRun: made-up timings that no user ever sees."""

    def __init__(self, stop_after=None, fail=()):
        self.begun = self.ended = 0
        self.measured = []
        self.stop_after, self.fail = stop_after, fail

    def gpu(self):
        return "Test GPU"

    def begin(self):
        self.begun += 1
        return {"provenance": {"gpu": "Test GPU", "date": f"2026-01-0{self.begun}T00:00:00+00:00"},
                "cublas_before": {"variant": "cublas_sgemm", "median_ms": 1.0, "tflops": 100.0}}

    def measure(self, config, is_default):
        if self.stop_after is not None and len(self.measured) == self.stop_after:
            raise Interrupted()
        self.measured.append(config)
        if config in self.fail:
            return {"status": autotune.COMPILE_ERROR, "error": "KernelCompileError: made up", "registers": None}
        speed = float(config.BM + config.BN + config.BK)
        return {"status": autotune.TIMED, "registers": 64, "median_ms": 1.0 / speed, "tflops": speed,
                "pct_cublas": speed}

    def end(self):
        self.ended += 1
        return {"cublas_after": {"variant": "cublas_sgemm", "median_ms": 1.0, "tflops": 100.0}}


@pytest.fixture
def todo():
    v = stages.variant("05_2d_thread_tiling")
    return v, [(c, d) for c, d in zip(tuning_space.search_space(v).configs[:5], range(5))]


def test_an_interrupted_search_resumes_and_a_repeated_one_is_instant(tmp_path, todo):
    v, configs = todo
    path = tmp_path / "cache.json"
    first = FakeRun(stop_after=2)
    with pytest.raises(Interrupted):
        autotune._search(v, 1024, configs, first, path)
    saved = json.loads(path.read_text())
    assert [r["config"] for r in saved["rows"]] == [c.label() for c, _ in configs[:2]]
    assert saved["key"] == {"gpu": "Test GPU", "variant": v.name, "kernel_sha256": autotune.kernel_sha256(v),
                            "size": 1024}

    second = FakeRun(fail={configs[3][0]})
    result = autotune._search(v, 1024, configs, second, path)
    assert second.measured == [c for c, _ in configs[2:]], "only what the first run did not reach"
    assert second.begun == second.ended == 1 and len(result.sessions) == 2
    assert [r["config"] for r in result.rows] == [c.label() for c, _ in configs]
    failed = result.rows[3]
    assert failed["status"] == autotune.COMPILE_ERROR and "made up" in failed["error"], "failures are rows too"
    timed = [r for r in result.rows if r["status"] == autotune.TIMED]
    assert result.best == max(timed, key=lambda r: r["tflops"])
    assert result.best_config() == v.config_type(**result.best["fields"])

    third = FakeRun()
    again = autotune._search(v, 1024, configs, third, path)
    assert third.measured == [] and third.begun == 0 and third.ended == 0
    assert again.rows == result.rows


def test_a_cache_for_another_key_is_not_reused(tmp_path, todo):
    v, configs = todo
    path = tmp_path / "cache.json"
    autotune._search(v, 1024, configs, FakeRun(), path)
    data = json.loads(path.read_text())
    data["key"]["kernel_sha256"] = "0" * 64          # the kernel changed since
    path.write_text(json.dumps(data))
    run = FakeRun()
    autotune._search(v, 1024, configs, run, path)
    assert len(run.measured) == len(configs)


def test_cache_files_are_named_by_gpu_variant_source_and_size(tmp_path, monkeypatch):
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path))
    path = autotune.cache_file("NVIDIA H200", "08_warp_tiling", 4096)
    sha = autotune.kernel_sha256("08_warp_tiling")
    assert path == tmp_path / "autotune" / f"h200_08_warp_tiling_{sha[:16]}_4096.json"
    assert autotune.gpu_slug("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb"


def test_record_writes_every_row_the_best_and_the_provenance(tmp_path, todo):
    v, configs = todo
    result = autotune._search(v, 1024, configs, FakeRun(fail={configs[1][0]}), tmp_path / "c.json")
    path = autotune.record(result, directory=tmp_path)
    assert path.name == "autotune_test-gpu_2026-01-01.json"
    data = json.loads(path.read_text())
    assert data["provenance"]["gpu"] == "Test GPU"
    assert data["best"][v.name] == result.best
    assert data["kernels"][v.name]["sha256"] == autotune.kernel_sha256(v)
    assert "rows" not in data, "candidates stay out of the stage notebooks' tables of committed results"
    assert [r for r in data["candidates"] if r["variant"] == v.name] == result.rows
    assert data["sessions"][v.name] == result.sessions and "cublas_after" in result.sessions[0]
    back = autotune.load(v, path)
    assert (back.rows, back.best, back.sessions, back.size) == (result.rows, result.best, result.sessions, 1024)

    other = stages.variant("06_transposed_a")
    more = autotune._search(other, 1024, [(other.default, 0)], FakeRun(), tmp_path / "d.json")
    autotune.record(more, path)
    data = json.loads(path.read_text())
    assert set(data["best"]) == {v.name, other.name}, "variants tuned one at a time add up"
    assert [r for r in data["candidates"] if r["variant"] == v.name] == result.rows


def test_committed_searches_read_back_without_a_gpu():
    for path in autotune.committed():
        data = json.loads(path.read_text())
        assert data["provenance"].get("gpu") and data["provenance"].get("date")
        for name, best in data["best"].items():
            result = autotune.load(name, path)
            assert result.best == best and best["status"] == autotune.TIMED
            assert all(r["status"] in autotune.STATUSES for r in result.rows)
            assert result.rows[0]["distance"] == 0, "a search starts at the registered default"
    with pytest.raises(CourseError, match="no committed search"):
        autotune.load("03_smem_tiling", directory=RESULTS_DIR / "no_such_folder")


def test_record_refuses_a_dry_run(tmp_path):
    dry = autotune.TuneResult("03_smem_tiling", "cpu backend (dry run)", None, "x", [])
    with pytest.raises(CourseError, match="dry run times nothing"):
        autotune.record(dry, directory=tmp_path)


# ---- on the emulator ----------------------------------------------------------------------------------
def test_tune_on_the_emulator_says_timing_needs_a_gpu(cpu_backend):
    with pytest.raises(CourseError, match="GPU") as e:
        autotune.tune("08_warp_tiling")
    assert "dry_run('08_warp_tiling')" in str(e.value) and "results/" in str(e.value)


def test_dry_run_verifies_candidates_without_timing(cpu_backend):
    result = autotune.dry_run("03_smem_tiling", count=2)
    assert [r["config"] for r in result.rows] == ["tile=32", "tile=16"]
    assert all(r["status"] == autotune.VERIFIED for r in result.rows)
    assert not result.timed and result.best is None
    assert all("tflops" not in r for r in result.rows)
    try:
        toolchain.toolchain()
    except toolchain.ToolchainMissingError:
        return
    assert all(r["registers"] for r in result.rows)


@pytest.mark.slow
def test_cli_tune_refuses_on_the_emulator_and_dry_runs():
    r = helpers_cli("tune", "03_smem_tiling", "--backend", "cpu")
    assert r.returncode == 3 and "times kernels on a GPU" in r.stderr
    assert "--dry-run" in r.stderr and "Traceback" not in r.stderr
    r = helpers_cli("tune", "03_smem_tiling", "--dry-run", "--count", "1", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    assert "3 candidates" in r.stdout and "tile=32" in r.stdout and "verified" in r.stdout
    r = helpers_cli("tune", "no_such_kernel", "--dry-run")
    assert r.returncode == 2 and "invalid choice" in r.stderr


# ---- on a GPU --------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_tune_on_a_gpu_verifies_times_and_caches(tmp_path):
    backend.use("gpu")
    try:
        configs = [TileConfig(32), TileConfig(16)]
        result = autotune.tune("03_smem_tiling", size=512, configs=configs, repeat=10, cache=tmp_path)
        assert [r["status"] for r in result.rows] == [autotune.TIMED] * 2
        assert all(r["tflops"] > 0 and r["pct_cublas"] > 0 and r["registers"] for r in result.rows)
        assert result.best_config() in configs and result.file.parent == tmp_path
        assert "cublas_after" in result.sessions[0]
        again = autotune.tune("03_smem_tiling", size=512, configs=configs, repeat=10, cache=tmp_path)
        assert again.rows == result.rows and len(again.sessions) == 1, "a repeated search is read from the cache"
    finally:
        backend.use(None)


# ---- the search at a glance (notebook 11) -----------------------------------------------------------
def test_left_out_by_names_the_rule_a_search_applies():
    assert tuning_space.left_out_by("05_2d_thread_tiling", BM=64) is None
    assert tuning_space.left_out_by("05_2d_thread_tiling", TN=16)[0] == "fits on an SM"
    assert tuning_space.left_out_by("05_2d_thread_tiling", BK=64)[0] == "kernel rule"
    assert tuning_space.left_out_by("05_2d_thread_tiling", BM=32, BN=32)[0] == "threads"
    space = tuning_space.search_space("08_warp_tiling")
    for r in space.rejected:
        fields = {k: int(x) for k, x in (part.split("=") for part in r.label.split(", "))}
        assert tuning_space.left_out_by("08_warp_tiling", **fields) == (r.rule, r.reason)
    for c in space.configs[1:]:
        assert tuning_space.left_out_by("08_warp_tiling", **dataclasses.asdict(c)) is None


def test_space_counts_add_up():
    for row in tuning_space.space_counts([stages.variant("04_1d_thread_tiling"), stages.variant("08_warp_tiling")]):
        space = tuning_space.search_space(row["variant"])
        assert row["candidates"] == len(space.configs)
        assert row["reached"] == row["candidates"] + sum(row[f"left out: {rule}"] for rule in tuning_space.RULES)
        assert row["reached"] <= row["in the ranges"]
    assert tuning_space.space_counts([stages.variant("08_warp_tiling")])[0]["in the ranges"] == 5 ** 3 * 6 ** 4


def test_committed_searches_are_summarised_from_their_rows():
    searches = autotune.committed_searches()
    assert searches and [r.variant for r in searches] == sorted((r.variant for r in searches),
                                                                key=[v.name for v in stages.variants()].index)
    for r, row in zip(searches, autotune.search_summary(searches)):
        assert row["variant"] == r.variant and row["candidates"] == len(r.rows)
        if row["gain over default %"] is not None:
            assert row["gain over default %"] >= 0, "the default is a candidate: the best is never slower"
            assert row["best TFLOP/s"] == round(r.best["tflops"], 2)
    label = autotune.searches_label(searches)
    assert label.startswith("Measured on ") and "results/autotune_" in label and "tune(<variant>" in label
    assert autotune.seconds_per_candidate(searches) > 0


def test_search_figures_draw(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for fig in (autotune_plots.plot_space(tuning_space.space_counts([stages.variant("05_2d_thread_tiling")])),
                autotune_plots.plot_searches(autotune.committed_searches())):
        fig.savefig(tmp_path / "f.svg")
        plt.close(fig)


def test_a_register_floor_over_the_limit_does_not_fit_rather_than_raising():
    """The tile explorer asks this of every slider value: 16 x 16 thread tiles need 288 registers at least."""
    config = ThreadTile2DConfig(128, 128, 8, 16, 16)
    assert tuning_space.register_floor(config) > 255
    assert "registers per thread" in tuning_space.does_not_fit(config, "sm_90")
    assert tuning_space.does_not_fit(ThreadTile2DConfig(), "sm_90") is None

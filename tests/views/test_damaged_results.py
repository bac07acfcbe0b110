"""Damaged results files (cut short, a timing NaN or zero, a key missing) stop the readers that
results-table, the notebooks and the ladder use with the file's name and what is wrong
(ResultsFileError), never a traceback from deep inside; autotune's search cache drops damaged rows
and measures them again."""

from __future__ import annotations

import copy
import json
import re
import warnings

import pytest

from helpers.core import results_files
from helpers.core.errors import ResultsFileError
from helpers.measure import autotune
from helpers.measure.gpu_results import gpu_results
from helpers.views import ladder_report

LADDER = json.loads(ladder_report.newest_ladder().read_text())


def _kernel_row(data: dict, n: int = 2) -> dict:
    return [r for r in data["rows"] if not r["variant"].startswith("cublas")][n]


def _cublas_row(data: dict) -> dict:
    return data.get("cublas") or next(r for r in data["rows"] if r["variant"] == "cublas_sgemm")


def _set(getter, key, value):
    def damage(data):
        getter(data)[key] = value
    return damage


def _drop(getter, key):
    def damage(data):
        del getter(data)[key]
    return damage


# The ladder fault table: the damage, and what the message says (after the file's name).
LADDER_FAULTS = [
    ("cut short", "cut", r"is not valid JSON \(.*\): it ends early, cut short as it was written\. Fix: restore it"),
    ("a kernel's TFLOP/s NaN", _set(_kernel_row, "tflops", float("nan")),
     r"row \d+ \(\w+\): tflops is nan; a measured time or rate is a positive number"),
    ("a kernel's time zero", _set(_kernel_row, "median_ms", 0), r"row \d+ \(\w+\): median_ms is 0;"),
    ("a kernel's % of cuBLAS missing", _drop(_kernel_row, "pct_cublas"), r"row \d+ \(\w+\) has no 'pct_cublas'"),
    ("a kernel's name missing", _drop(_kernel_row, "variant"), r"row \d+ has no 'variant'"),
    ("a kernel's TFLOP/s a string", _set(_kernel_row, "tflops", "fast"), r"tflops is 'fast'"),
    ("cuBLAS's TFLOP/s negative", _set(_cublas_row, "tflops", -1.0), r"the cuBLAS row \(cublas_sgemm\): tflops is -1\.0"),
    ("the problem size missing", lambda d: [d.pop("size")] + [r.pop("M", None) for r in d["rows"]],
     r"the problem size is None"),
    ("provenance missing", lambda d: d.pop("provenance"), r"names no GPU in its provenance"),
    ("a list, not an object", "list", r"holds list, not a ladder"),
]


@pytest.mark.parametrize("fault, damage, message", LADDER_FAULTS, ids=[f[0] for f in LADDER_FAULTS])
def test_a_damaged_ladder_stops_with_its_name_and_what_is_wrong(tmp_path, fault, damage, message):
    path = tmp_path / "gpu_x" / "ladder.json"
    path.parent.mkdir()
    text = json.dumps(LADDER)
    if damage == "cut":
        path.write_text(text[: len(text) // 2])
    elif damage == "list":
        path.write_text("[1, 2]")
    else:
        data = copy.deepcopy(LADDER)
        damage(data)
        path.write_text(json.dumps(data))
    with pytest.raises((ResultsFileError, ladder_report.CourseError)) as err:
        ladder_report.results_table(ladder_report.load_ladder(path))
    assert str(path) in str(err.value) and re.search(message, str(err.value)), str(err.value)


def test_the_newest_ladder_is_not_passed_over_when_it_is_cut_short(tmp_path):
    (tmp_path / "gpu_a").mkdir()
    (tmp_path / "gpu_a" / "ladder.json").write_text(json.dumps(LADDER)[:100])
    with pytest.raises(ResultsFileError, match=r"gpu_a/ladder.json is not valid JSON"):
        ladder_report.newest_ladder(tmp_path)


def _results_file(tmp_path, **row_changes) -> None:
    row = {"variant": "02_naive", "M": 1024, "N": 1024, "K": 1024, "median_ms": 2.0, "tflops": 1.07, **row_changes}
    (tmp_path / "02_x.json").write_text(json.dumps({"provenance": {"gpu": "NVIDIA H200", "date": "2026-11-22"},
                                                    "rows": [row]}))


@pytest.mark.parametrize("changes, message", [
    ({"median_ms": 0}, r"02_x.json: the row of 02_naive at 1024x1024x1024: median_ms is 0"),
    ({"tflops": float("nan")}, r"02_x.json: the row of 02_naive at 1024x1024x1024: tflops is nan"),
    ({"tflops": float("inf")}, r"tflops is inf"),
], ids=["time zero", "TFLOP/s NaN", "TFLOP/s infinite"])
def test_a_notebook_reading_a_damaged_results_file_names_it(tmp_path, changes, message):
    _results_file(tmp_path, **changes)
    with pytest.raises(ResultsFileError, match=message):
        gpu_results("02", tmp_path)


def test_a_results_file_cut_short_is_named(tmp_path):
    _results_file(tmp_path)
    text = (tmp_path / "02_x.json").read_text()
    (tmp_path / "02_x.json").write_text(text[:-20])
    with pytest.raises(ResultsFileError, match=r"02_x.json is not valid JSON .*cut short"):
        gpu_results("02", tmp_path)
    _results_file(tmp_path)
    assert len(gpu_results("02", tmp_path).rows) == 1    # the whole file reads


def test_a_committed_search_with_a_key_missing_is_named(tmp_path):
    data = json.loads(autotune.committed()[-1].read_text())
    name = next(iter(data["sessions"]))
    del data["sizes"]
    path = tmp_path / "autotune_x.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=r"autotune_x.json has no 'sizes'"):
        autotune.load(name, path=path)


def test_the_search_cache_drops_damaged_rows_which_are_measured_again(tmp_path):
    key = {"gpu": "G", "variant": "03_smem_tiling", "kernel_sha256": "s", "size": 512}
    good = {"config": "TILE=32", "status": autotune.TIMED, "median_ms": 1.0, "tflops": 0.3}
    rows = [good, {**good, "config": "TILE=16", "tflops": float("nan")}, {"status": autotune.TIMED}]
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"key": key, "sessions": [{}], "rows": rows}))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        data = autotune._load_cache(path, key)
    assert data["rows"] == [good] and "damaged rows" in str(said[0].message)
    path.write_text(json.dumps({"key": key, "sessions": [{}], "rows": rows})[:50])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert autotune._load_cache(path, key)["rows"] == []


def test_timings_ok_refuses_nan_zero_negative_infinite_and_missing():
    assert results_files.timings_ok({"median_ms": 1.5, "tflops": 3})
    for bad in (float("nan"), 0, -1.0, float("inf"), None, "1", True):
        assert not results_files.timings_ok({"median_ms": bad, "tflops": 1.0})
    assert not results_files.timings_ok({"tflops": 1.0})

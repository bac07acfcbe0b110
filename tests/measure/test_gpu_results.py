"""A table of committed results shows one file and each measurement once (issue 34, point 1): notebook 04's table
listed each configuration 2-4 times, from four files, under the first file's name."""

import json

import pytest

from helpers.core.errors import ResultsFileError
from helpers.measure import gpu_results
from helpers.measure.facts import notebook_04
from helpers.core.paths import rel

PROV = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "date": "2026-11-25T03:49:22+00:00", "driver": "13.0",
        "cupy": "14.2.0"}


def _row(config, tflops, **more):
    return {"variant": "04_1d_thread_tiling", "config": config, "M": 4096, "N": 4096, "K": 4096,
            "median_ms": 137.4 / tflops, "tflops": tflops, "pct_cublas": 2 * tflops, **more}


def _write(path, rows, **more):
    path.write_text(json.dumps({"provenance": PROV, "size": 4096, "rows": rows, **more}))


def test_two_files_that_measured_the_same_row_are_refused_as_one_table(tmp_path):
    _write(tmp_path / "a.json", [_row("BM=64, BN=64, BK=16, TM=16", 22.13)])
    _write(tmp_path / "b.json", [_row("BM=64, BN=64, BK=16, TM=16", 22.18)])
    both = gpu_results.gpu_results("04", tmp_path)
    assert len(both.sets) == 2
    with pytest.raises(gpu_results.DuplicateRowsError, match=r"a\.json and \S*b\.json both measured 04_1d_thread_tiling "
                                                             r"\(BM=64, BN=64, BK=16, TM=16\) at 4096x4096x4096"):
        both.rows
    with pytest.raises(gpu_results.DuplicateRowsError, match="2 results files"):
        both.table()
    one = gpu_results.gpu_results("04", tmp_path, file="b.json")
    assert [r["tflops"] for r in one.rows] == [22.18] and one.file.endswith("b.json")


def test_a_file_holding_a_row_twice_is_refused_with_its_name(tmp_path):
    _write(tmp_path / "twice.json", [_row("BM=64, BN=64, BK=8, TM=8", 16.31), _row("BM=64, BN=64, BK=8, TM=8", 16.49)])
    with pytest.raises(gpu_results.DuplicateRowsError, match=r"twice\.json holds 04_1d_thread_tiling \(BM=64, BN=64, "
                                                             r"BK=8, TM=8\) at 4096x4096x4096 twice"):
        gpu_results.gpu_results("04", tmp_path)
    assert issubclass(gpu_results.DuplicateRowsError, ResultsFileError)


def test_a_tuning_run_shows_its_file_cublas_before_and_after_and_each_configuration_once(tmp_path):
    cublas = {"before": {"median_ms": 2.75, "tflops": 50.0}, "after": {"median_ms": 2.8, "tflops": 49.1}}
    _write(tmp_path / "tune.json", [_row("BM=64, BN=64, BK=8, TM=8", 16.49, threads=512, registers=52),
                                    _row("BM=64, BN=64, BK=16, TM=16", 22.18, threads=256, registers=80)],
           cublas=cublas)
    results = gpu_results.gpu_results("04", tmp_path, file=tmp_path / "tune.json")
    table = results.table()
    lines = str(table).splitlines()
    assert "tune.json" in lines[0] and "NVIDIA H200" in lines[0] and "2026-11-25" in lines[0]
    assert "timed before the candidates" in lines[2] and "100.00" in lines[2]
    assert "timed after the candidates" in lines[3] and "98.21" in lines[3]        # 2.75 / 2.8: against the first
    assert "BM=64, BN=64, BK=16, TM=16" in lines[4] and "22.18" in lines[4]        # fastest first
    assert sum("BM=64, BN=64, BK=16, TM=16" in line for line in lines) == 1
    assert "tune.json" in table._repr_html_()
    assert set(results.by_config()) == {"BM=64, BN=64, BK=8, TM=8", "BM=64, BN=64, BK=16, TM=16"}
    with pytest.raises(ResultsFileError, match="holds no GPU measurement of stage 05"):
        gpu_results.gpu_results("05", tmp_path, file=tmp_path / "tune.json")


def test_the_committed_files_of_04_now_refuse_the_table_of_all_of_them():
    """What notebook 04's cell printed: every file's rows in one table. Now refused; the file the facts read is one."""
    with pytest.raises(gpu_results.DuplicateRowsError):
        gpu_results.gpu_results("04").rows
    one = gpu_results.gpu_results("04", file=rel(notebook_04.TUNING_RUN))
    labels = [r["config"] for r in one.rows]
    assert len(labels) == len(set(labels)) == 12 and one.file == rel(notebook_04.TUNING_RUN)

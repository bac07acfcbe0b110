"""The capstone ladder: which committed ladder is the newest, docs/results.md's table kept equal to
what the command makes from it, the table of what each step bought, TF32 rows, and the figures."""

import copy
import json
import xml.etree.ElementTree as ET

import matplotlib
import pytest

matplotlib.use("Agg")

from helpers.views import ladder_report
from helpers.measure import roofline  # noqa: E402
from helpers.core.errors import CourseError  # noqa: E402
from helpers.core.paths import RESULTS_DIR  # noqa: E402
from support import helpers_cli  # noqa: E402


def test_the_results_page_table_is_the_one_made_from_the_newest_ladder():
    lad = ladder_report.load_ladder()
    assert ladder_report.page_table() == ladder_report.results_table(lad), (
        f"docs/results.md's table is not the one made from {lad.source}: run "
        f"`{ladder_report.REGENERATE}` and commit docs/results.md and figures/.")


def test_the_table_reads_every_number_from_the_ladder():
    lad = ladder_report.load_ladder()
    table = ladder_report.results_table(lad)
    assert lad.gpu in table and lad.date in table and lad.source in table
    for r in lad.kernels:
        if r.get("precision", "fp32") == "fp32":
            assert f"| `{r['variant']}` | {r['config']} | {r['tflops']:.2f} | {r['pct_cublas']:.1f} |" in table
        else:   # a TF32 kernel: % of cuBLAS in TF32, and of cuBLAS in FP32
            name = r["precision"].upper()
            assert (f"| `{r['variant']}` ({name}) | {r['config']} | {r['tflops']:.2f} | {r['pct_cublas']:.1f} of {name} "
                    f"({r['pct_cublas_fp32']:.1f} of FP32) |") in table
    for row in lad.cublas.values():
        assert f"{row['tflops']:.2f}" in table


def _write_ladder(folder, date, rows, cublas_tflops=50.0, **extra):
    folder.mkdir(parents=True)
    path = folder / "ladder.json"
    path.write_text(json.dumps({"size": 4096, "backend": "gpu", "rows": rows, **extra,
                                "cublas": {"variant": "cublas_sgemm", "config": "cupy.matmul, TF32 off",
                                           "M": 4096, "N": 4096, "K": 4096, "tflops": cublas_tflops,
                                           "pct_cublas": 100.0},
                                "provenance": {"gpu": "NVIDIA H200", "date": date, "command": "made by a test"}}))
    return path


def _row(variant, tflops, config, **extra):
    return {"variant": variant, "verified": True, "config": config, "M": 4096, "N": 4096, "K": 4096,
            "tflops": tflops, "pct_cublas": 2 * tflops, "repeats": 50, **extra}


def test_the_newest_ladder_is_the_latest_by_provenance_date(tmp_path):
    with pytest.raises(CourseError, match="no ladder"):
        ladder_report.newest_ladder(tmp_path)
    old = _write_ladder(tmp_path / "gpu_b_2026-01-01", "2026-01-01T10:00:00+00:00", [])
    new = _write_ladder(tmp_path / "gpu_a_2026-03-01", "2026-03-01T10:00:00+00:00", [])
    (tmp_path / "gpu_c").mkdir()
    (tmp_path / "gpu_c" / "ladder.json").write_text('{"rows": []}')    # no provenance: not a measurement
    assert ladder_report.newest_ladder(tmp_path) == new != old
    assert ladder_report.newest_ladder(RESULTS_DIR).parent.name.startswith("gpu_")


def test_tf32_rows_name_their_precision_and_both_percentages(tmp_path):
    rows = [_row("09_double_buffering", 48.0, "BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, MIN_BLOCKS=2"),
            _row("10_tensor_cores", 123.45, "BM=128", precision="tf32", pct_cublas_fp32=246.9),
            {"variant": "cublas_tf32", "config": "cupy.matmul, TF32 on", "tflops": 200.0, "pct_cublas": 100.0,
             "precision": "tf32"}]
    lad = ladder_report.load_ladder(_write_ladder(tmp_path / "gpu_x", "2026-03-01T10:00:00+00:00", rows))
    assert set(lad.cublas) == {"fp32", "tf32"} and len(lad.kernels) == 2
    table = ladder_report.results_table(lad)
    assert "| `10_tensor_cores` (TF32) | BM=128 | 123.45 | 246.9 of TF32 (246.9 of FP32) |" in table
    assert "| cuBLAS | `cublas_tf32` (TF32) | cupy.matmul, TF32 on | 200.00 | 100.0 |" in table
    (nine, ten) = ladder_report.steps(lad)
    assert ten["precision"] == "tf32" and ten["speedup"] == pytest.approx(123.45 / 48.0)


def test_each_step_is_the_best_of_its_stage_against_the_previous_stage(tmp_path):
    rows = [_row("05_2d_thread_tiling", 30.0, "BM=128, BN=128, BK=16, TM=16, TN=4"),
            _row("06_padded", 28.0, "BM=128, BN=128, BK=16, TM=8, TN=8, PAD=1"),
            _row("06_swizzled", 33.0, "BM=128, BN=128, BK=16, TM=8, TN=8"),
            {**_row("06_transposed_a", 99.0, "BM=128, BN=128, BK=16, TM=8, TN=8"), "verified": False}]
    lad = ladder_report.load_ladder(_write_ladder(tmp_path / "gpu_x", "2026-03-01T10:00:00+00:00", rows))
    five, six = ladder_report.steps(lad)
    assert five["speedup"] is None and five["variant"] == "05_2d_thread_tiling"
    assert six["variant"] == "06_swizzled", "the fastest verified kernel of the stage"
    assert six["speedup"] == pytest.approx(1.1) and six["previous"] == "05_2d_thread_tiling"
    assert "| 06 Bank conflicts | `06_swizzled` | 33.00 | 1.10× | 66.0 |" in str(ladder_report.steps_table(lad))
    assert "| `06_transposed_a` | BM=128, BN=128, BK=16, TM=8, TN=8 | not verified | - |" in \
        ladder_report.results_table(lad)


def test_write_page_replaces_only_the_text_between_the_markers(tmp_path):
    readme = tmp_path / "results.md"
    readme.write_text(f"# Title\n\nbefore\n\n{ladder_report.BEGIN}\nold table\n{ladder_report.END}\n\nafter\n")
    assert ladder_report.write_page(page=readme) is True
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith(f"{ladder_report.END}\n\nafter\n")
    assert ladder_report.page_table(readme) == ladder_report.results_table()
    assert ladder_report.write_page(page=readme) is False, "a second write changes nothing"
    readme.write_text("# no markers\n")
    with pytest.raises(CourseError, match="results-table: begin"):
        ladder_report.write_page(page=readme)


def test_committed_ceilings_come_from_the_ceilings_file():
    data = json.loads((RESULTS_DIR / "ceilings_h200_2026-11-22.json").read_text())["ceilings"]
    c = roofline.committed_ceilings("NVIDIA H200")
    assert (c.fp32_tflops, c.dram_tbs, c.copy_tbs) == (data["fp32_peak_tflops"], data["dram_tbs"], data["copy_tbs"])
    assert c.source == roofline.DEVICE_PROPERTIES and "ceilings_h200_2026-11-22.json" in c.copy_source
    assert roofline.committed_ceilings("Tesla T4") is None


def test_the_figures_of_the_committed_ladder_are_written_and_deterministic(tmp_path):
    readme = tmp_path / "results.md"
    readme.write_text(f"{ladder_report.BEGIN}\n{ladder_report.END}\n")
    written = ladder_report.regenerate(page=readme, figures_dir=tmp_path / "a")
    assert written[0] == readme and [p.name for p in written[1:]] == ["11_autotuning_ladder.svg",
                                                                      "11_autotuning_roofline.svg"]
    again = ladder_report.regenerate(page=readme, figures_dir=tmp_path / "b")
    assert again[0].suffix == ".svg", "the page already current"
    lad = ladder_report.load_ladder()
    for first, second in zip(written[1:], again):
        text = first.read_text()
        ET.fromstring(text)
        assert first.read_bytes() == second.read_bytes(), "SVG output must be deterministic"
        assert lad.gpu in text and lad.date in text and "<image" not in text
    roof = written[2].read_text()
    assert all(r["variant"] in roof for r in lad.kernels)


def test_the_roofline_says_what_it_cannot_draw(tmp_path):
    rows = [_row("09_double_buffering", 48.0, "BM=128, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, MIN_BLOCKS=2",
                 precision="tf32"),
            _row("99_not_a_kernel", 10.0, "x=1")]
    lad = ladder_report.load_ladder(_write_ladder(tmp_path / "gpu_x", "2026-03-01T10:00:00+00:00", rows))
    fig = ladder_report.plot_ladder_roofline(lad)
    texts = " ".join(" ".join(t.get_text() for t in fig.axes[0].texts).split())   # notes are wrapped
    assert "Not drawn (no registered kernel or intensity model): 99_not_a_kernel" in texts
    assert "TF32 kernels run on the tensor cores" in texts
    colors = ladder_report._palette(r["variant"] for r in lad.kernels)
    dots = [ln for ln in fig.axes[0].lines if ln.get_label() == "09_double_buffering"]
    assert dots and matplotlib.colors.to_hex(dots[0].get_color()) == colors["09_double_buffering"]
    bars = ladder_report.plot_ladder(lad)
    assert len(bars.axes[0].patches) == 2


def test_a_ladder_without_a_gpu_or_cublas_is_refused(tmp_path):
    path = _write_ladder(tmp_path / "gpu_x", "2026-03-01T10:00:00+00:00", [])
    data = json.loads(path.read_text())
    no_gpu = copy.deepcopy(data)
    no_gpu["provenance"].pop("gpu")
    path.write_text(json.dumps(no_gpu))
    with pytest.raises(CourseError, match="names no GPU"):
        ladder_report.load_ladder(path)
    data.pop("cublas")
    path.write_text(json.dumps(data))
    with pytest.raises(CourseError, match="no cuBLAS row"):
        ladder_report.load_ladder(path)


def test_cli_results_table_prints_the_results_page_table():
    r = helpers_cli("results-table")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ladder_report.results_table()

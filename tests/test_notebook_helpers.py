"""The notebooks' helpers called directly: figures and the address model, the block-shape panel's
run and draw functions, the exercise checkers (right and wrong answers), the display helpers
and the notebook maintainer tool."""

import json
import xml.etree.ElementTree as ET

import matplotlib
import nbformat
import pytest

matplotlib.use("Agg")

from helpers import backend, display, exercises, figures, notebook_tools, stages, widgets  # noqa: E402


# ---- address model and figures ----------------------------------------------------------------
@pytest.mark.parametrize("variant, want", [("02_naive", {"A": 32, "B": 1, "C": 32}),
                                           ("02_naive_coalesced", {"A": 1, "B": 4, "C": 4})])
def test_sectors_per_warp_request(variant, want):
    w = figures.warp_accesses(variant)
    assert {a.matrix: a.sectors for a in w.accesses} == want
    assert len(w.lane_ids) == 32


def test_warp_follows_linear_thread_ids():
    # blockDim.x = 8: warp 0 of the coalesced kernel covers 4 rows of 8 columns
    w = figures.warp_accesses("02_naive_coalesced", block_x=8, block_y=32)
    assert sorted({r for r, _ in w.elements}) == [0, 1, 2, 3]
    assert w.access("C").sectors == 4 and w.access("A").sectors == 4
    # lanes outside C are left out (bounds check)
    assert len(figures.warp_accesses("02_naive", M=5, N=5, K=5).lane_ids) == 5
    with pytest.raises(ValueError, match="no warp 1"):
        figures.warp_accesses("02_naive", block_x=4, block_y=4, warp=1)


def test_sector_table_is_plain_and_stable():
    table = figures.sector_table()
    assert table == figures.sector_table()
    assert "total" in table and " 65" in table and " 9" in table


def test_figure_generation(tmp_path):
    (a,) = figures.generate(["02_naive_mapping"], tmp_path)
    (b,) = figures.generate(["02_naive_mapping"], tmp_path / "again")
    assert a.read_bytes() == b.read_bytes(), "SVG output must be deterministic"
    text = a.read_text()
    ET.fromstring(text)                              # well-formed XML
    assert "base64" not in text and "<image" not in text
    assert "32 sectors" in text and "02_naive_coalesced" in text   # text kept as text
    with pytest.raises(KeyError):
        figures.generate(["no_such_figure"], tmp_path)


def test_committed_figures_are_current():
    assert figures.stale() == [], "run `python -m helpers.figures` and commit figures/"


def test_throughput_plot():
    rows = [{"variant": v, "M": n, "N": n, "K": n, "tflops": t} for v, t in
            (("cublas_sgemm", 40.0), ("02_naive", 0.5)) for n in (512, 1024)]
    fig = figures.plot_throughput(rows, title="test")
    assert len(fig.axes[0].lines) == 2


# ---- block-shape panel ----------------------------------------------------------------------
def test_run_block_shape_valid():
    r = widgets.run_block_shape("02_naive_coalesced", 32, 8, M=37, N=41, K=19)
    assert r.error is None and r.ok
    assert r.grid == (2, 5, 1)
    assert r.sectors == {"A": 1, "B": 4, "C": 4}
    assert r.warps == 8 and r.tile == (8, 32)
    text = widgets.describe_block_shape(r)
    assert "PASS" in text and "block (32, 8)" in text
    if backend.name() == "cpu":
        assert r.median_ms is None and "Not timed" in text
    fig = widgets.draw_block_shape(r)
    assert len(fig.axes) == 2


def test_run_block_shape_uncoalesced_and_partial_warps():
    r = widgets.run_block_shape("02_naive_coalesced", 1, 64, M=9, N=7, K=5)
    assert r.ok and r.sectors == {"A": 32, "B": 1, "C": 32}
    small = widgets.run_block_shape("02_naive", 4, 2, M=9, N=7, K=5)
    assert small.ok and small.lanes == 8
    assert "only 8 active lanes" in widgets.describe_block_shape(small)
    assert widgets.draw_block_shape(small) is not None


def test_run_block_shape_constraint_error_is_returned_not_raised():
    r = widgets.run_block_shape("02_naive", 64, 32)
    assert r.error and "at most 1024 threads" in r.error
    assert "not a valid configuration" in widgets.describe_block_shape(r)
    assert widgets.draw_block_shape(r) is None


def test_block_shape_panel_builds():
    panel = widgets.block_shape_panel()
    kernel, bx, by = panel.children[0].children
    assert bx.continuous_update is False and by.continuous_update is False
    assert bx.options == widgets.POWERS_OF_TWO


# ---- exercises ------------------------------------------------------------------------------
def test_exercise_1():
    assert exercises.check_02_exercise_1("02_naive_coalesced").ok
    assert exercises.check_02_exercise_1("sgemm_naive_coalesced").ok
    wrong = exercises.check_02_exercise_1("02_naive")
    assert not wrong and "picks the ROW" in wrong.message
    assert "not one of this stage's kernels" in exercises.check_02_exercise_1("fast").message
    assert "placeholder" in exercises.check_02_exercise_1("?").message


@pytest.mark.parametrize("answer, ok, says", [
    ((5, 13), True, "rounded up"),
    ((5, 13, 1), True, "rounded up"),
    ((7, 9), False, "grid of 02_naive"),
    ((4, 12), False, "rounded down"),
    ((13, 5), False, "swapped"),
    ((2, 2), False, "never computed"),
    ((6, 14), False, "entirely outside"),
    (("?", "?"), False, "placeholder"),
    ("five", False, "whole numbers"),
    ((1, 2, 3, 4), False, "two numbers"),
])
def test_exercise_2(answer, ok, says):
    f = exercises.check_02_exercise_2(answer)
    assert f.ok is ok and says in f.message
    assert str(f).startswith("Correct" if ok else "Not yet")


def test_exercise_2_solution_matches_config():
    bx, by = exercises.EX2_BLOCK
    assert exercises.check_02_exercise_2(stages.CoalescedConfig(bx, by).grid(exercises.EX2_M, exercises.EX2_N)).ok


@pytest.mark.parametrize("block, ok, says", [
    ((1, 32), True, "32 rows"),
    ((1, 1024), True, "32 rows"),
    ((2, 16), False, "16 rows"),
    ((32, 32), False, "4 sectors"),
    ((1, 8), False, "only 8 lanes"),
    ((64, 32), False, "cannot launch"),
    (("?", 4), False, "placeholders"),
])
def test_exercise_3(block, ok, says):
    f = exercises.check_02_exercise_3(*block)
    assert f.ok is ok and says in f.message


# ---- display helpers ------------------------------------------------------------------------
def test_stage_map_lists_every_stage():
    text = display.stage_map()
    for s in stages.STAGES:
        assert f"| {s.id} | {s.title} |" in text
    assert "[02_naive.ipynb](02_naive.ipynb) | built" in text


def test_kernel_source_and_diff():
    assert "sgemm_naive(" in display.kernel_source("02_naive")
    diff = display.diff_text("02_naive", "02_naive_coalesced", code_only=True)
    assert "-  const int row = blockIdx.x * blockDim.x + threadIdx.x;" in diff
    assert "+  const int col = blockIdx.x * blockDim.x + threadIdx.x;" in diff
    assert "//" not in diff
    assert display.kernel_diff("02_naive", "02_naive") == "The two files are identical."


def test_device_card_mentions_the_emulator_on_cpu():
    card = display.device_card()
    assert "Backend" in card
    if backend.name() == "cpu":
        assert "emulator" in card and "timings say nothing about" in card


def test_gpu_results_none(tmp_path):
    r = display.gpu_results("02", tmp_path)
    assert not r.found and "No GPU results committed yet" in str(r)
    assert r.plot() == []


def test_gpu_results_reads_files_with_provenance(tmp_path):
    prov = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "date": "2026-11-21T10:00:00+00:00",
            "driver": "13.0", "cupy": "14.2.0"}
    rows = [{"variant": "cublas_sgemm", "M": 4096, "N": 4096, "K": 4096, "median_ms": 2.7, "tflops": 50.0,
             "pct_cublas": 100.0},
            {"variant": "02_naive", "M": 4096, "N": 4096, "K": 4096, "median_ms": 270.0, "tflops": 0.5,
             "pct_cublas": 1.0},
            {"variant": "03_smem_tiling", "M": 4096, "N": 4096, "K": 4096, "median_ms": 15.0, "tflops": 9.0}]
    (tmp_path / "h200.json").write_text(json.dumps({"provenance": prov, "rows": rows}))
    (tmp_path / "cpu.json").write_text(json.dumps({"backend": "cpu", "rows": [{"variant": "02_naive"}]}))
    (tmp_path / "broken.json").write_text("{not json")
    ladder = {"size": 1024, "backend": "gpu", "provenance": dict(prov, gpu="NVIDIA H100 80GB HBM3"),
              "rows": [{"variant": "02_naive_coalesced", "verified": True, "median_ms": 0.5, "tflops": 4.3,
                        "pct_cublas": 10.0}],
              "cublas": {"variant": "cublas_sgemm", "M": 1024, "N": 1024, "K": 1024, "median_ms": 0.05,
                         "tflops": 43.0}}
    (tmp_path / "ladder.json").write_text(json.dumps(ladder))
    r = display.gpu_results("02", tmp_path)
    assert r.found and len(r.sets) == 2
    text = str(r)
    assert "NVIDIA H200" in text and "2026-11-21" in text and "NVIDIA H100" in text
    assert "03_smem_tiling" not in text
    assert {row["variant"] for row in r.rows} == {"cublas_sgemm", "02_naive", "02_naive_coalesced"}
    assert "| 02_naive | 4096x4096x4096 | 270.000 | 500 | 0.50 | 1.0 |" in r._repr_markdown_()


# ---- notebook tool --------------------------------------------------------------------------
def _nb():
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell(notebook_tools.FIRST_CELL, execution_count=1,
                                      outputs=[nbformat.v4.new_output("stream", text="Backend: ...\n")])
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('PASS')", execution_count=2,
                                        outputs=[nbformat.v4.new_output("stream", text="PASS\n")])
    checked.metadata["execution"] = {"iopub.status.busy": "2026-01-01"}
    nb.cells = [first, checked]
    nb.metadata["widgets"] = {"state": {}}
    return nb


def test_house_form():
    nb = _nb()
    assert any("outputs on a cell not marked" in p for p in notebook_tools.problems(nb))
    house = notebook_tools.house_form(nb)
    assert notebook_tools.problems(house) == []
    assert house.cells[0].outputs == [] and house.cells[0].execution_count is None
    assert house.cells[1].outputs[0]["text"] == "PASS\n" and house.cells[1].execution_count == 2
    assert "execution" not in house.cells[1].metadata and "widgets" not in house.metadata
    assert nb.cells[0].outputs, "house_form must not change its argument"


def test_problems_catch_images_and_a_foreign_first_cell():
    nb = _nb()
    nb.cells[0].source = "import helpers"
    nb.cells[1].outputs.append(nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"}))
    found = " ".join(notebook_tools.problems(notebook_tools.house_form(nb)))
    assert "first code cell" in found and "image/png" in found


@pytest.mark.parametrize("name", ["00_setup", "02_naive"])
def test_committed_notebooks_are_in_house_form(name):
    nb = nbformat.read(stages.NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert notebook_tools.problems(nb, name) == []
    assert sum(notebook_tools.is_checked(c) for c in nb.cells) >= 1


@pytest.mark.parametrize("block, ok, says", [
    ((1, 32), True, "1 row(s) x 32 columns"),
    ((2, 128), True, "stores to 4 sectors"),
    ((4, 8), True, "COLUMN"),
    ((8, 4), False, "8 rows"),
    ((32, 32), False, "32 sectors"),
    ((1, 8), False, "only 8 lanes"),
    ((2048, 1), False, "cannot launch"),
    ((1, None), False, "placeholders"),
])
def test_exercise_4(block, ok, says):
    f = exercises.check_02_exercise_4(*block)
    assert f.ok is ok and says in f.message

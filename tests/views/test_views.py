"""The notebooks' helpers called directly: the trace-derived views and figures, the block-shape
panel's and the tile explorer's run and draw functions, the exercise checkers (right and wrong
answers), the display helpers, and stages 04 and 05's notebooks in house form (tests/maintain/test_notebooks.py
tests the house form itself)."""

import json
import xml.etree.ElementTree as ET

import matplotlib
import nbformat
import numpy as np
import pytest

from helpers.core.errors import ResultsFileError

matplotlib.use("Agg")

from helpers.views import style
from helpers.views import figure_files
from helpers.measure import gpu_results
from helpers.measure import accesses
from helpers.core import paths
from helpers.core import configs
from helpers.core import arch
from helpers.run import backend
from helpers.views import display
from helpers.course import exercises
from helpers.course.exercises import stage02, stage04
from helpers.views import figures
from helpers.measure import memory
from helpers.core import notebook_files
from helpers.maintain import notebooks
from helpers.core import stages
from helpers.views import widgets  # noqa: E402

pytestmark = pytest.mark.emulator


# ---- trace-derived views and figures ------------------------------------------------------------
@pytest.mark.parametrize("variant, want", [("02_naive", {"A": 32, "B": 1, "C": 32}),
                                           ("02_naive_coalesced", {"A": 1, "B": 4, "C": 4})])
def test_sectors_per_warp_request_from_the_trace(variant, want):
    w = accesses.stage02_warp0(variant, 32, 32)
    got = {"A": w.load_a.mean_sectors, "B": w.load_b.mean_sectors, "C": w.store_c.mean_sectors}
    assert got == want
    assert w.lanes == 32 and w.load_a.requests == accesses.TRACE_SIZE   # one request per step of k
    assert w.store_c.requests == 1


def test_warp_follows_linear_thread_ids():
    # blockDim.x = 8: warp 0 of the coalesced kernel covers 4 rows of 8 columns
    w = accesses.stage02_warp0("02_naive_coalesced", 8, 32)
    assert w.rows == 4
    assert w.store_c.mean_sectors == 4 and w.load_a.mean_sectors == 4 and w.load_a.mean_ideal == 1
    # a block of 8 threads: warp 0 has 8 lanes
    assert accesses.stage02_warp0("02_naive", 4, 2).lanes == 8
    with pytest.raises(ValueError, match="at most 1024"):
        accesses.stage02_warp0("02_naive", 64, 32)


def test_block_tile_is_traced():
    naive = accesses.block_tile("02_naive", configs.NaiveConfig(32, 32))
    coalesced = accesses.block_tile("02_naive_coalesced", configs.CoalescedConfig(32, 32))
    assert naive.shape == coalesced.shape == (32, 32)
    assert (naive[:, 0] == 0).all() and (coalesced[0, :] == 0).all()   # warp 0: a column, or a row, of C
    assert accesses.block_tile("02_naive_coalesced", configs.CoalescedConfig(1, 1024)).shape == (1024, 1)


def test_sector_table_is_plain_and_stable():
    table = accesses.sector_table()
    assert table == accesses.sector_table()
    assert "per step of the k loop (load A + load B, issued 64 times): 33 sectors" in table
    assert "per step of the k loop (load A + load B, issued 64 times): 5 sectors" in table
    assert "store C" in table and "base64" not in table


def test_the_views_follow_an_edited_kernel(tmp_path, monkeypatch):
    """Swap the two index lines of the coalesced kernel in a copy: its sectors become 02_naive's."""
    text = stages.variant("02_naive_coalesced").path.read_text()
    row = "  const int row = blockIdx.y * blockDim.y + threadIdx.y;"
    col = "  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive columns"
    assert row in text and col in text
    edited = text.replace(col, "@@").replace(row, "  const int col = blockIdx.y * blockDim.y + threadIdx.y;")
    edited = edited.replace("@@", "  const int row = blockIdx.x * blockDim.x + threadIdx.x;")
    for v in stages.stage("02").variants:
        (tmp_path / v.path.name).write_text(edited if v.name == "02_naive_coalesced" else v.path.read_text())
    monkeypatch.setattr(stages, "KERNELS", tmp_path)
    w = accesses.stage02_warp0("02_naive_coalesced", 32, 32)
    assert (w.load_a.mean_sectors, w.load_b.mean_sectors, w.store_c.mean_sectors) == (32, 1, 32)


def test_bank_summary_tile_32_and_16():
    tiled = stages.variant("03_smem_tiling")
    t32 = accesses.kernel_trace(tiled, tiled.config(tile=32))
    loads = [accesses.bank_view(t32, q) for q in accesses.shared_requests(t32)]
    assert [(b.request.array, b.distinct_words, b.report.wavefronts, b.report.ways) for b in loads] == \
        [("As", 1, 1, 1), ("Bs", 32, 1, 1)]
    t16 = accesses.kernel_trace(tiled, tiled.config(tile=16))
    a16, b16 = (accesses.bank_view(t16, q) for q in accesses.shared_requests(t16))
    assert a16.distinct_words == 2 and sorted(set(a16.banks)) == [0, 16] and a16.report.wavefronts == 1
    assert "lanes 0-15 -> word 0 (bank 0); lanes 16-31 -> word 16 (bank 16)" in a16.lane_groups()
    assert b16.distinct_words == 16 and b16.report.wavefronts == 1
    text = accesses.bank_summary(t16)
    assert "load As" in text and "load Bs" in text and text == accesses.bank_summary(t16)


def test_bank_grid_marks_conflicts():
    """A hand-made request: lanes 0..31 reading column 0 of a 32 x 32 float array (stride 32 words)."""
    req = memory.Request(block=0, warp=0, epoch=0, line=1, space="shared", op="load", size=4, array="S",
                         lanes=np.arange(32), offsets=np.arange(32) * 32 * 4)
    fig = figures.plot_bank_grid(req, origin=0)
    assert "32-way conflict, 32 wavefronts (ideal 1)" in fig.axes[0].get_title()
    red = [p for p in fig.axes[0].patches if matplotlib.colors.to_hex(p.get_edgecolor()) == style.CONFLICT_COLOR]
    assert len(red) == 32
    tiled = stages.variant("03_smem_tiling")
    t32 = accesses.kernel_trace(tiled, tiled.config(tile=32))
    q = accesses.shared_requests(t32)[0]
    title = figures.plot_bank_grid(q, origin=accesses.array_origin(t32, q)).axes[0].get_title()
    assert "1 word in 1 bank, broadcast: no conflict, 1 wavefront (ideal 1)" in title
    assert len(figures.plot_bank_grids(t32).axes) == 2


def test_plot_sectors_bars_per_line():
    tiled = stages.variant("03_smem_tiling")
    fig = figures.plot_sectors(accesses.kernel_trace(tiled, tiled.config(tile=16)))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert any("load A" in t for t in labels) and any("store C" in t for t in labels)
    assert len(ax.patches) == 2 * len(labels)          # this kernel and the ideal, side by side


def test_per_line_view():
    tiled = stages.variant("03_smem_tiling")
    view = accesses.per_line_view(accesses.kernel_trace(tiled, tiled.config(tile=32)))
    inner = next(r for r in view.rows if "As[ty][k] * Bs[k][tx]" in r["source"])
    assert inner["shared requests"] == 4096 and inner["wavefronts"] == inner["ideal wavefronts"] == 4096
    assert inner["max ways"] == 1 and inner["global requests"] == 0
    copy_a = next(r for r in view.rows if "As[ty][tx] =" in r["source"])
    assert (copy_a["global requests"], copy_a["sectors"], copy_a["shared requests"]) == (64, 256, 64)
    assert view.rows[0]["source"].startswith("template") and view.rows[-1]["source"] == "}"
    text = str(view)
    assert "ld As, ld Bs" in text and text == str(accesses.per_line_view(
        accesses.kernel_trace(tiled, tiled.config(tile=32))))
    assert "<table>" in view._repr_html_() and len(view.frame()) == len(view.rows)
    # printed: only the lines that made requests, and how many were left out; every line on request
    shown = [ln for ln in text.splitlines()[3:-1]]
    assert len(shown) == len(view.busy_rows()) < len(view.rows) and "template" not in text
    assert f"{len(view.rows) - len(view.busy_rows())} of the kernel's {len(view.rows)} lines" in text.splitlines()[-1]
    assert "template" in view.text(all_lines=True) and len(view.text(all_lines=True).splitlines()) == len(view.rows) + 3


def test_reuse_table_counts_loads_per_element():
    text = accesses.reuse_table()
    rows = {line.split(" (")[0]: line.split() for line in text.splitlines()[2:]}
    assert rows["02_naive_coalesced"][-5:] == ["16384", "16", "16384", "16", "0.50"]
    assert rows["03_smem_tiling"][-5:] == ["1024", "1", "1024", "1", "8"]


@pytest.mark.parametrize("name, says", [("02_naive_mapping", "32 sectors"),
                                        ("03_smem_tiling_bank_grid", "no conflict"),
                                        ("03_smem_tiling_reuse", "each loaded 16 times")])
def test_figure_generation(tmp_path, name, says):
    (a,) = figure_files.generate([name], tmp_path)
    (b,) = figure_files.generate([name], tmp_path / "again")
    assert a.read_bytes() == b.read_bytes(), "SVG output must be deterministic"
    text = a.read_text()
    ET.fromstring(text)                              # well-formed XML
    assert "base64" not in text and "<image" not in text
    assert says in text                              # text kept as text
    assert a.stat().st_size < 400_000


def test_unknown_figure():
    with pytest.raises(KeyError):
        figure_files.generate(["no_such_figure"])


@pytest.mark.slow
def test_committed_figures_are_current():
    assert figure_files.stale() == [], "run `python -m helpers.figures` and commit figures/"


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
    assert r.sectors == {"A": 1, "B": 4, "C": 4} and r.ideal == {"A": 1, "B": 4, "C": 4}
    assert r.warps == 8 and r.tile == (8, 32) and r.rows == 1
    text = widgets.describe_block_shape(r)
    assert "PASS" in text and "block (32, 8)" in text
    if backend.name() == "cpu":
        assert r.median_ms is None and "Not timed" in text
    fig = widgets.draw_block_shape(r)
    assert len(fig.axes) == 2


def test_run_block_shape_uncoalesced_and_partial_warps():
    r = widgets.run_block_shape("02_naive_coalesced", 1, 64, M=9, N=7, K=5)
    assert r.ok and r.sectors == {"A": 32, "B": 1, "C": 32} and r.ideal["C"] == 4
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


# ---- tile explorer ---------------------------------------------------------------------------
def test_run_tile_config_tile_16():
    r = widgets.run_tile_config("03_smem_tiling", M=37, N=29, K=23, tile=16)
    assert r.error is None and r.failure is None and r.ok
    assert r.values == {"tile": 16} and r.config == configs.TileConfig(16)
    assert [(b.request.array, b.distinct_words, b.report.wavefronts) for b in r.banks] == [("As", 2, 1), ("Bs", 16, 1)]
    assert {a.label: a.mean_sectors for a in r.sectors}["load A"] == 4
    assert r.intensity is not None and abs(r.intensity.dram - 3.98) < 0.01
    assert r.ceilings is not None and r.roof_tflops == pytest.approx(r.ceilings.attainable(r.intensity.dram))
    text = widgets.describe_tile_config(r)
    assert "PASS" in text and "shared load As (line 31): 2 words in 2 banks, no conflict" in text
    assert "FLOP per DRAM byte" in text
    if r.resources is not None:
        assert "registers per thread" in text and r.resources.threads_per_block == 256
    if backend.name() == "cpu":
        assert r.tflops is None and "Not timed" in text
    fig = widgets.draw_tile_config(r)
    assert len(fig.axes) == 3                        # As grid, Bs grid, sectors


def test_run_tile_config_broken_constraint_is_returned_not_raised():
    r = widgets.run_tile_config("03_smem_tiling", tile=64)
    assert r.error and "at most 1024" in r.error
    assert "not a valid configuration" in widgets.describe_tile_config(r)
    assert widgets.draw_tile_config(r) is None
    with pytest.raises(TypeError, match="no configuration field"):
        widgets.run_tile_config("03_smem_tiling", block_x=4)


def test_run_tile_config_works_for_any_variant():
    r = widgets.run_tile_config("02_naive_coalesced", M=9, N=7, K=5, block_x=8)
    assert r.ok and r.values == {"block_x": 8, "block_y": 32} and r.banks == []
    assert len(widgets.draw_tile_config(r).axes) == 1


def test_tile_explorer_builds():
    panel = widgets.tile_explorer("03_smem_tiling")
    label, tile = panel.children[0].children
    assert tile.description == "tile" and tile.continuous_update is False
    assert tile.value == 32 and tile.options == (1, 2, 4, 8, 16, 32, 64, 128)
    assert widgets.slider_options(5) == (1, 2, 4, 5, 8, 16)


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
    bx, by = stage02.EX2_BLOCK
    assert exercises.check_02_exercise_2(configs.CoalescedConfig(bx, by).grid(stage02.EX2_M, stage02.EX2_N)).ok


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
    for s in stages.REGISTRY:
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
    r = gpu_results.gpu_results("02", tmp_path)
    assert not r.found and "No GPU results committed yet" in str(r)
    assert display.plot_committed(r) == []


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
    # a damaged file stops the reader with its name and what is wrong, rather than being passed over
    with pytest.raises(ResultsFileError, match=r"broken\.json is not valid JSON"):
        gpu_results.gpu_results("02", tmp_path)
    (tmp_path / "broken.json").unlink()
    r = gpu_results.gpu_results("02", tmp_path)
    assert r.found and len(r.sets) == 2
    text = str(r)
    assert "NVIDIA H200" in text and "2026-11-21" in text and "NVIDIA H100" in text
    assert "03_smem_tiling" not in text
    assert {row["variant"] for row in r.rows} == {"cublas_sgemm", "02_naive", "02_naive_coalesced"}
    assert "| 02_naive | 4096x4096x4096 | 270.000 | 500 | 0.50 | 1.0 |" in r._repr_markdown_()


def test_intensity_table_and_roofline_view():
    cases = [("02_naive_coalesced", None)] + [("03_smem_tiling", configs.TileConfig(t)) for t in (8, 32)]
    text = display.intensity_table(cases)
    lines = text.splitlines()
    assert lines[2].split()[-3:] == ["0.25", "7.94", "-"]
    assert lines[4].split()[-3:] == ["7.94", "7.94", "0.25"]
    long = display.intensity_table([("03_smem_tiling", None), ("08_warp_tiling", None)]).splitlines()[1:]
    assert len({len(ln) for ln in long}) == 1, "a long label pushes every column, header included, the same way"
    if backend.name() == "cpu":
        fig = display.roofline_view(["02_naive_coalesced", "03_smem_tiling"], cases[1:])
        texts = " ".join(t.get_text() for t in fig.axes[0].texts)
        assert "model: tile=8" in texts and "model: tile=32" in texts


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


@pytest.mark.parametrize("answer, ok, says", [
    ((1, 8), True, "drop by the tile size"),
    ((8, 1), False, "swapped"),
    ((8, 8), False, "number of tiles along K"),
    ((2, 8), False, "count the loads of A"),
    ((1, 64), False, "counts too many threads"),
    ((1, 4), False, "the tiled count is right"),
    (("?", "?"), False, "placeholders"),
    ("x", False, "whole numbers"),
    ((1, 2, 3), False, "exactly two"),
])
def test_exercise_03_1(answer, ok, says):
    f = exercises.check_03_exercise_1(answer)
    assert f.ok is ok and says in f.message


@pytest.mark.parametrize("answer, ok, says", [
    ((4, 1), True, "banks 0, 8, 16, 24"),
    ((1, 1), False, "tile = 32 case"),
    ((32, 1), False, "SAME address"),
    ((8, 1), False, "how many different words"),
    ((4, 4), False, "same bank"),
    ((4, 2), False, "the words are right"),
    ((3, 1), False, "values of ty"),
    ((None, 1), False, "placeholders"),
])
def test_exercise_03_2(answer, ok, says):
    f = exercises.check_03_exercise_2(answer)
    assert f.ok is ok and says in f.message


# ---- stages 04 and 05: their notebooks and exercise checkers ---------------------------------------
@pytest.mark.parametrize("name", ["04_1d_thread_tiling", "05_2d_thread_tiling"])
def test_thread_tiling_notebooks_are_in_house_form(name):
    nb = nbformat.read(paths.NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert notebooks.problems(nb, name) == []
    assert sum(notebook_files.is_checked(c) for c in nb.cells) >= 5


@pytest.mark.parametrize("answer, ok, says", [
    ((2, 16), True, "25.0% occupancy"),
    ((8, 64), False, "warp slots"),
    ((32, 256), False, "most blocks an SM can hold"),
    ((25, 200), False, "shared memory allows 25 blocks"),
    ((3, 24), False, "round down"),
    ((2, 17), False, "whole blocks"),
    ((4, 32), False, "Work out each limit"),
    ((3.5, 28), False, "whole numbers"),
    (("?", 24), False, "placeholders"),
    ((1, 2, 3), False, "exactly two"),
])
def test_exercise_04_1(answer, ok, says):
    f = exercises.check_04_exercise_1(answer)
    assert f.ok is ok and says in f.message


def test_exercise_04_1_follows_the_occupancy_calculator():
    c = stages.variant("04_1d_thread_tiling").default
    occ = arch.occupancy("sm_90", c.threads(), stage04.EX04_1_REGISTERS, c.static_shared_bytes())
    assert exercises.check_04_exercise_1((occ.active_blocks, occ.active_warps)).ok


@pytest.mark.parametrize("answer, ok, says", [
    ((2, 2), True, "2-way conflict"),
    ((1, 1), False, "BN >= 32"),
    ((2, 1), False, "different banks"),
    ((32, 1), False, "SAME address"),
    ((16, 1), False, "how many rows of threads"),
    ((3, 3), False, "values of threadRow"),
    ((2, 4), False, "the words are right"),
    ((None, 2), False, "placeholders"),
])
def test_exercise_04_2(answer, ok, says):
    f = exercises.check_04_exercise_2(answer)
    assert f.ok is ok and says in f.message


@pytest.mark.parametrize("answer, ok, says", [
    ((6.4, 8), True, "square tile"),
    ((32 / 5, 8.0), True, "square tile"),
    ((8, 6.4), False, "swapped"),
    ((256, 256), False, "per step of k"),
    ((40, 32), False, "shared loads per step"),
    ((3.2, 4), False, "FLOP per shared byte"),
    ((32 / 33, 16 / 17), False, "stage 04"),
    ((1, 1), False, "count a thread's shared loads"),
    (("?", "?"), False, "placeholders"),
    ("ab", False, "two numbers"),
    ((1, 2, 3), False, "exactly two"),
])
def test_exercise_05_1(answer, ok, says):
    f = exercises.check_05_exercise_1(answer)
    assert f.ok is ok and says in f.message


@pytest.mark.parametrize("answer, ok, says", [
    ((16, 2), True, "2-way conflict"),
    ((32, 2), False, "same threadCol"),
    ((4, 1), False, "one j for the whole warp"),
    ((16, 1), False, "which banks"),
    ((16, 16), False, "16 words in one bank"),
    ((16, 3), False, "the words are right"),
    ((5, 5), False, "how many different values"),
    (("?", 1), False, "placeholders"),
])
def test_exercise_05_2(answer, ok, says):
    f = exercises.check_05_exercise_2(answer)
    assert f.ok is ok and says in f.message


def test_tile_explorer_offers_only_what_fits_the_learners_gpu(cpu_backend, monkeypatch):
    v = stages.variant("10_tensor_cores")
    assert 32 not in widgets.fitting_options(v, "BK", "sm_86") and 16 in widgets.fitting_options(v, "BK", "sm_86")
    assert 32 in widgets.fitting_options(v, "BK", "sm_90")
    monkeypatch.setenv("TBT_ARCH", "sm_86")
    assert widgets.fitting_options(v, "BK") == widgets.fitting_options(v, "BK", "sm_86")
    r = widgets.run_tile_config(v.name, BK=32, WN=64)   # the H200's configuration: refused before compiling
    assert r.error and "sm_86" in r.error and "shared memory" in r.error and r.config is None

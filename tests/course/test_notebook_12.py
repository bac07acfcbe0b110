"""Notebook 12 shows what its prose says, and no answer above its question (issue 34's list for notebook 12; issue 35):
each test would have caught the defect it is named after. (The race messages of section 6 and the pipeline plot's
labels run kernels on the emulator: tests/stages/test_12.py.)"""

import re

import nbformat
import pytest

from helpers.core import results_files
from helpers.core.paths import NOTEBOOKS, ROOT
from helpers.course.exercises import stage12
from helpers.measure import facts, hopper
from helpers.measure.facts import notebook_12

NOTEBOOK = NOTEBOOKS / "12_hopper.ipynb"
NCU_FACTS = {"hopper_ncu_tensor_pipe_pct": "tensor pipe busy (%)", "hopper_ncu_time_us": "time (µs)"}


@pytest.fixture(scope="module")
def cells():
    return nbformat.read(NOTEBOOK, as_version=4).cells


def _markdown_above(cells, call: str) -> str:
    index = next(i for i, c in enumerate(cells) if c.cell_type == "code" and call in c.source)
    return "\n".join(c.source for c in cells[:index] if c.cell_type == "markdown")


def test_the_nsight_table_shows_the_numbers_the_prose_states(cells):
    """Cell 45 said 66.3 (the fact, Python's rounding of 66.35) where the table printed with DataFrame.round showed 66.4."""
    shown = [c.source for c in cells if c.cell_type == "code" and "hopper.ncu_table()" in c.source]
    assert shown, "the notebook no longer shows hopper.ncu_table(): point this test at what it shows"
    table = hopper.ncu_table()
    stated = [(m["number"], m["name"]) for c in cells if c.cell_type == "markdown" for m in facts.MARKER.finditer(c.source)
              if m["name"].split("/")[0] in NCU_FACTS]
    assert len(stated) >= 6
    for number, name in stated:
        metric, kernel = NCU_FACTS[name.split("/")[0]], notebook_12.NCU_KERNELS[name.split("/")[1]]
        assert table.loc[metric, kernel] == number, (name, table.loc[metric, kernel], number)


def test_exercise_2s_shape_and_percentage_are_not_above_it(cells):
    """Cell 40 named 512³ at 86.5 % (and miscounted its tiles) above exercise 2, which asks for that shape."""
    prose = _markdown_above(cells, "check_12_exercise_2(")
    M, N, K = stage12._worst_shape()
    row = next(r for r in hopper.measurements()["sweep"] if tuple(r["shape"]) == (M, N, K))
    for shown in (f"{M}³" if M == N == K else f"{M} × {N} × {K}", f"{M} × {N} × {K}", f"{row['pct_cublas_tf32']:.1f}"):
        assert shown not in prose, shown


def test_nothing_above_the_prediction_rules_out_one_of_its_answers(cells):
    """Cell 1 called rounding by the copy engine free ("at no cost"), which answers the prediction's option (c); the
    kernel's header, shown above the prediction, said so too."""
    prose = _markdown_above(cells, "check_12_prediction(")
    header = (ROOT / "kernels" / "12_warp_specialized.cu").read_text()
    for text in (prose, header):
        for claim in ("at no cost", "is free", "costs nothing", "for free"):
            assert claim not in text, claim


def test_the_sweeps_mean_leaves_out_the_rows_that_did_not_time_their_copies():
    """4095³ and 4097³ fed the headline mean with kernel times that left out the copies to a padded pitch."""
    data = hopper.measurements()
    table = hopper.sweep_table(data)
    untimed = table[table["operands"] == "padded copies, not timed"]
    assert set(untimed["M × N × K"]) == {"4095 × 4095 × 4095", "4097 × 4097 × 4097"}
    fair = [r["pct_cublas_tf32"] for r in data["sweep"] if not hopper.padded(r["shape"])]
    assert len(fair) == len(data["sweep"]) - 2
    assert hopper.sweep_geomean(data) == pytest.approx(notebook_12._geomean(fair))
    assert hopper.sweep_geomean(data) < data["sweep_geomean_pct"]  # the stored mean took the padded rows in


def test_the_tile_count_the_prose_gives_is_the_configurations():
    """Cell 40 said 512³ has 16 tiles of 256 × 128; it has 8. Any 'N tiles of BM × BN' the notebook states at a shape
    it names is checked against the default configuration."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cfg = hopper.stages.variant("12_warp_specialized").default
    for c in nb.cells:
        for m in re.finditer(r"(\d+)³ \((\d+) tiles of (\d+) × (\d+)", c.source):
            n, tiles, bm, bn = map(int, m.groups())
            assert (bm, bn) != (cfg.BM, cfg.BN) or tiles == cfg.tiles(n, n), m[0]


def test_what_the_prose_says_of_the_h100_beta_run_without_a_number_holds_in_its_file():
    """Section 8 says, of results/stage_10_12_h100_2026-11-27_beta/: that against cuBLAS beta != 0 no longer costs the
    kernel anything (every round with beta = 1 at or above the median with beta = 0, and reading C costs it less of its
    speed than cuBLAS), that every timing was power-limited, and that the timings below the power limit were the run's
    first three; notebook 10 that batching C gained less than round trips alone predict (more than an eighth left)."""
    value = facts.value
    run = results_files.read_json(notebook_12.BETA_RUN)
    assert run["provenance"]["gpu"].startswith("NVIDIA H100")
    k = "12_warp_specialized"
    assert value(f"hopper_beta_pct_cublas_tf32/{k}/beta1/min") >= value(f"hopper_beta_pct_cublas_tf32/{k}/beta0/median")
    assert value(f"hopper_beta_cost_pct/{k}") < value("hopper_beta_cost_pct/cublas_tf32")
    assert value("hopper_beta_timings/power_limited") == value("hopper_beta_timings/all") == len(run["rows"])
    below = [i for i, r in enumerate(run["rows"])
             if r["clocks"]["power_w_median"] < 0.97 * r["clocks"]["power_limit_w"]]
    assert below == [0, 1, 2]
    assert value("hopper_beta_added_us/10_wgmma") > value("hopper_beta_added_us/10_wgmma_cbatch1") / 8

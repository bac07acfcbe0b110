"""Stage 06 (bank conflicts): the exercise checkers, and the claims notebook 06 computes from traces
of the kernel files and from the committed measurements (results/), checked here so that an edited
kernel or a re-measured file that changes a claim fails a test, not just a notebook output."""

import dataclasses
import json
import statistics

import nbformat
import pytest

from helpers.measure import accesses
from helpers.core import paths
from helpers.course import exercises
from helpers.course.exercises import stage06
from helpers.measure import memory
from helpers.core import notebook_files
from helpers.maintain import notebooks
from helpers.measure import resources
from helpers.core import stages

pytestmark = pytest.mark.emulator

ROOT = paths.ROOT
BASE = stages.variant("05_2d_thread_tiling")
PADDED, TRANSPOSED, SWIZZLED = (stages.variant(n) for n in ("06_padded", "06_transposed_a", "06_swizzled"))
TILE_16x4 = dict(BM=128, BN=128, BK=16, TM=16, TN=4)
TILE_8x8 = dict(BM=128, BN=128, BK=16, TM=8, TN=8)
TILE_8x8x8 = dict(BM=128, BN=128, BK=8, TM=8, TN=8)


def _worst(variant, fields, op, array):
    """The worst conflict of warp 0's `op` requests on `array` in block 0 (M = N = K = 64)."""
    tr = accesses.kernel_trace(variant, variant.config(**fields))
    reqs = [q for q in accesses.shared_requests(tr, op=op, first_only=False) if q.array == array]
    assert reqs, f"no {op} of {array} traced"
    return max(memory.banks(q).ways for q in reqs)


# ---- exercise checkers ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer, ok, says", [
    ({1, 2, 3}, True, "need not be odd"),
    ([3, 2, 1], True, "PAD = 4: 96 (bank 0)"),
    ({4}, False, "PAD = 4 is the popular choice"),
    ({1, 2, 3, 4}, False, "96 is 3 x 32"),
    ({1, 2, 3, 8}, False, "multiple of 4 floats"),
    ({1}, False, "PAD = 2 and PAD = 3 work too"),
    ({1, 2}, False, "PAD = 3 works too"),
    ({1, 5}, False, "5 is not among them"),
    ({"?"}, False, "placeholder"),
    ("?", False, "placeholder"),
    (None, False, "placeholder"),
    ("x", False, "set of whole numbers"),
    ({1.5}, False, "whole number of floats"),
    ({True}, False, "set of whole numbers"),       # a bool is no count of floats
])
def test_exercise_06_1(answer, ok, says):
    f = exercises.check_06_exercise_1(answer)
    assert f.ok is ok and says in f.message, f.message


def test_exercise_06_1_answer_follows_the_trace():
    want = {p for p in stage06.EX06_1_PADS if _worst(PADDED, dict(TILE_8x8x8, PAD=p), "load", "As") == 1}
    assert want == {1, 2, 3}
    assert exercises.check_06_exercise_1(want).ok


@pytest.mark.parametrize("answer, ok, says", [
    ((4, 32), True, "32-way"),
    ((32, 4), False, "swapped"),
    ((1, 1), False, "copy of 05"),
    ((8, 1), False, "banks the 32 lanes use"),
    ((2, 2), False, "06_padded"),
    ((16, 16), False, "do not give the same conflict"),
    ((3, 5), False, "write out lane t"),
    (("?", "?"), False, "placeholders"),
    ("x", False, "whole numbers"),
    ((1, 2, 3), False, "exactly two"),
])
def test_exercise_06_2(answer, ok, says):
    f = exercises.check_06_exercise_2(answer)
    assert f.ok is ok and says in f.message, f.message


# ---- what the traces show (section 4 of the notebook) ---------------------------------------------
@pytest.mark.slow
def test_8x8_as_load_conflicts_in_05_and_each_fix_removes_it_but_pad_4():
    for fields in (TILE_8x8, TILE_8x8x8):
        assert _worst(BASE, fields, "load", "As") == 2
        for v in (PADDED, TRANSPOSED, SWIZZLED):
            assert _worst(v, fields, "load", "As") == 1, v.name
    assert _worst(PADDED, dict(TILE_8x8x8, PAD=4), "load", "As") == 2     # 8 * (8 + 4) = 96 words apart


@pytest.mark.slow
def test_16x4_as_load_is_a_broadcast_and_no_fix_touches_bs():
    for v in (BASE, PADDED, TRANSPOSED, SWIZZLED):
        tr = accesses.kernel_trace(v, v.config(**TILE_16x4))
        q = next(q for q in accesses.shared_requests(tr) if q.array == "As")
        assert accesses.bank_view(tr, q).distinct_words == 1, v.name
        for fields in (TILE_16x4, TILE_8x8):
            assert _worst(v, fields, "load", "Bs") == 4, v.name


@pytest.mark.slow
def test_what_each_fix_costs_the_copy():
    assert _worst(BASE, TILE_8x8, "store", "As") == 1
    assert _worst(SWIZZLED, TILE_8x8, "store", "As") == 1
    assert _worst(PADDED, TILE_8x8, "store", "As") == 2
    assert _worst(TRANSPOSED, TILE_8x8, "store", "As") == 16
    assert _worst(TRANSPOSED, TILE_8x8x8, "store", "As") == 8


def test_padding_costs_bm_times_pad_floats_and_the_trace_agrees():
    for v, cfg in ((PADDED, PADDED.default), (PADDED, PADDED.config(**TILE_8x8x8, PAD=4))):
        arrays = {a.name: a.size for a in accesses.kernel_trace(v, cfg).shared_variables}
        assert arrays["As"] == cfg.BM * (cfg.BK + cfg.PAD) * 4
        assert sum(arrays.values()) == cfg.static_shared_bytes()
    assert PADDED.default.static_shared_bytes() - BASE.config(**TILE_8x8).static_shared_bytes() == 512


# ---- the merged-load model against the committed Nsight Compute run --------------------------------
def _as_compiled(trace, width):
    loads = [q for q in memory.requests(trace, "shared") if q.op == "load"]
    return [memory.banks(dataclasses.replace(q, size=width[q.array])) for q in loads
            if ((q.offsets - accesses.array_origin(trace, q)) % width[q.array] == 0).all()]


def _nsight(label):
    for run in sorted((ROOT / "results").glob("ncu_*/comparison.json"), reverse=True):
        rows = {r["metric"]: r["gpu"] for r in json.loads(run.read_text())["rows"] if r["case"] == label}
        if rows:
            return rows
    pytest.skip(f"no committed Nsight Compute run of {label}")


def test_merged_loads_match_nsight_instructions_and_8x8_wavefronts():
    width = {"As": 8, "Bs": 16}   # stage 05's LDS.64 and LDS.128
    for fields, wavefronts_match in ((TILE_16x4, False), (TILE_8x8x8, True)):
        cfg = BASE.config(**fields)
        loads = _as_compiled(accesses.kernel_trace(BASE, cfg, M=64, blocks=None), width)
        gpu = _nsight(f"{BASE.name} ({cfg.label()})")
        assert len(loads) == gpu["shared load requests"]
        assert (sum(b.wavefronts for b in loads) == gpu["shared load wavefronts"]) is wavefronts_match
    assert gpu["shared load bank conflicts"] > 0                      # 8 x 8 x 8 conflicts on the GPU
    assert _nsight(f"{BASE.name} ({BASE.default.label()})")["shared load bank conflicts"] == 0


# ---- the committed H200 timings (section 5) ----------------------------------------------------------
def _h200():
    path = ROOT / "results" / "stages_06_09_h200_2026-11-22" / "exp_06_07.json"
    run = json.loads(path.read_text())
    rows = {}
    for row in run["kernels"].values():
        v = next((v for v in (BASE, PADDED, TRANSPOSED, SWIZZLED) if row.get("file") == v.path.name), None)
        if v:
            rows[(v.name, v.config_type(*map(int, row["expr"].split("<")[1].rstrip(">").split(","))))] = row
    return run, rows


def _cases():
    out = [(v, v.config(**f)) for f in (TILE_16x4, TILE_8x8, TILE_8x8x8) for v in (BASE, PADDED, TRANSPOSED, SWIZZLED)]
    return out + [(PADDED, PADDED.config(**TILE_8x8x8, PAD=4))]


@pytest.mark.slow
def test_the_h200_run_measured_every_case_and_its_registers_are_ptxas_here():
    run, rows = _h200()
    assert run["provenance"]["gpu"] and run["provenance"]["tf32"] is False
    for v, cfg in _cases():
        row = rows[(v.name, cfg)]
        assert len(row["tflops_three_runs"]) == 3
        assert resources.kernel_resources(v, cfg, "sm_90").registers == row["regs"], (v.name, cfg.label())


def test_the_measured_claims_of_the_notebook():
    _, rows = _h200()
    t = {k: statistics.median(r["tflops_three_runs"]) for k, r in rows.items()}
    default = t[(BASE.name, BASE.config(**TILE_16x4))]
    for v in (PADDED, TRANSPOSED, SWIZZLED):   # on 05's default every fix loses
        assert t[(v.name, v.config(**TILE_16x4))] < default
    assert max(x for (name, _), x in t.items() if name != BASE.name) < default   # no 06 kernel beats 05's default


# ---- the notebook --------------------------------------------------------------------------------
def test_notebook_in_house_form():
    nb = nbformat.read(paths.NOTEBOOKS / "06_bank_conflicts.ipynb", as_version=4)
    assert notebooks.problems(nb, "06_bank_conflicts") == []
    assert sum(notebook_files.is_checked(c) for c in nb.cells) >= 8

"""Write it yourself, exercises 07 to 10: each lesson fails the correct kernel that misses the stage's
idea, with the numbers it measured. (tests/course/test_write_it.py runs every exercise's solution,
starter and barrier-free solution.) 07: a scalar kernel's share of 16-byte accesses; 08: a warp whose
lanes span a strip of the block tile; 09: loads issued after the multiply-adds, and a second barrier
per tile; 10: FP32 arithmetic without wmma, a staging tile read without __syncwarp (the hint asks for a
__syncwarp, not a __syncthreads), and a wrong ldm (wrong inside the matrices, not at the edges). Each edit is
built once (2 to 4 s on the CPU emulator)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers.course import write_it
from helpers.course.write_it import footprints, stage10
from helpers.measure import trace, verify
from helpers.run.gemm import launch_args

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def _edited(tmp_path, exercise_id: str, *edits: tuple[str, str]):
    text = write_it.exercise(exercise_id).solution_path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{exercise_id}_edited.cu"
    path.write_text(text)
    return path, text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_contracts_fix_the_tiles_and_10_is_checked_in_tf32():
    ex = {n: write_it.exercise(n) for n in ("07", "08", "09", "10")}
    assert ex["07"].launch.grid(M=65, N=64, K=3) == (1, 2, 1) and ex["07"].launch.block == (256,)
    assert ex["08"].launch.block == ex["09"].launch.block == (128,) and ex["10"].launch.grid(33, 32, 1) == (1, 2, 1)
    assert [e.precision for e in ex.values()] == ["fp32", "fp32", "fp32", "tf32"]
    assert "sm_80" in ex["10"].contract() and "TF32's tolerance" in ex["10"].contract()
    assert "16-byte aligned" in ex["07"].contract() and "32 × 32" in ex["08"].contract()


@pytest.mark.slow
def test_the_solutions_pass_with_the_lessons_numbers():
    v = {n: write_it.check(n, write_it.exercise(n).solution_path) for n in ("07", "08", "09", "10")}
    assert all(x.ok for x in v.values()), "\n".join(str(x) for x in v.values() if not x.ok)
    assert v["07"].numbers["16-byte share"] == 1.0
    assert [v["08"].numbers[f"warp {w} origin"] for w in range(4)] == [(0, 0), (0, 32), (32, 0), (32, 32)]
    assert v["08"].numbers["warp 0 rows of A + columns of B read"] == 64
    n9 = v["09"].numbers
    assert (n9["depth"], n9["barriers"], n9["k-tiles"], n9["reads after the loads"]) == (1, 8, 8, 1.0)
    n10 = v["10"].numbers
    assert n10["mma instructions in PTX"] >= 1 and n10["warp 3 origin"] == (16, 16)
    assert n10["warp 0 fragments of A"] == n10["warp 0 fragments of B"] == 8
    assert n10["share beyond FP32 tolerance"] > 0.8 and n10["worst error / TF32 tolerance"] <= 1


def test_a_correct_scalar_07_fails_the_16_byte_lesson_with_its_share(tmp_path):
    path, text = _edited(tmp_path, "07",
                         ("  if (aligned && count >= 4) return *reinterpret_cast<const float4*>(p);\n", ""),
                         ("if (alignedC && col + 4 <= N) {", "if (false) {"))
    v = write_it.check("07", path)
    assert v.failed_step == "lesson" and "only 0 % of block 0's global accesses are 16 bytes wide" in v.cause, str(v)
    assert v.numbers["16-byte share"] == 0.0 and v.numbers["load A 16-byte share"] == 0.0
    assert v.line == _line_of(text, "return make_float4(count > 0 ? p[0]") and "float4" in v.hint


def test_08_with_07s_mapping_fails_naming_the_warps_strip(tmp_path):
    path, _ = _edited(tmp_path, "08",
                      ("const int rowBase = warpRow * WM + laneRow * TM;", "const int rowBase = tid / 8 * TM;"),
                      ("const int colBase = warpCol * WN + laneCol * TN;", "const int colBase = tid % 8 * TN;"))
    v = write_it.check("08", path)
    assert v.failed_step == "lesson" and "rows 0-15 × columns 0-63 (16 × 64)" in v.cause, str(v)
    assert "not one 32 × 32 tile" in v.cause and v.numbers["warp tiles"] == 0
    assert v.numbers["warp 0 rows of A + columns of B read"] == 80
    # the diagnosis is each warp's line; the hint points to the notebook's hints, not the answer's code
    assert "warp 3: stores C's rows 48-63 × columns 0-63" in str(v)
    assert "write_it.hint('08')" in v.hint and not any(w in v.hint for w in ("rowBase", "colBase", "warpRow",
                                                                                 "laneRow", "%", "tid"))


def test_a_wrong_result_from_an_unwritten_shared_read_reports_correct_then_safe(tmp_path):
    path, text = _edited(tmp_path, "08", ("&As[k][rowBase]", "&As[k][rowBase + 4]"))
    v = write_it.check("08", path)
    assert [(s.name, s.ok) for s in v.steps[2:]] == [("correct", False), ("safe", False)], str(v)
    assert v.steps[2].lines[0].startswith("wrong result on 1x1x1") and v.failed_step == "safe"
    assert "reads As" in v.cause and "the likelier cause of the wrong result above" in v.cause
    assert v.line == _line_of(text, "&As[k][rowBase + 4]") and "index of this read of As" in v.hint


@pytest.mark.parametrize("edits, says, number, shows", [
    ((("    if (more) load_tiles((t + 1) * BK);\n", ""),
      ("      store_tiles((t + 1) % 2);\n", "      load_tiles((t + 1) * BK);\n      store_tiles((t + 1) % 2);\n")),
     "issued after 100 % of tile t's reads", ("reads after the loads", 0.0),
     # the schedule's line counts intervals, whatever the order in them: it says so where the verdict differs
     lambda text: "7 of 9 intervals compute while tiles load (depth 1): 7 of the 8 k-tiles of 8 computed while "
                  "the next loads; an interval counts whatever the order inside it, and in these the loads come "
                  "after 100 % of the reads"),
    ((("      store_tiles((t + 1) % 2);\n", "      __syncthreads();\n      store_tiles((t + 1) % 2);\n"),),
     "15 barriers for its 8 k-tiles", ("barriers", 15),
     lambda text: f"hint: one barrier per tile is the lesson: the barrier that block 0 passes after line "
                  f"{_line_of(text, '&Bs[s][k][colBase + 4]')} (a shared load of Bs) and before line "
                  f"{_line_of(text, 'As[s][e % BK][e / BK] = ra[i];')} (a shared store of As)"),
], ids=["loads after the math", "two barriers per tile"])
def test_09_fails_late_loads_and_a_second_barrier_with_the_schedules_numbers(tmp_path, edits, says, number, shows):
    path, text = _edited(tmp_path, "09", *edits)
    v = write_it.check("09", path)
    assert v.failed_step == "lesson" and says in v.cause, str(v)
    assert v.numbers[number[0]] == number[1] and v.numbers["depth"] == 1
    assert shows(text) in str(v)


def test_09_a_barrier_between_the_loads_and_the_math_is_named_and_every_interval_shown(tmp_path):
    """The loads of tile t+1 come before the math, but a barrier between them leaves no interval that computes
    while a tile loads: the hint is the lesson's one barrier per tile, at the extra barrier's place."""
    path, text = _edited(tmp_path, "09", ("    if (more) load_tiles((t + 1) * BK);\n",
                                          "    if (more) load_tiles((t + 1) * BK);\n    __syncthreads();\n"))
    v = write_it.check("09", path)
    assert v.failed_step == "lesson" and "16 barriers for its 8 k-tiles (2.00 per tile)" in v.cause, str(v)
    assert v.hint.startswith("one barrier per tile is the lesson") and "BEFORE" not in v.hint
    assert (f"after line {_line_of(text, 'rb[i] = row < K')} (a global load of B) and before line "
            f"{_line_of(text, '&As[s][k][rowBase]')} (a shared load of As)") in v.hint
    n = v.numbers
    assert (n["barriers"], n["barriers that order nothing"], n["depth"]) == (16, 8, 0)
    # 16 barriers make 17 intervals: the table shows each, the empty 15th (the last pass loads nothing) too
    lesson = next(s for s in v.steps if s.name == "lesson").lines
    assert [int(ln.split()[0]) for ln in lesson if re.match(r"\s+\d+  ", ln)] == list(range(17))
    assert any(ln.startswith("0 of 17 intervals") for ln in lesson)


FP32_10 = (
    ("  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;\n  wmma::fill_fragment(acc, 0.0f);\n",
     "  float acc[8] = {};\n"),
    ("    wmma::mma_sync(acc, a, b, acc);\n",
     "    for (int k = 0; k < BK; ++k)\n      for (int j = 0; j < 8; ++j)\n"
     "        acc[j] += As[warpRow * 16 + lane / 2][k] * Bs[k][warpCol * 16 + lane % 2 * 8 + j];\n"),
    ("  wmma::store_matrix_sync(&Cs[warp][0][0], acc, 16, wmma::mem_row_major);\n",
     "  for (int j = 0; j < 8; ++j) Cs[warp][lane / 2][lane % 2 * 8 + j] = acc[j];\n"),
)


def test_a_correct_fp32_10_without_wmma_fails_the_tensor_core_lesson(tmp_path):
    path, _ = _edited(tmp_path, "10", *FP32_10)
    v = write_it.check("10", path)
    assert v.failed_step == "lesson" and "no tensor-core instruction" in v.cause, str(v)
    assert v.numbers["mma instructions in PTX"] == 0 and "mma_sync" in v.hint


@pytest.mark.slow
def test_10_reading_the_staging_tile_without_syncwarp_is_a_race_the_hint_fixes_with_syncwarp(tmp_path):
    """Every race is between lanes of one warp, on its own Cs[warp]: a __syncwarp() is missing, at the two lines
    the race names, not a __syncthreads() at the end of the loop."""
    path, text = _edited(tmp_path, "10", ("  __syncwarp();\n", ""))
    v = write_it.check("10", path)
    assert v.failed_step == "safe" and "race on Cs" in v.cause and "a lane of the same warp" in v.cause, str(v)
    store, read = _line_of(text, "wmma::store_matrix_sync(&Cs"), _line_of(text, "alpha * Cs[warp][r][c0 + j]")
    assert v.line == read
    assert v.hint.startswith(f"a __syncwarp() is missing between the lanes' writes of Cs at line {store}")
    assert f"their reads of it at line {read}" in v.hint and f"after line {store} and before line {read}" in v.hint
    assert "__syncthreads() is missing" not in v.hint and "end of the loop" not in v.hint


@pytest.mark.slow
def test_10_without_the_barrier_before_the_fragment_loads_still_asks_for_syncthreads(tmp_path):
    path, _ = _edited(tmp_path, "10", ("    __syncthreads();  // the tiles are complete before anyone reads them\n", ""))
    v = write_it.check("10", path)
    assert v.failed_step == "safe" and "race on" in v.cause and "a lane of the same warp" not in v.cause, str(v)
    assert v.hint.startswith("a __syncthreads() is missing between them") and "__syncwarp" not in v.hint


@pytest.mark.slow
def test_10_a_wrong_ldm_for_b_is_wrong_inside_the_matrices_not_at_the_edges(tmp_path):
    """B's fragment loaded with A's row length (BK) is wrong on every shape: the hint says the interior is wrong
    (the shape that is a multiple of the tile fails too) and names wmma's likely causes, not the edges."""
    path, _ = _edited(tmp_path, "10", ("wmma::load_matrix_sync(b, &Bs[0][warpCol * 16], BN);",
                                       "wmma::load_matrix_sync(b, &Bs[0][warpCol * 16], BK);"))
    v = write_it.check("10", path)
    assert v.failed_step == "correct" and "wrong result on primes" in v.cause, str(v)
    assert "not a multiple of the tile" not in v.hint and "must be 0" not in v.hint
    assert v.hint.startswith("not only the edges: 64x96x48, a multiple of the tile") and "is wrong too" in v.hint
    assert all(w in v.hint for w in ("ldm", "row length of the array in shared memory", "row_major"))


@pytest.mark.slow
def test_10_a_result_wrong_only_where_a_tile_reaches_past_k_gets_the_edge_hint(tmp_path):
    """Tiles padded with 1 instead of 0 past K (from the second k-tile on, so that 1x1x1 passes): every element
    is wrong on the odd shapes, but the shape that is a multiple of the tile passes: the edge (K) is the cause,
    not an index."""
    path, _ = _edited(tmp_path, "10", ("A[(blockRow + r) * K + k0 + c] : 0.0f", "A[(blockRow + r) * K + k0 + c] : k0 > 0"),
                      ("B[(k0 + r) * N + blockCol + c] : 0.0f", "B[(k0 + r) * N + blockCol + c] : k0 > 0"))
    v = write_it.check("10", path)
    assert v.failed_step == "correct" and "wrong result on primes" in v.cause, str(v)
    assert v.hint.startswith("the shapes before it pass, and so does 64x96x48, a multiple of the tile: 31x37x41 is "
                             "not a multiple of the tile") and "every element is wrong: look at K" in v.hint


def test_shared_words_are_traced_back_to_the_elements_copied_into_them():
    """A shared word's element, from the store that follows its load: exercise 10's 2 floats of A per thread."""
    ex = write_it.exercise("10")
    s = verify.Shape("t", 32, 32, 8)
    A, B, C = verify.random_operands(s, np.random.default_rng(0))
    t = trace.capture(ex.solution_path, ex.kernel, (1, 1, 1), ex.launch.block,
                      launch_args(32, 32, 8, s.alpha, A, B, s.beta, C), (0,))
    src = footprints.shared_sources(t, 0)
    As = next(v for v in t.shared_variables if v.name == "As")
    # As[r][c] holds A[r][c]: word r * 8 + c of the array, element r * K + c of A (K = 8)
    assert all(src[(1, As.offset // 4 + w)] == ("A", w) for w in range(32 * 8))
    assert stage10.fragment_loads(t) == {w: {"A": 1, "B": 1} for w in range(4)}

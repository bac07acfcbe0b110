"""What the learner's mapping of threads to results costs, judged in exercises 04-06
(helpers/course/write_it/mapping.py), with the kernels of a cold try (tests/kernels/write_it_0*.cu): 04's warp
across rows fails at its As line (an 8-way conflict, C stored in twice the sectors); 05's block of neighbours (made
from the spread tile by its two mapping lines) and spread tile both pass, each told what it costs beside the course's kernel; 06 from the spread 05, unchanged,
passes and is told that the padding removes a conflict its mapping never had. The course's costs the rule
compares with are what the course's kernels measure. And the race check traces a first, a middle (inside) and a
last block (at both edges) of every exercise."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.core.paths import ROOT
from helpers.course import write_it
from helpers.course.write_it import compare, diagnose, mapping, stage04, stage05, stage06
from helpers.measure import memory, trace, verify
from helpers.run import cpu_backend

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]

KERNELS = ROOT / "tests" / "kernels"


def _lesson(v) -> str:
    return "\n".join(next(s for s in v.steps if s.name == "lesson").lines)


# 05's spread tile with a thread's 4 x 4 results made a block of neighbours, as the course's 05_2d_thread_tiling maps
# them (the cold try's other kernel: its loads of As and Bs conflict 2-way, its stores of C touch 16 sectors)
NEIGHBOURS = (("return t / 16 + 16 * i;", "return (t / 16) * TM + i;"), ("return t % 16 + 16 * j;", "return (t % 16) * TN + j;"))


def _edited(text: str, edits) -> str:
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def _blocks_of_neighbours(tmp_path):
    path = tmp_path / "write_it_05_blocks_of_neighbours.cu"
    path.write_text(_edited((KERNELS / "write_it_05_spread_tile.cu").read_text(), NEIGHBOURS))
    return path


def _line_of(path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.slow
def test_04_a_warp_across_rows_fails_the_lesson_at_its_as_line_with_what_it_costs():
    path = KERNELS / "write_it_04_warp_across_rows.cu"
    v = write_it.check("04", path)
    assert v.status == "failed" and v.failed_step == "lesson", str(v)      # its TODO blocks are written
    assert v.line == _line_of(path, "acc[i] += As[firstRow + i][k] * b;")
    assert v.cause.startswith("line %d: a warp's load of As costs 8 wavefronts per request where 1 would do, an 8-way "
                              "bank conflict (lanes 0, 8, 16, 24 -> word 0 (bank 0);" % v.line)
    assert "8 times what the course's 04_1d_thread_tiling pays there (1)" in v.cause
    assert "the stores of C at line" in v.cause and "(8 sectors where 4 would do)" in v.cause
    assert v.numbers["As load wavefronts per request"] == 8 and v.numbers["C store sectors per request"] == 8
    assert v.numbers["Bs load wavefronts per request"] == 1 and v.numbers["multiply-adds per shared load"] == 8 / 9
    assert "neighbouring columns of C" in v.hint and "[" not in v.hint and "=" not in v.hint   # words, no code
    assert "loads of As: 8 wavefronts per warp request, where 1 would do (an 8-way bank conflict); the course's " \
           "04_1d_thread_tiling: 1" in "\n".join(v.steps[-1].lines)


@pytest.mark.slow
def test_05_both_mappings_pass_and_each_is_told_what_it_costs_beside_the_course(tmp_path):
    contiguous = write_it.check("05", _blocks_of_neighbours(tmp_path))
    spread = write_it.check("05", KERNELS / "write_it_05_spread_tile.cu")
    assert contiguous.ok and spread.ok, (str(contiguous), str(spread))
    a, b = _lesson(contiguous), _lesson(spread)
    assert "loads of As: 2 wavefronts per warp request, where 1 would do (a 2-way bank conflict); as in " \
           "05_2d_thread_tiling (stage 06 removes this conflict)" in a
    assert "loads of Bs: 2 wavefronts per warp request, where 1 would do (a 2-way bank conflict)" in a
    assert "stores of C: 16 sectors per warp request, where 4 would do (not coalesced); as in 05_2d_thread_tiling" in a
    assert "loads of As: 1 wavefront per warp request, the conflict-free minimum; the course's 05_2d_thread_tiling: 2" in b
    assert "stores of C: 4 sectors per warp request, as few as its bytes need; the course's 05_2d_thread_tiling: 16" in b
    assert "spread, not a block" not in b and "side_by_side" not in b        # the old note, which pointed the wrong way
    assert contiguous.numbers["C store sectors per request"] == 16 and spread.numbers["C store sectors per request"] == 4


@pytest.mark.slow
def test_05_a_mapping_twice_as_wasteful_as_the_course_fails(tmp_path):
    # thread rows along threadIdx: a warp's 16 thread rows read rows of As 4 apart, 32 words: a 16-way conflict
    text = _edited(_blocks_of_neighbours(tmp_path).read_text(),
                   (("return (t / 16) * TM + i;", "return (t % 16) * TM + i;"),
                    ("return (t % 16) * TN + j;", "return (t / 16) * TN + j;")))
    path = tmp_path / "05_rows_along_threads.cu"
    path.write_text(text)
    v = write_it.check("05", path)
    assert v.status == "failed" and v.failed_step == "lesson", str(v)
    assert v.line == _line_of(path, "a[i] = As[rowOf(i)][k];")
    assert "load of As costs 16 wavefronts per request where 1 would do, a 16-way bank conflict" in v.cause
    assert "8 times what the course's 05_2d_thread_tiling pays there (2)" in v.cause


@pytest.mark.slow
def test_06_an_unchanged_spread_05_passes_and_says_why(tmp_path):
    # the spread 05 as %%kernel 06 --from-mine hands it on: renamed for 06, As not padded, nothing else changed
    unpadded = tmp_path / "06_spread_tile_unpadded.cu"
    unpadded.write_text((KERNELS / "write_it_05_spread_tile.cu").read_text().replace("sgemm_2d(", "sgemm_conflict_free("))
    v = write_it.check("06", unpadded)
    assert v.ok, str(v)
    lesson = _lesson(v)
    assert "your layout of A's tile in As: row by row, rows 8 words apart (not padded" in lesson
    assert ("your As is laid out as exercise 05 lays it out (row by row, not padded), and its loads are conflict-free "
            "all the same: your mapping of threads to results has a warp read 2 words of As at a time, in 2 different "
            "banks (warp 0, line 55: lanes 0-15 -> word 0 (bank 0); lanes 16-31 -> word 8 (bank 8))") in lesson
    assert "removes a conflict your mapping never had" in lesson and "05_2d_thread_tiling" in lesson
    assert "side_by_side('05')" not in str(v) and v.numbers["As layout"] == "as 05"


@pytest.mark.slow
def test_06_a_padded_or_swizzled_layout_is_not_told_it_had_no_conflict():
    v = write_it.check("06", write_it.exercise("06").solution_path)
    assert v.ok and v.numbers["As layout"] == "padded" and "never had" not in str(v), str(v)


@pytest.mark.slow
@pytest.mark.parametrize("stage", [stage04, stage05, stage06], ids=["04", "05", "06"])
def test_the_course_costs_the_rule_compares_with_are_what_the_course_kernels_measure(stage):
    """Every access of the course's kernel at the exercise's tiles wastes what stageNN.COURSE says, and nothing
    else wastes; the course's kernel passes its own lesson."""
    ex = stage.EXERCISE
    variant, config = compare.course_variant(ex)
    assert variant.name == stage.COURSE.kernel
    tr = trace.capture_variant(variant, config, *ex.lesson_size, blocks=(0,))
    found = mapping.measure(tr, *ex.lesson_size)
    assert {a.array for a in found} >= {"A", "B", "As", "Bs", "C"}
    for a in found:
        assert a.waste == pytest.approx(stage.COURSE.of(a)), (a, stage.COURSE)
    assert ex.lesson(tr, *ex.lesson_size).ok


def test_every_exercise_traces_races_in_a_first_an_inside_and_a_last_block_at_both_edges():
    for ex in write_it.exercises():
        M, N, K = ex.race_size
        cols, rows = ex.launch.per_block
        gx, gy, _ = ex.launch.grid(M, N, K)
        assert gx >= 3 and gy >= 3, (ex.id, ex.race_size)
        assert M % rows and N % cols and K % 16, (ex.id, ex.race_size)      # the last block is partial both ways
        first, middle, last = trace.sample_blocks((gx, gy, 1))
        mx, my = middle % gx, middle // gx
        assert first == 0 and last == gx * gy - 1 and 0 < mx < gx - 1 and 0 < my < gy - 1, ex.id
    assert write_it.exercise("04").race_size == (131, 137, 53)


def test_the_safe_step_names_the_blocks_it_traced_and_where_they_lie():
    v = write_it.check("05", KERNELS / "write_it_05_spread_tile.cu")
    safe = next(s for s in v.steps if s.name == "safe")
    assert ("no race and no read of unwritten shared memory in blocks 0, 4, 8 (the first, a middle and the last of "
            "its 3 × 3 blocks) of a 131 × 137 × 53 launch") in safe.lines


def test_a_todo_block_written_below_the_blank_line_the_starter_leaves_is_written():
    starter = write_it.exercise("04").starter_path.read_text()
    probe = (KERNELS / "write_it_04_warp_across_rows.cu").read_text()
    assert diagnose.todo_lines(probe, starter) == ()
    assert len(diagnose.todo_lines(starter, starter)) == 2


def test_the_mapping_counts_what_memory_per_line_counts_request_by_request():
    """mapping.measure counts each pattern of a shared request once (a shift by whole words changes no conflict):
    its wavefronts and ways per line are those of helpers.measure.memory.per_line, which counts every request."""
    ex = write_it.exercise("04")
    s = verify.Shape("trace", *ex.lesson_size)
    A, B, C = verify.random_operands(s, np.random.default_rng(0))
    call = ex.launches(*ex.lesson_size, s.alpha, A, B, s.beta, C, cpu_backend)[0]
    tr = trace.capture(KERNELS / "write_it_04_warp_across_rows.cu", call.kernel, call.grid, call.block, call.args, (0,))
    df = memory.per_line(tr)
    df = df[(df["space"] == "global") | (df["op"] == "load")]     # the copies' stores to shared memory are not judged
    found = mapping.measure(tr, *ex.lesson_size)
    assert len(found) == len(df) == 6
    for a in found:
        row = df[(df["line"] == a.line) & (df["op"] == a.op) & (df["array"] == a.array)].iloc[0]
        if a.space == "shared":
            assert (a.cost, a.ideal, a.ways) == (row["wavefronts"] / row["requests"],
                                                 row["ideal wavefronts"] / row["requests"], row["max ways"])
        else:
            assert (a.cost, a.ideal) == (row["sectors"] / row["requests"], row["ideal sectors"] / row["requests"])

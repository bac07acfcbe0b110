"""Stages 08 and 09: the exercise checkers (right answers computed from traces, specific messages
for specific wrong ones, clear messages for malformed input) and the schedule read from traces."""

import pytest

from helpers.course import exercises
from helpers.course.exercises import stage09
from helpers.measure import pipeline
from helpers.core import stages

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("answer, ok, says", [
    ((4, 8), True, "4 warp tiles"),
    ((128, 8), False, "number of threads"),
    ((2, 8), False, "how many fit"),
    ((4, 4), False, "WN / TN"),
    ((4, 32), False, "all the lanes"),
    (("?", "?"), False, "placeholders"),
    ("eight", False, "two whole numbers"),
])
def test_exercise_08_1(answer, ok, says):
    f = exercises.check_08_exercise_1(answer)
    assert f.ok is ok and says in f.message, f.message


@pytest.mark.parametrize("answer, ok, says", [
    (16896, True, "16896 bytes"),
    (16384, False, "padded by 4"),
    (4224, False, "or the bytes at the starter's BK = 8"),
    (8448, False, "BK is 32"),
    ("?", False, "placeholder"),
    ("lots", False, "whole number"),
])
def test_exercise_08_2(answer, ok, says):
    f = exercises.check_08_exercise_2(answer)
    assert f.ok is ok and says in f.message, f.message


@pytest.mark.parametrize("answer, ok, says", [
    (37248, True, "37248 bytes"),
    (12416, False, "one stage"),
    (24832, False, "two buffers"),
    (36864, False, "padding"),
    (9312, False, "number of floats"),
    ("?", False, "placeholder"),
])
def test_exercise_09_1(answer, ok, says):
    f = exercises.check_09_exercise_1(answer)
    assert f.ok is ok and says in f.message, f.message


@pytest.mark.parametrize("answer, ok, says", [
    (9, True, "9 of 11"),
    (0, False, "stage 08"),
    (10, False, "no next tile"),
    (11, False, "first interval only loads"),
    (3, False, "count the intervals"),
])
def test_exercise_09_2(answer, ok, says):
    f = exercises.check_09_exercise_2(answer)
    assert f.ok is ok and says in f.message, f.message


@pytest.mark.slow
def test_exercise_09_3_the_race_check_names_the_lines_of_the_missing_barrier():
    races = exercises.broken_double_buffering_races()
    assert races
    write, read = races[0].first[1], races[0].second[1]
    text = stages.variant("09_double_buffering").path.read_text().splitlines()
    assert "store" in text[write - 1] or "As[" in text[write - 1] or "Bs[" in text[write - 1]
    assert exercises.check_09_exercise_3((write, read)).ok
    assert "swapped" in exercises.check_09_exercise_3((read, write)).message
    assert not exercises.check_09_exercise_3((1, 2)).ok


def test_the_learners_kernel_file_is_not_touched_by_the_broken_copy():
    before = stages.variant("09_double_buffering").path.read_text()
    path = exercises.broken_double_buffering()
    assert path != stages.variant("09_double_buffering").path and stage09.EX09_3_BARRIER not in path.read_text()
    assert stages.variant("09_double_buffering").path.read_text() == before


def test_schedules_read_from_the_kernels():
    tiles = 6
    s08 = pipeline.kernel_schedule(stages.variant("08_warp_tiling"), tiles=tiles)
    s09 = pipeline.kernel_schedule(stages.variant("09_double_buffering"), tiles=tiles)
    overlap = lambda s: sum(1 for i in s.intervals if i.computed and (i.loading or i.in_flight))  # noqa: E731
    assert overlap(s08) == 0 and overlap(s09) == tiles - 1
    assert sorted(t for i in s08.intervals for t in i.computed) == list(range(tiles))
    v = stages.variant("09_async_copy")
    three = v.config(BM=128, BN=128, WM=32, WN=64, TN=8, STAGES=3, MIN_BLOCKS=2)
    s = pipeline.kernel_schedule(v, three, tiles=tiles)
    assert max(len(i.loading) + len(i.in_flight) for i in s.intervals if i.computed) == 2   # STAGES - 1 ahead

"""Every checker reads any answer a learner (or a hostile notebook) can write and never raises: infinite, NaN and
enormous numbers get a message, and a fraction is no whole number (issue 32, item 9: `check_02_exercise_2((5.9,
13.2))` was right, because int() truncates, and 30 checkers raised OverflowError on `(1e999, 1e999)`).

The grader calls these checkers in its own process on what the student wrote (helpers/teach/grading/checkers.py):
a checker that raises turns a wrong answer into "error", one that truncates turns it into "right"."""

import inspect
import math

import pytest

from helpers.course import exercises
from helpers.course.exercises import feedback

pytestmark = pytest.mark.emulator      # a checker whose parse passes reads a trace of its kernel

HOSTILE = [math.inf, -math.inf, math.nan, 10 ** 400, -10 ** 400, "1e999", "nan", (math.inf, math.inf),
           (1e999, 1e999, 1e999), {math.inf}, (10 ** 400, 1), (5.9, 13.2), (4.4, 8.4, 8.4), 2 ** 70, (True, 1)]


@pytest.mark.parametrize("name", exercises.CHECKERS)
def test_no_checker_raises_on_an_infinite_or_enormous_answer(name):
    check = exercises.CHECKERS[name]
    arity = len(inspect.signature(check).parameters)
    for value in HOSTILE:
        fb = check(*([value] * arity))
        assert isinstance(fb, feedback.Feedback), (name, value)
        assert not fb.ok or not any(isinstance(v, float) and not math.isfinite(v)
                                    for v in (value if isinstance(value, tuple) else (value,))), (name, value, fb)


def test_a_fraction_is_not_a_whole_number():
    assert exercises.check_02_exercise_2((5, 13)).ok
    for fraction in ((5.9, 13.2), (5.0001, 13), (5, 12.9999), ("5.5", 13)):
        fb = exercises.check_02_exercise_2(fraction)
        assert not fb.ok and "whole number" in fb.message, (fraction, fb)
    assert exercises.check_02_exercise_2((5.0, 13.0)).ok and exercises.check_02_exercise_2(("5", " 13")).ok
    for read, value, want in ((feedback.whole, 7.0, 7), (feedback.whole, "8", 8), (feedback.number, "2.5", 2.5)):
        assert read(value) == want
    for bad in (7.5, math.inf, math.nan, 1e999, "x", None, True, "1e400", "5.5"):
        with pytest.raises(ValueError):
            feedback.whole(bad)
    with pytest.raises(ValueError, match="too large"):
        feedback.number(10 ** 400)


@pytest.mark.slow
@pytest.mark.parametrize("name", exercises.CHECKERS)
def test_a_right_whole_answer_plus_a_fraction_is_wrong(name):
    """Each whole number of the solution moved by 0.4 (or replaced by infinity): never right."""
    from helpers.course.exercises import solutions

    def moved(v, by):
        if isinstance(v, bool) or not isinstance(v, (int, tuple, list, set, frozenset)):
            return v
        if isinstance(v, int):
            return by(v)
        return type(v)(moved(x, by) for x in v)
    args = solutions.solution(name)
    for by in (lambda v: v + 0.4, lambda v: math.inf, lambda v: 10 ** 400):
        changed = moved(args, by)
        if changed != args:
            fb = exercises.CHECKERS[name](*changed)
            assert isinstance(fb, feedback.Feedback) and not fb.ok, (name, changed, fb)

"""The exercises of every stage, each checked by a function the notebook calls:
`check_05_exercise_1(answer)` returns Feedback, right or what is wrong with this answer.

One module per stage (stage01 ... stage11; stage 00 has none) holds the stage's checkers and
SOLUTIONS, {checker: a function returning the arguments that make it say "Correct"}, computed the
way the checker computes its answer (from traces of the kernel files, the course's models, the
committed measurements, this machine's caches for stage 01), so an edited kernel gets answers that
fit the edit. The solutions never appear in the notebooks: the teacher kit reads them from here.
This package collects both registries in stage order and re-exports every checker, so a notebook
does `from helpers.course.exercises import check_02_exercise_1`.
"""

from __future__ import annotations

import re
from typing import Callable

from helpers.course.exercises import (stage01, stage02, stage03, stage04, stage05, stage06, stage07, stage08,
                                      stage09, stage10, stage11, stage12)
from helpers.course.exercises.feedback import Feedback, is_placeholder
from helpers.course.exercises.stage01 import check_01_exercise_1, check_01_exercise_2, check_01_exercise_3
from helpers.course.exercises.stage02 import (check_02_exercise_1, check_02_exercise_2, check_02_exercise_3,
                                              check_02_exercise_4, check_02_prediction)
from helpers.course.exercises.stage03 import check_03_exercise_1, check_03_exercise_2, check_03_prediction
from helpers.course.exercises.stage04 import check_04_exercise_1, check_04_exercise_2, check_04_prediction
from helpers.course.exercises.stage05 import check_05_exercise_1, check_05_exercise_2, check_05_prediction
from helpers.course.exercises.stage06 import check_06_exercise_1, check_06_exercise_2, check_06_prediction
from helpers.course.exercises.stage07 import (check_07_exercise_1, check_07_exercise_2, check_07_exercise_3,
                                              check_07_prediction)
from helpers.course.exercises.stage08 import check_08_exercise_1, check_08_exercise_2, check_08_prediction
from helpers.course.exercises.stage09 import (broken_double_buffering, broken_double_buffering_races,
                                              check_09_exercise_1, check_09_exercise_2, check_09_exercise_3,
                                              check_09_prediction)
from helpers.course.exercises.stage10 import (check_10_exercise_1, check_10_exercise_2, check_10_exercise_3,
                                              check_10_exercise_4, check_10_prediction)
from helpers.course.exercises.stage11 import (EX11_1_RANGES, EX11_2_CONFIGS, check_11_exercise_1,
                                              check_11_exercise_2, check_11_exercise_3, check_11_exercise_5)
from helpers.course.exercises.stage12 import check_12_exercise_1, check_12_exercise_2, check_12_prediction

__all__ = [
    "CHECKERS", "CHECKER_NAME", "SOLUTIONS", "STAGE_MODULES", "Feedback", "is_placeholder", "solution",
    # what notebooks 09 and 11 use beside their checkers
    "broken_double_buffering", "broken_double_buffering_races", "EX11_1_RANGES", "EX11_2_CONFIGS",
    "check_01_exercise_1", "check_01_exercise_2", "check_01_exercise_3",
    "check_02_exercise_1", "check_02_exercise_2", "check_02_exercise_3", "check_02_exercise_4", "check_02_prediction",
    "check_03_exercise_1", "check_03_exercise_2", "check_03_prediction",
    "check_04_exercise_1", "check_04_exercise_2", "check_04_prediction",
    "check_05_exercise_1", "check_05_exercise_2", "check_05_prediction",
    "check_06_exercise_1", "check_06_exercise_2", "check_06_prediction",
    "check_07_exercise_1", "check_07_exercise_2", "check_07_exercise_3", "check_07_prediction",
    "check_08_exercise_1", "check_08_exercise_2", "check_08_prediction",
    "check_09_exercise_1", "check_09_exercise_2", "check_09_exercise_3", "check_09_prediction",
    "check_10_exercise_1", "check_10_exercise_2", "check_10_exercise_3", "check_10_exercise_4", "check_10_prediction",
    "check_11_exercise_1", "check_11_exercise_2", "check_11_exercise_3", "check_11_exercise_5",
    "check_12_prediction", "check_12_exercise_1", "check_12_exercise_2",
]

STAGE_MODULES = (stage01, stage02, stage03, stage04, stage05, stage06, stage07, stage08, stage09, stage10, stage11,
                 stage12)
# groups: the stage, the exercise (None for a stage's prediction, check_05_prediction)
CHECKER_NAME = re.compile(r"check_(\d\d)_(?:exercise_(\d+)|prediction)$")

# checker name -> the arguments that make it say "Correct" (call it: some read traces or this machine)
SOLUTIONS: dict[str, Callable[[], tuple]] = {
    check.__name__: solve for module in STAGE_MODULES for check, solve in module.SOLUTIONS.items()}
# checker name -> the checker, in stage order
CHECKERS: dict[str, Callable] = {check.__name__: check for module in STAGE_MODULES for check in module.SOLUTIONS}


def solution(check_name: str) -> tuple:
    """The arguments that make `check_name` say "Correct". KeyError if there is none."""
    if check_name not in SOLUTIONS:
        m = CHECKER_NAME.match(check_name)
        where = f"stage{m.group(1)}.py" if m else "its stage's module"
        raise KeyError(f"no solution for {check_name}: add it to SOLUTIONS in helpers/course/exercises/{where}, "
                       f"computed the way the checker computes its answer.")
    return SOLUTIONS[check_name]()

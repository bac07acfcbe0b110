"""The exercises of every stage, each checked by a function the notebook calls:
`check_05_exercise_1(answer)` returns Feedback, right or what is wrong with this answer.

One module per stage (stage01 ... stage12; stage 00 has none) holds the stage's checkers. This package
collects them in stage order (CHECKERS) and re-exports every one, so a notebook does
`from helpers.course.exercises import check_02_exercise_1`. The solutions never appear in the notebooks,
nor here: they live in the folder solutions/ (its __init__.py), which the teacher kit reads and the
grader's sandbox leaves out.
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
    "CHECKERS", "CHECKER_NAME", "STAGE_MODULES", "Feedback", "is_placeholder",
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

# checker name -> the checker, in stage order
CHECKERS: dict[str, Callable] = {
    name: f for module in STAGE_MODULES for name, f in sorted(vars(module).items())
    if CHECKER_NAME.match(name) and callable(f) and getattr(f, "__module__", None) == module.__name__}

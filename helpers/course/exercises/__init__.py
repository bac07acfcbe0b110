"""The exercises of every stage: one module per stage, each with its checkers and their solutions."""

from helpers.course.exercises.common import *  # noqa: F401,F403  (split per stage next)
from helpers.course.exercises.stage01 import check_01_exercise_1, check_01_exercise_2, check_01_exercise_3  # noqa: F401

"""The exercises, found by their modules' names: every stageNN.py (or stageNNx.py) of this package
defines EXERCISE; adding a module adds the exercise (the package docstring says how)."""

from __future__ import annotations

import importlib
import pkgutil
import re

from helpers.core.errors import CourseError
from helpers.course.write_it.exercise import HERE, Exercise

MODULE_NAME = re.compile(r"stage\d\d[a-z]?$")


class ExerciseError(CourseError, LookupError):
    """No exercise of that id, no saved kernel for it, or no solution in this copy of the course."""


def _found() -> dict[str, Exercise]:
    found: dict[str, Exercise] = {}
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda i: i.name):
        if not MODULE_NAME.match(info.name):
            continue
        ex = importlib.import_module(f"helpers.course.write_it.{info.name}").EXERCISE
        if ex.id in found:
            raise CourseError(f"two exercises have the id {ex.id!r} (helpers/course/write_it/{info.name}.py and "
                              f"another); ids must be unique.")
        found[ex.id] = ex
    return found


EXERCISES: dict[str, Exercise] = _found()


def exercise(exercise_id) -> Exercise:
    """The exercise of this id ("03"; 3 works too)."""
    key = str(exercise_id).strip()
    key = key.zfill(2) if key.isdigit() else key
    if key not in EXERCISES:
        raise ExerciseError(f"there is no exercise {exercise_id!r}. The exercises are "
                            f"{', '.join(EXERCISES)} (python -m helpers exercise list).")
    return EXERCISES[key]


def exercises() -> list[Exercise]:
    return list(EXERCISES.values())

"""Points for a grade: a table per stage (the defaults the course ships, then a teacher's file on top), and the
score of a notebook's grade (Grade.as_dict(), helpers/teach/grading/results.py) under it.

- A checker's exercise (`check_05_exercise_1`) earns its points when it is right. A prediction
  (`check_05_prediction`) is a guess asked before a measurement: 0 points by default, its feedback shown.
- A write-it exercise (`kernel 05`, a `%%kernel 05` cell) earns partial credit, per step of its check
  (helpers/course/write_it/verdict.py STEPS) that passed: compiles, correct, safe, lesson; timing only where a GPU
  grades it (without one, the timing step is not run and its points are out of the maximum). A kernel cell left
  on its starter or empty ("not attempted") or whose check failed to run ("error") earns nothing, whatever
  steps the starter passes.

The teacher's file is TOML (`python -m helpers teacher points FILE` writes the defaults to edit): a table per
stage, a number per exercise, a table of numbers per kernel step. What it leaves out keeps its default.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from helpers.course import exercises, write_it
from helpers.course.write_it.verdict import STEPS

EXERCISE, PREDICTION = 1.0, 0.0
KERNEL_STEPS = {"contract": 0.0, "compiles": 1.0, "correct": 4.0, "safe": 2.0, "lesson": 3.0, "timing": 0.0}
GPU_ONLY = ("timing",)          # steps the CPU emulator does not run


def defaults() -> dict[str, dict]:
    """{stage: {exercise: points, "kernel NN": {step: points}}}: what the course ships."""
    table: dict[str, dict] = {}
    for name in exercises.CHECKERS:
        m = exercises.CHECKER_NAME.match(name)
        table.setdefault(m.group(1), {})[name] = PREDICTION if name.endswith("_prediction") else EXERCISE
    for ex in write_it.exercises():
        table.setdefault(ex.stage, {})[f"kernel {ex.id}"] = dict(KERNEL_STEPS)
    return {stage: table[stage] for stage in sorted(table)}


def load(path: Path | None = None) -> dict[str, dict]:
    """The defaults with a teacher's TOML file on top (None: the defaults). A value that is not a number, a step
    the check does not have, or a negative number is refused, naming it."""
    table = defaults()
    if path is None:
        return table
    try:
        given = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path}: not a points file ({type(e).__name__}: {e})") from None
    for stage, entries in given.items():
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: [{stage}] should be a table of exercises and their points")
        for name, value in entries.items():
            where = f"{path}: [\"{stage}\"] {name}"
            if isinstance(value, dict):
                unknown = set(value) - set(STEPS)
                if unknown or not name.startswith("kernel "):
                    raise ValueError(f"{where}: a kernel exercise's steps are {', '.join(STEPS)}"
                                     + (f", not {', '.join(sorted(unknown))}" if unknown else ""))
                steps = dict(table.get(stage, {}).get(name) or KERNEL_STEPS)
                steps.update({k: _points(v, f"{where}.{k}") for k, v in value.items()})
                table.setdefault(stage, {})[name] = steps
            else:
                table.setdefault(stage, {})[name] = _points(value, where)
    return table


def _points(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise ValueError(f"{where} = {value!r}: points are a number, 0 or more")
    return float(value)


def as_toml(table: dict[str, dict]) -> str:
    """The table as the TOML file a teacher edits."""
    out = ["# Points per exercise, per stage (python -m helpers teacher points writes this file; docs/grading.md).",
           "# A checker's exercise earns its points when right; a prediction is a guess (0 by default).",
           "# A kernel exercise earns the points of each step of its check that passed; timing runs only on a GPU",
           "# (without one its points are left out of the maximum). Leave an entry out to keep its default.", ""]
    for stage, entries in table.items():
        out.append(f'["{stage}"]')
        out += [f'{name} = {number(v)}' for name, v in entries.items() if not isinstance(v, dict)]
        for name, steps in entries.items():
            if isinstance(steps, dict):
                out.append(f'"{name}" = {{ ' + ", ".join(f"{k} = {number(v)}" for k, v in steps.items()) + " }")
        out.append("")
    return "\n".join(out)


def number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


@dataclasses.dataclass
class Scored:
    name: str             # what the LMS shows: "02 · exercise 1" or "02 · write it: %%kernel 02"
    check: str            # the grade's check: check_02_exercise_1, kernel 02
    status: str
    score: float
    max_score: float
    output: str


def score(grade: dict, table: dict[str, dict], gpu: bool = False) -> list[Scored]:
    """Each exercise of one notebook's grade, scored: what an LMS's results file lists as its tests."""
    stage = grade.get("stage") or "?"
    entries = table.get(stage, {})
    scored = []
    for e in grade.get("exercises", []):
        check, status, message = str(e.get("check")), str(e.get("status")), str(e.get("message"))
        points = entries.get(check, KERNEL_STEPS if check.startswith("kernel ") else EXERCISE)
        if isinstance(points, dict):
            scored.append(_kernel(stage, check, status, message, e.get("steps") or [], points, gpu))
        else:
            label = f"exercise {e['exercise']}" if isinstance(e.get("exercise"), int) else check.removeprefix(
                f"check_{stage}_")
            scored.append(Scored(f"{stage} · {label}", check, status, points if status == "right" else 0.0, points,
                                 f"{status}: {message}"))
    return scored


def _kernel(stage: str, check: str, status: str, message: str, steps: list, points: dict, gpu: bool) -> Scored:
    ran = {str(s.get("step")): s.get("ok") for s in steps if isinstance(s, dict)}
    counted = {k: v for k, v in points.items() if v > 0 and (gpu or k not in GPU_ONLY)}
    earned = {k: v for k, v in counted.items() if status in ("right", "wrong") and ran.get(k) is True}
    lines = [f"{status}: {message}", "", "points per step of the check:"]
    for k, v in points.items():
        if v <= 0:
            continue
        if k not in counted:
            lines.append(f"  {k:<9} not run without a GPU: its {number(v)} left out of the maximum")
        else:
            mark = ("passed" if ran.get(k) is True else "failed" if ran.get(k) is False else "not reached")
            lines.append(f"  {k:<9} {mark:<12} {number(earned.get(k, 0))} of {number(v)}")
    if status not in ("right", "wrong"):
        lines.append(f"  ({status}: no step earns points)")
    return Scored(f"{stage} · write it: %%{check}", check, status, sum(earned.values()), sum(counted.values()),
                  "\n".join(lines))


def total(scored: list[Scored]) -> tuple[float, float]:
    return sum(s.score for s in scored), sum(s.max_score for s in scored)


def with_scores(grade: dict, table: dict[str, dict], gpu: bool = False) -> dict:
    """The grade's JSON with "score" and "max_score" added, per exercise and for the notebook."""
    scored = score(grade, table, gpu)
    exercises = [dict(e, score=s.score, max_score=s.max_score) for e, s in zip(grade.get("exercises", []), scored)]
    earned, most = total(scored)
    return dict(grade, exercises=exercises, score=earned, max_score=most)

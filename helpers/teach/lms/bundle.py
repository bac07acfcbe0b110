"""What every exported autograder shares: the course as it carries it, its settings (settings.json beside the
course: the stages it expects, the time limits, the points), the packages it installs, and the grading of one
submission folder.

The course goes without what a container must not hold (sandbox.HIDDEN: the solution registry, the reference
kernels, the history, a teacher's own kernels; their folders empty, as the bubblewrap sandbox shows them),
tests, tools and caches; what grades a notebook and what its cells import (helpers/, kernels/, results/,
figures/) stays, with an empty notebooks/ folder where the runs work.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from helpers.core.errors import SandboxUnavailableError
from helpers.core.paths import ROOT
from helpers.teach import container, points
from helpers.teach.grading import notebook
from helpers.teach.grading.results import ExerciseResult, Grade
from helpers.teach.sandbox import HIDDEN, Limits, Sandbox

CARRIED = ("helpers", "kernels", "results", "figures")
SKIPPED = ("__pycache__", ".pytest_cache", ".ipynb_checkpoints")
SETTINGS = "settings.json"
POINTS = "points.toml"
# requirements.txt less what only the tests and the browser need
NOT_FOR_GRADING = ("playwright", "pytest", "pytest-timeout", "pytest-xdist", "nbval", "import-linter", "jupyterlab")


@dataclasses.dataclass
class Settings:
    stages: list[str]                 # the stages of the notebooks a submission hands in
    time_limit: int = 540             # seconds per notebook, its run and its kernel cells' checks together
    cell_timeout: int = 300
    exercises_only: bool = True       # run the setup cells and the Exercises section only (minutes instead of ...)
    backend: str = "cpu"

    @classmethod
    def read(cls, course: Path) -> "Settings":
        data = json.loads((course / SETTINGS).read_text())
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def copy_course(dest: Path) -> None:
    """The course as an autograder carries it, into dest (made)."""
    hidden = {(ROOT / h).resolve() for h in HIDDEN}

    def ignore(folder, names):
        return [n for n in names if n in SKIPPED or n.endswith(".pyc") or (Path(folder) / n).resolve() in hidden]
    dest.mkdir(parents=True, exist_ok=True)
    for top in CARRIED:
        if (ROOT / top).is_dir():
            shutil.copytree(ROOT / top, dest / top, ignore=ignore, dirs_exist_ok=True)
    for h in HIDDEN:        # empty, as the sandbox shows them: `import ...solutions` finds a package with nothing in it
        if (ROOT / h).is_dir() and (dest / h).parent.is_dir():
            (dest / h).mkdir(exist_ok=True)
    (dest / "notebooks").mkdir(exist_ok=True)
    (dest / "requirements.txt").write_text(grading_requirements())


def grading_requirements() -> str:
    keep = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        name = line.split("==")[0].split(">=")[0].strip().lower()
        if line.strip() and not line.lstrip().startswith("#") and name not in NOT_FOR_GRADING:
            keep.append(line.strip())
    return "# What grading needs (the course's requirements.txt less the tests' and the browser's)\n" + \
        "\n".join(keep) + "\n"


def write_settings(dest: Path, settings: Settings, points_file: Path | None) -> None:
    table = points.load(points_file)           # refused here, naming the entry, before anything is uploaded
    (dest / POINTS).write_text(points.as_toml({s: table[s] for s in settings.stages if s in table}))
    (dest / SETTINGS).write_text(json.dumps(dataclasses.asdict(settings), indent=1) + "\n")


def stages_of(paths: list[Path]) -> dict[str, str]:
    """{stage: the notebook's file name} of the notebooks named (stage: their title or file name), refused where
    one has none."""
    found = {}
    for p in paths:
        nb, _ = notebook.read(Path(p))
        stage = notebook.stage_of(nb, Path(p))
        if stage is None:
            raise ValueError(f"{p}: no stage (its title starts '# NN ·' or its name 'NN_')")
        found.setdefault(stage, Path(p).name)
    return dict(sorted(found.items()))


def sandbox_for_grading(settings: Settings, uid: int = container.SANDBOX_UID) -> Sandbox:
    """Container mode where the grader is root (Gradescope, PrairieLearn), else bubblewrap; never without either."""
    limits = Limits(wall_s=settings.time_limit, cpu_s=settings.time_limit)
    if os.geteuid() == 0:
        return Sandbox(limits, backend=settings.backend, in_container=True, uid=uid)
    return Sandbox(limits, backend=settings.backend)


def student_from(metadata: dict | None) -> str | None:
    """The student's name and id from an LMS's submission metadata (Gradescope's users: name, sid, email)."""
    users = (metadata or {}).get("users") if isinstance(metadata, dict) else None
    names = []
    for u in users if isinstance(users, list) else []:
        if isinstance(u, dict):
            words = [str(u.get(k)) for k in ("name", "sid", "email") if u.get(k)]
            names.append(" ".join(words[:1] + [f"({w})" for w in words[1:2]]) if words else "")
    return ", ".join(n for n in names if n) or None


def grade_folder(submission: Path, settings: Settings, student: str | None = None) -> tuple[list[dict], str]:
    """Grades every notebook of the expected stages in `submission` (searched below it too): the grades' JSON
    (Grade.as_dict()), one per expected stage (a missing notebook: each exercise not attempted), and a note of
    what was handed in besides and how the code ran. Nothing a submission holds stops it."""
    found: dict[str, Path] = {}
    others = []
    for path in sorted(submission.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        try:
            nb, _ = notebook.read(path)
            stage = notebook.stage_of(nb, path)
        except Exception:
            stage = None
        if stage in settings.stages and stage not in found:
            found[stage] = path
        else:
            others.append(path.name)
    try:
        sandbox = sandbox_for_grading(settings)
        how = container.describe() if sandbox.in_container else "bubblewrap sandbox"
    except SandboxUnavailableError as e:
        return ([_missing(s, "not graded: the grading could not start (the output above says why)", student)
                 for s in settings.stages], f"The grading could not start: {e}")
    grades = []
    for stage in settings.stages:
        if stage not in found:
            grades.append(_missing(stage, f"no notebook of stage {stage} in the submission", student))
            continue
        g = notebook.grade(found[stage], settings.cell_timeout, settings.exercises_only, settings.backend, sandbox)
        g.notebook = str(found[stage].relative_to(submission))
        g.student = g.student or student
        grades.append(g.as_dict())
    note = f"Graded in {how}." + (f" Not graded (not a notebook of stage {', '.join(settings.stages)}, or a second "
                                  f"one): {', '.join(others[:20])}." if others else "")
    return grades, note


def _missing(stage: str, why: str, student: str | None) -> dict:
    """A stage's grade when its notebook was not graded: every exercise the points table names, not attempted."""
    names = [n for n in points.defaults().get(stage, {})]
    results = [dataclasses.asdict(r) | {"exercise": r.exercise} for r in
               (ExerciseResult(n, "not attempted", why) for n in names)]
    g = Grade(f"(stage {stage})", stage, [], 0.0, "not run", why, student=student).as_dict()
    g["exercises"], g["counts"]["not attempted"] = results, len(results)
    return g


def read_json(path: Path) -> dict | None:
    """A JSON object from a file the LMS wrote, or None (missing, unreadable, not an object)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict) -> None:
    """Written whole, then put in place: the LMS never reads half a results file."""
    part = path.with_name(f".{path.name}.part")
    part.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(part, path)

"""A notebook's grade: per exercise a status (one of STATUSES), a message and, for a kernel cell, the steps of
its check; and the grades as the teacher reads them: text for the terminal, JSON and CSV files written again
after every notebook, so a run stopped halfway keeps every grade it made.

What an exporter reads (a report, an LMS's results file): Grade.as_dict(), one per notebook:

    {"notebook", "stage", "mode", "seconds", "student", "isolation", "problem", "stopped": [...],
     "counts": {status: n},
     "exercises": [{"exercise", "check", "status", "message", "steps": [{"step", "ok", "lines"}]}]}

`steps` is empty for a checker call; for a `%%kernel` cell it lists the write-it check's steps in order
(helpers/course/write_it/verdict.py STEPS: contract, compiles, correct, safe, lesson, timing), ok true, false,
or null where a step was not run (timing on the emulator).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import unicodedata
from pathlib import Path

from helpers.course.exercises import CHECKER_NAME
from helpers.teach import points

STATUSES = ("right", "wrong", "not attempted", "error")


@dataclasses.dataclass
class ExerciseResult:
    check: str
    status: str           # one of STATUSES
    message: str
    steps: list[dict] = dataclasses.field(default_factory=list)   # a kernel cell's check: {"step", "ok", "lines"}

    @property
    def exercise(self) -> int | str:
        m = CHECKER_NAME.match(self.check)
        return int(m.group(2)) if m and m.group(2) else self.check


@dataclasses.dataclass
class Grade:
    notebook: str
    stage: str | None
    results: list[ExerciseResult]
    seconds: float
    mode: str             # "all cells" or "setup and exercise cells"
    problem: str | None = None   # the kernel died, the run was stopped, or the notebook could not be read
    stopped: list[str] = dataclasses.field(default_factory=list)   # what the sandbox stopped
    student: str | None = None   # from the notebook's metadata (authors) or the LMS's submission metadata
    isolation: str | None = None  # how the student's code ran: "bubblewrap", "container" or "none"

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def as_dict(self) -> dict:
        return {"notebook": self.notebook, "stage": self.stage, "mode": self.mode, "seconds": round(self.seconds, 1),
                "student": self.student, "isolation": self.isolation,
                "problem": self.problem, "stopped": self.stopped, "counts": self.counts(),
                "exercises": [dict(dataclasses.asdict(r), exercise=r.exercise) for r in self.results]}


# ---- text for the terminal -----------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text a student wrote (an exception's message, a file name), safe to print on the teacher's terminal:
    control characters (escape sequences that move the cursor, rewrite lines or set colours), the bidirectional
    overrides and other invisible format characters, and lone surrogates are shown as escapes (\\x1b, \\u202e)."""
    text = _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text.replace("\n", " ").replace("\t", " "))
    return "".join(c if unicodedata.category(c) not in ("Cf", "Cs", "Co", "Zl", "Zp")
                   else f"\\u{ord(c):04x}" for c in text)


def report_one(g: Grade, width: int = 100) -> str:
    """One notebook's grade as text: a line for the notebook, one per exercise."""
    c = g.counts()
    name = printable(g.notebook)
    who = f"{printable(g.student)}, " if g.student else ""
    head = f"{name} ({who}stage {g.stage or '?'}, {g.mode}, {g.seconds:.0f} s): " + ", ".join(
        f"{c[s]} {s}" for s in STATUSES if c[s])
    out = [head if g.results else f"{name}: no exercises graded" + (f" ({printable(g.problem)})" if g.problem else "")]
    if g.problem and g.results:
        out.append(f"  problem: {printable(g.problem)}")
    out += [f"  stopped by the sandbox: {printable(s)}" for s in g.stopped]
    for r in g.results:
        message = printable(" ".join(r.message.split()))
        message = message if len(message) <= width else message[:width - 3] + "..."
        label = f"exercise {r.exercise:<3}" if isinstance(r.exercise, int) else f"{printable(str(r.exercise)):<12}"
        out.append(f"  {label} {r.status:<14} {message}")
    return "\n".join(out) + "\n"


def summary(grades: list[Grade]) -> str:
    """The table of counts per notebook (for a run of several)."""
    names = [printable(g.notebook) for g in grades]
    name_w = max(len("notebook"), *(len(n) for n in names))
    out = [f"{'notebook':<{name_w}}  " + "  ".join(f"{s:>13}" for s in STATUSES)]
    for name, g in zip(names, grades):
        c = g.counts()
        out.append(f"{name:<{name_w}}  " + "  ".join(f"{c[s]:>13}" for s in STATUSES))
    return "\n".join(out) + "\n"


def report(grades: list[Grade], width: int = 100) -> str:
    """The grades as text: per notebook, one line per exercise; a summary table when there are several."""
    text = "\n".join(report_one(g, width) for g in grades)
    return text + ("\n" + summary(grades) if len(grades) > 1 else "")


# ---- files, written again after each notebook -----------------------------------------------------------------
def write_csv(grades: list[Grade], path) -> None:
    _replace(path, lambda f: _csv_rows(csv.writer(f), grades), newline="")


def _csv_rows(w, grades: list[Grade]) -> None:
    w.writerow(["notebook", "stage", "exercise", "check", "status", "message"])
    for g in grades:
        for r in g.results:
            w.writerow([g.notebook, g.stage, r.exercise, r.check, r.status, r.message])
        if not g.results:      # a notebook that could not be graded still has its row
            w.writerow([g.notebook, g.stage, "", "", "error", g.problem or "no exercises graded"])


def write_json(grades: list[Grade], path) -> None:
    _replace(path, lambda f: f.write(json.dumps([g.as_dict() for g in grades], indent=1) + "\n"))


def _replace(path, write, newline=None) -> None:
    """Writes the file whole, then puts it in place: a reader (or a run stopped now) never sees half of it."""
    path = Path(path)
    part = path.with_name(f".{path.name}.part")
    with open(part, "w", newline=newline, encoding="utf-8", errors="backslashreplace") as f:
        write(f)
    os.replace(part, path)


class Written:
    """The grades of a run so far, written to the JSON and CSV files after each notebook; with a points table
    (helpers/teach/points.py), each exercise and notebook scored in the JSON."""

    def __init__(self, json_path=None, csv_path=None, table: dict | None = None):
        self.json_path, self.csv_path, self.table, self.grades = json_path, csv_path, table, []

    def add(self, grade: Grade) -> None:
        self.grades.append(grade)
        if self.json_path:
            _replace(self.json_path, lambda f: f.write(json.dumps(
                [self.scored(g) for g in self.grades], indent=1) + "\n"))
        if self.csv_path:
            write_csv(self.grades, self.csv_path)

    def scored(self, grade: Grade) -> dict:
        return grade.as_dict() if self.table is None else points.with_scores(grade.as_dict(), self.table)

    def score_line(self, grade: Grade) -> str:
        if self.table is None:
            return ""
        d = self.scored(grade)
        return f"  score: {points.number(d['score'])} of {points.number(d['max_score'])} points\n"

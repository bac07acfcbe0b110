"""A notebook's grade: per exercise a status (one of STATUSES) and a message, and the grades as the teacher
reads them (text, CSV; JSON through Grade.as_dict)."""

from __future__ import annotations

import csv
import dataclasses

from helpers.course.exercises import CHECKER_NAME

STATUSES = ("right", "wrong", "not attempted", "error")


@dataclasses.dataclass
class ExerciseResult:
    check: str
    status: str           # one of STATUSES
    message: str

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

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def as_dict(self) -> dict:
        return {"notebook": self.notebook, "stage": self.stage, "mode": self.mode, "seconds": round(self.seconds, 1),
                "problem": self.problem, "stopped": self.stopped, "counts": self.counts(),
                "exercises": [dict(dataclasses.asdict(r), exercise=r.exercise) for r in self.results]}


def report(grades: list[Grade], width: int = 100) -> str:
    """The grades as text: per notebook, one line per exercise; a summary table when there are several."""
    out = []
    for g in grades:
        c = g.counts()
        head = f"{g.notebook} (stage {g.stage or '?'}, {g.mode}, {g.seconds:.0f} s): " + ", ".join(
            f"{c[s]} {s}" for s in STATUSES if c[s])
        out.append(head if g.results else f"{g.notebook}: no exercises graded" + (f" ({g.problem})" if g.problem else ""))
        if g.problem and g.results:
            out.append(f"  problem: {g.problem}")
        out += [f"  stopped by the sandbox: {s}" for s in g.stopped]
        for r in g.results:
            message = " ".join(r.message.split())
            message = message if len(message) <= width else message[:width - 3] + "..."
            label = f"exercise {r.exercise:<3}" if isinstance(r.exercise, int) else f"{r.exercise:<12}"
            out.append(f"  {label} {r.status:<14} {message}")
        out.append("")
    if len(grades) > 1:
        name_w = max(len("notebook"), *(len(g.notebook) for g in grades))
        out.append(f"{'notebook':<{name_w}}  " + "  ".join(f"{s:>13}" for s in STATUSES))
        for g in grades:
            c = g.counts()
            out.append(f"{g.notebook:<{name_w}}  " + "  ".join(f"{c[s]:>13}" for s in STATUSES))
    return "\n".join(out).rstrip() + "\n"


def write_csv(grades: list[Grade], path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "stage", "exercise", "check", "status", "message"])
        for g in grades:
            for r in g.results:
                w.writerow([g.notebook, g.stage, r.exercise, r.check, r.status, r.message])

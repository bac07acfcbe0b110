"""What a check says: one line per step it took (what it measured), and on a failure the cause, the
learner's line and one hint; the verdict is the last line."""

from __future__ import annotations

from dataclasses import dataclass, field

PASSED, NOT_DONE, FAILED = "passed", "not done yet", "failed"

# The steps of a check, in order, and what each one asks.
STEPS = {
    "contract": "the kernel's name and signature",
    "compiles": "NVRTC, CUDA's compiler, accepts it",
    "correct": "correct on the stage's odd shapes, against float64",
    "safe": "no out-of-bounds access, no divergent barrier, no race",
    "lesson": "the stage's lesson, measured from your kernel's trace",
    "timing": "its time beside the course's kernel and cuBLAS (on a GPU)",
}


@dataclass(frozen=True)
class Step:
    name: str                      # a key of STEPS
    ok: bool | None                # None: not run here (timing on the CPU emulator)
    lines: tuple[str, ...]         # what it measured, or why it failed


@dataclass
class Verdict:
    exercise: str
    kernel: str
    where: str                     # "your cell" or the file's path, for "line 12 of ..."
    backend: str
    steps: list[Step] = field(default_factory=list)
    status: str = PASSED
    failed_step: str | None = None
    cause: str = ""
    line: int | None = None
    code: str = ""                 # the learner's source line
    hint: str = ""
    todo_lines: tuple[int, ...] = ()   # TODO blocks still as the starter has them (diagnose.todo_lines)
    numbers: dict = field(default_factory=dict)   # what was measured, by name (for tests and grading)

    @property
    def ok(self) -> bool:
        return self.status == PASSED

    def __bool__(self) -> bool:
        return self.ok

    def passed(self, name: str, *lines: str) -> None:
        self.steps.append(Step(name, True, lines))

    def skipped(self, name: str, *lines: str) -> None:
        self.steps.append(Step(name, None, lines))

    def failed_before(self, name: str, *lines: str) -> None:
        """A step that failed, printed in its place, whose cause a later step names (a wrong result, then
        the race that made it): the verdict's failure is that later step's."""
        self.steps.append(Step(name, False, lines))

    def fail(self, name: str, cause: str, hint: str, line: int | None = None, code: str = "",
             details: tuple[str, ...] = ()) -> "Verdict":
        self.steps.append(Step(name, False, (cause, *details)))
        self.status = NOT_DONE if self.todo_lines else FAILED
        self.failed_step, self.cause, self.line, self.code, self.hint = name, cause, line, code, hint
        return self

    def last_line(self) -> str:
        head = f"Exercise {self.exercise} ({self.kernel}): "
        if self.ok:
            return head + "PASSED: " + "; ".join(s.name for s in self.steps if s.ok) + "."
        at = f" (line {self.line} of {self.where})" if self.line else ""
        if self.status == NOT_DONE:
            todos, many = ", ".join(map(str, self.todo_lines)), len(self.todo_lines) > 1
            return (head + f"NOT DONE YET: the TODO block{'s' * many} at line{'s' * many} {todos} of {self.where} "
                           f"{'are' if many else 'is'} still the starter's (the code under {'them' if many else 'it'} "
                           f"is unchanged), and the check stops at \"{self.failed_step}\"{at}. Write "
                           f"{'them' if many else 'it'}, and the check says what fails and why.")
        return head + f"FAILED at \"{self.failed_step}\"{at}: {self.cause}"

    def __str__(self) -> str:
        out = [f"Exercise {self.exercise}: {self.kernel} from {self.where}, on the {self.backend}"]
        for s in self.steps:
            mark = {True: "ok  ", False: "FAIL", None: "--  "}[s.ok]
            first, *rest = s.lines or ("",)
            out.append(f"  {mark} {s.name:<9} {first}")
            out += [f"{'':17}{line}" for line in rest]
        if not self.ok:
            if self.line:
                out.append(f"  line {self.line} of {self.where}:  {self.code}")
            out.append(f"  hint: {self.hint}")
        out.append(self.last_line())
        return "\n".join(out)

    __repr__ = __str__

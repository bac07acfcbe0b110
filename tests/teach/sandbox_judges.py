"""A stand-in for a write-it-yourself check, for tests/teach/test_sandbox.py: the "kernel" is a shell
script, and the check runs it, as the real check runs the learner's kernel on the emulator. It passes
when the script prints 42. Imported by the grader's judging process, inside the sandbox."""

import subprocess
from dataclasses import dataclass


@dataclass
class Verdict:
    ok: bool
    status: str
    message: str


def run_as_shell(exercise_id, path) -> Verdict:
    r = subprocess.run(["sh", str(path)], capture_output=True, text=True, timeout=60)
    out = r.stdout.strip()
    if out == "42":
        return Verdict(True, "passed", f"exercise {exercise_id}: it printed 42")
    return Verdict(False, "failed", f"exercise {exercise_id}: it printed {out[:80]!r}, not 42")


def run_loud(exercise_id, path) -> Verdict:
    """As the emulator does with a kernel's printf: the script's output goes to this process's stdout, which the
    grader reads, and the verdict is printed after it."""
    r = subprocess.run(["sh", str(path)], timeout=120)
    return Verdict(r.returncode == 0, "passed" if r.returncode == 0 else "failed",
                   f"exercise {exercise_id}: the script exited with {r.returncode}")

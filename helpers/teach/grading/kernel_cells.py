"""Exercises answered by a kernel written in a `%%kernel ID` cell: its source judged by the exercise's check in
a sandbox of its own, in a process the student's kernel cannot read; a verdict counts only when it carries the
secret that process alone was given."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import json
import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

from helpers.core.kernel_source import same_kernel
from helpers.core.paths import ROOT
from helpers.teach.grading.results import STATUSES, ExerciseResult
from helpers.teach.grading.run import Run

_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")     # an exercise's id, before it names a file


@dataclasses.dataclass(frozen=True)
class KernelCells:
    """Exercises answered by a kernel written in a `%%MAGIC ID` cell, judged by `judge`
    ("module:function", called as function(exercise_id, path_of_the_source)) in a sandbox of its own.
    The function returns an object with `ok` and `status` ("passed", "not done yet", "failed", or one
    of STATUSES) and a message (`last_line()`, `message`, or its str)."""
    magic: str = "kernel"
    judge: str = "helpers.course.write_it:check"
    starters: str = "helpers/course/write_it/starters"    # ID.cu: what a student copy's cell holds
    exercises: tuple = ()                                # (stage, ID) of each: a stage's missing cell is reported
    time_limit: float = 900.0                            # per cell, and never past the notebook's own limit
    # "module:function", called with the notebook's cells as handed in: {ID: the learner's record of that exercise
    # in a teacher's words} ("asked to see the course's kernel before passing"), added to its message
    notes: str = "helpers.course.write_it.record:notes_from_outputs"

    def starter_source(self, source: str) -> str | None:
        """For a student copy: a kernel cell back on its starter (the magic's line alone if there is none),
        whatever kernel it held (a teacher's solution); a cell whose magic's line takes an option
        (`%%kernel 05 --from-mine`, which fills itself with the learner's own earlier kernel) back on that line
        alone; None for any other cell."""
        m = self._head().match(source)
        if not m:
            return None
        line = source[:m.end()].rstrip()
        if line.split()[2:]:          # an option: the cell must stay empty below it for the magic to fill it
            return line
        return line + "\n" + (self._starter(m.group(1)) or "").rstrip("\n")

    def _head(self) -> re.Pattern:
        return re.compile(rf"\s*%%{self.magic}\s+(\S+)[^\n]*\n?")

    def _starter(self, exercise_id: str) -> str | None:
        path = ROOT / self.starters / f"{exercise_id}.cu"
        return path.read_text() if _ID.fullmatch(exercise_id) and path.is_file() else None

    def chosen_cells(self, nb) -> dict[str, str]:
        """{ID: the source judged for it, headed by its magic's line as a comment}: of the cells of one exercise
        (a starter cell, a `--from-mine` cell below it), the one holding the learner's kernel. A cell holding
        only the magic's line is left out, and so is one still holding the untouched starter while another
        holds code; of the rest, the one run last (the highest execution count handed in), then the last in
        the notebook. Where every cell is empty, the first (judged "not attempted")."""
        head = self._head()
        cells: dict[str, list] = {}
        for index, cell in enumerate(nb.cells):
            m = head.match(cell.source) if cell.cell_type == "code" else None
            if m:
                count = cell.get("execution_count")
                ran = count if isinstance(count, int) and not isinstance(count, bool) else -1
                cells.setdefault(m.group(1), []).append((ran, index, cell.source[:m.end()], cell.source[m.end():]))
        chosen = {}
        for ex_id, found in cells.items():
            starter = self._starter(ex_id)
            filled = [c for c in found if c[3].strip()]
            mine = [c for c in filled if starter is None or not same_kernel(c[3], starter)] or filled or found[:1]
            _, _, line, body = max(mine, key=lambda c: (c[0], c[1]))
            chosen[ex_id] = f"// {line.strip()}\n" + body
        return chosen

    def results(self, nb, stage: str | None, run: Run | None, sandbox) -> list[ExerciseResult]:
        found = self.chosen_cells(nb)
        missing = {ex_id for ex_stage, ex_id in self.exercises if ex_stage == stage} - set(found)
        results = [self.judge_source(ex_id, found[ex_id], sandbox, run.deadline if run else None) if ex_id in found else
                   ExerciseResult(f"{self.magic} {ex_id}", "not attempted", f"no cell holds %%{self.magic} {ex_id}")
                   for ex_id in sorted({*found, *missing})]
        notes = self._notes(nb)
        for ex_id, r in zip(sorted({*found, *missing}), results):
            if notes.get(ex_id):
                r.message = f"[the learner's record: {notes[ex_id]}] {r.message}"
        return results

    def _notes(self, nb) -> dict[str, str]:
        """What the outputs handed in say of each exercise's hints and reveals (never a reason to lose a grade)."""
        if not self.notes:
            return {}
        module, _, function = self.notes.partition(":")
        try:
            found = getattr(importlib.import_module(module), function)(nb.cells)
        except Exception:       # a malformed output must not stop the grade: the record is a note, not a verdict
            return {}
        return {str(k): str(v)[:500] for k, v in found.items()} if isinstance(found, dict) else {}

    def judge_source(self, exercise_id: str, source: str, sandbox, deadline: float | None = None) -> ExerciseResult:
        """The check's verdict on one kernel source, judged within time_limit and before `deadline` (a
        time.monotonic(): the notebook's --time-limit, which its kernel cells share with its run)."""
        name = f"{self.magic} {exercise_id}"
        if not source.split("\n", 1)[1].strip():
            return ExerciseResult(name, "not attempted", "its cell holds no kernel, only the magic's line")
        if not _ID.fullmatch(exercise_id):
            return ExerciseResult(name, "error", f"%%{self.magic} takes an exercise's id (letters, digits, _ and -), "
                                                 f"not {exercise_id[:40]!r}")
        limit = self.time_limit if deadline is None else min(self.time_limit, deadline - time.monotonic())
        if limit < 1:
            return ExerciseResult(name, "error", f"not checked: the notebook's time limit "
                                                 f"({sandbox.limits.wall_s:.0f} s, its run and its kernel cells "
                                                 f"together) was spent before this cell's turn")
        nonce = secrets.token_hex(16)
        judging = sandbox.with_limits(dataclasses.replace(sandbox.limits, wall_s=limit, cpu_s=max(1, int(limit))))
        entry = "from helpers.teach.grading import kernel_cells; kernel_cells.judge_inside()"
        out = judging.run([sys.executable, "-c", entry, self.judge, exercise_id], stdin=f"{nonce}\n{source}", cwd=ROOT)
        for line in reversed(out.stdout.splitlines()):
            if line.startswith(nonce + " "):
                try:
                    verdict = json.loads(line[len(nonce) + 1:])
                    return ExerciseResult(name, verdict["status"], verdict["message"], list(verdict.get("steps", [])))
                except (ValueError, KeyError, TypeError, RecursionError):
                    break
        why = (f"it ran past {limit:.0f} s" + (" (what was left of the notebook's time limit)"
                                                 if limit < self.time_limit else "") if out.timed_out else
               "it printed more than the grader reads (32 MiB), and its verdict was lost" if out.stdout_capped else
               f"it ended without a verdict (exit status {out.returncode})")
        tail = (out.stderr.strip().splitlines() or [""])[-1][:200]
        return ExerciseResult(name, "error", f"the check of this kernel failed: {why}" + (f": {tail}" if tail else ""))


def _verdict_words(v) -> tuple[str, str, list[dict]]:
    status = getattr(v, "status", None)
    if status not in STATUSES:
        status = "right" if getattr(v, "ok", bool(v)) else "not attempted" if status == "not done yet" else "wrong"
    message = v.last_line() if hasattr(v, "last_line") else getattr(v, "message", None) or str(v)
    steps = [{"step": str(s.name), "ok": s.ok, "lines": [str(x) for x in s.lines]} for s in getattr(v, "steps", [])]
    return status, str(message), steps


def judge_inside() -> None:
    """In a sandbox of its own: judges one kernel source (stdin: a secret line, then the source) with the
    check named on the command line, and prints the verdict after the secret. Made undumpable first, so
    that the student's code it runs cannot read the secret from this process."""
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)    # PR_SET_DUMPABLE = 4: no ptrace, no /proc/PID/mem, no /proc/PID/fd
    nonce, _, source = sys.stdin.read().partition("\n")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    judge, exercise_id = sys.argv[1], sys.argv[2]
    if not _ID.fullmatch(exercise_id):       # judge_source refuses it first; a file name is built from it below
        raise SystemExit(f"not an exercise's id: {exercise_id[:40]!r}")
    path = Path(tempfile.mkdtemp()) / "your_cell" / f"{exercise_id}.cu"
    path.parent.mkdir()
    path.write_text(source)
    try:
        module, _, function = judge.partition(":")
        status, message, steps = _verdict_words(getattr(importlib.import_module(module), function)(exercise_id, path))
    except Exception as e:
        status, message, steps = "error", f"the check raised {type(e).__name__}: {e}", []
    sys.stdout.flush()
    verdict = json.dumps({"status": status, "message": message, "steps": steps})
    os.write(1, f"\n{nonce} {verdict}\n".encode())
    os._exit(0)


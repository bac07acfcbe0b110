"""Exercises answered by a call of the stage's checker: each judged in the grader's process, by the course's
checker as the grader imported it before any student code ran, on the arguments the student wrote (or, for
computed ones, the values the sandboxed run recorded, read as Python literals)."""

from __future__ import annotations

import ast
import threading

from helpers.course import exercises
from helpers.course.exercises.calls import Call, checker_calls
from helpers.teach.grading.answers import constant_arguments, reads_solutions
from helpers.teach.grading.results import STATUSES, ExerciseResult
from helpers.teach.grading.run import Run
from helpers.teach.sandbox import answer_record

CHECKERS = dict(exercises.CHECKERS)        # the grader's checkers, imported before any student code runs
_ONE_AT_A_TIME = threading.Lock()          # `grade --jobs N` grades in threads; a checker is not made for them


def _judge(name: str, args, kwargs, note: str = "") -> ExerciseResult:
    try:
        with _ONE_AT_A_TIME:
            fb = CHECKERS[name](*args, **kwargs)
        status = getattr(fb, "status", None)
        status = status if status in STATUSES else "right" if fb else "wrong"
        return ExerciseResult(name, status, str(getattr(fb, "message", fb)) + note)
    except Exception as e:   # checkers never raise on an answer; the call's shape can still be wrong
        return ExerciseResult(name, "error", f"the checker cannot take these arguments: {type(e).__name__}: "
                                             f"{str(e)[:300]}")


def _judge_call(call: Call, record: dict, reads: bool) -> ExerciseResult:
    const = constant_arguments(call.args)
    if const is not None:
        return _judge(call.name, *const)
    if reads:
        return ExerciseResult(call.name, "wrong", "the notebook reads the course's solutions, and this answer is "
                                                  f"computed ({' '.join(call.args.split())[:80]}), not written")
    try:
        record = answer_record(record) or {"unreadable": "no answer record"}   # checked again here: size, shape
        if "unreadable" in record:
            raise ValueError(record["unreadable"])
        args = [ast.literal_eval(a) for a in record["args"]]
        kwargs = {k: ast.literal_eval(v) for k, v in record["kwargs"].items()}
    except (ValueError, TypeError, SyntaxError, KeyError, RecursionError, MemoryError) as e:
        return ExerciseResult(call.name, "wrong", f"the answer's value cannot be read ({str(e)[:120]}): write it as "
                                                  f"numbers, strings, or tuples or sets of them")
    shown = ", ".join(repr(a) for a in args)
    return _judge(call.name, args, kwargs, f" (computed in the notebook: {' '.join(call.args.split())[:60]} = "
                                           f"{shown[:80]})")


class CheckerCalls:
    """Exercises answered by a call of the stage's checker (every stage's notebook)."""

    def results(self, nb, stage: str | None, run: Run, sandbox) -> list[ExerciseResult]:
        calls = [(i, k, c) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
                 for k, c in enumerate(checker_calls(cell.source))]
        reads = any(reads_solutions(cell.source) for cell in nb.cells if cell.cell_type == "code")
        expected = [n for n in CHECKERS if stage and n.startswith(f"check_{stage}_")]
        expected += sorted({c.name for _, _, c in calls} - set(expected) & set(CHECKERS))
        results = []
        for name in expected:
            mine = [(i, k, c) for i, k, c in calls if c.name == name]
            if not mine:
                results.append(ExerciseResult(name, "not attempted", "no cell calls this checker"))
                continue
            if any(reads_solutions(c.args) for _, _, c in mine):
                results.append(ExerciseResult(name, "wrong", "the answer is taken from the course's solutions, "
                                                             "not written"))
                continue
            reached = [(i, k, c, r) for i, k, c in mine for r in run.cells.get(i, {}).get("answers", [])
                       if isinstance(r, dict) and r.get("call") == k and r.get("check") == name]
            if reached:
                results.append(_judge_call(reached[-1][2], reached[-1][3], reads))
                continue
            i = mine[-1][0]
            cell = run.cells.get(i, {})
            if i not in run.ran:
                results.append(ExerciseResult(name, "not attempted", "its cell is not among the cells that ran"))
            elif cell.get("errors"):
                first = cell["errors"][0]
                ename, evalue = (first if isinstance(first, list) and len(first) == 2 else ("an error", first))
                results.append(ExerciseResult(name, "error", f"its cell raised {str(ename)[:200]}: {str(evalue)[:1000]}"))
            elif run.problem or not cell.get("executed"):
                results.append(ExerciseResult(name, "error", f"not reached: {run.problem or 'its cell did not run'}"))
            else:
                results.append(ExerciseResult(name, "not attempted", "the cell ran, but the checker was not called"))
        return results

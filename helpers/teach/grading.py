"""Grading students' notebooks: each answer judged in the grader's own process, from what the student wrote.

A student's notebook runs in the sandbox (helpers/course/sandbox.py), in a fresh Jupyter kernel; the
grader trusts nothing that run reports as a verdict. What it takes from the notebook:

- a **checker call**, `check_05_exercise_1((4, 8))`: its arguments as written in the cell. Arguments
  that are constants (numbers, strings, tuples, sets, arithmetic on numbers) are read by the grader
  itself; arguments the notebook computes (`check_05_exercise_1(my_answer)`) take the value the
  student's code gave them in the sandboxed run, sent back as its repr and read as a Python literal,
  never executed. The grader then calls the course's checker, as it imported it before any student
  code ran, on those values. From the run it takes only whether the call was reached (an answer whose
  cell raised first is an error, as in the student's own run) and what the sandbox stopped.
- a **kernel cell** (write it yourself, `%%kernel 03`): the kernel source as the cell holds it, judged
  by the exercise's check in a fresh sandbox, in a process of its own that the student's kernel cannot
  read; its verdict counts only when it carries a secret that process alone was given.

Printed verdicts, files the notebook writes, checkers it replaces, solutions it imports: none of them
reach the grade. Answers computed with the course's solution registry (`exercises.solution(...)`) are
wrong: the registry is emptied in the graded kernel, and a notebook naming it has no computed answer.
"""

from __future__ import annotations

import ast
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

from helpers.core.paths import ROOT
from helpers.course import exercises
from helpers.teach import sandbox as sandboxing
from helpers.course import write_it

STATUSES = ("right", "wrong", "not attempted", "error")
EXERCISES_HEADING = re.compile(r"^##\s.*\bExercises?\b", re.M)
CHECKERS = dict(exercises.CHECKERS)        # the grader's checkers, imported before any student code runs
SOLUTION_NAMES = {"solution", "SOLUTIONS", "teacher_copy", "write_copies"}


# ---- checker calls in a cell's source -------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Call:
    name: str             # check_05_exercise_1
    args: str             # the source between the parentheses
    start: int            # offsets of `args` in the cell's source
    end: int
    func_start: int = 0   # offsets of the called expression (check_05_exercise_1, exercises.check_...)
    func_end: int = 0


def _offset(lines: list[str], line: int, col_bytes: int) -> int:
    """Character offset in the source of (1-based line, UTF-8 byte column), as ast reports them."""
    text = lines[line - 1]
    return sum(len(s) for s in lines[:line - 1]) + len(text.encode()[:col_bytes].decode(errors="ignore"))


def checker_calls(source: str) -> list[Call]:
    """The checker calls in a cell, in order. A cell Python cannot parse (IPython magics) has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines(keepends=True)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if not name or not exercises.CHECKER_NAME.match(name):
            continue
        parts = [*node.args, *node.keywords]
        if parts:
            start = _offset(lines, parts[0].lineno, parts[0].col_offset)
            end = _offset(lines, parts[-1].end_lineno, parts[-1].end_col_offset)
        else:   # check_x(): the empty space between the parentheses
            end = start = _offset(lines, node.end_lineno, node.end_col_offset) - 1
        found.append(Call(name, source[start:end], start, end, _offset(lines, f.lineno, f.col_offset),
                          _offset(lines, f.end_lineno, f.end_col_offset)))
    return sorted(found, key=lambda c: c.start)


# ---- what an answer's value is -----------------------------------------------------------------------
class _NotConstant(Exception):
    pass


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a ** b}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 2 ** 64


def _const(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_const(e) for e in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_const(k): _const(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _const(node.operand)
        if _number(v):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _const(node.left), _const(node.right)
        if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str) and len(a) + len(b) < 10 ** 4:
            return a + b
        if _number(a) and _number(b) and not (isinstance(node.op, ast.Pow) and abs(b) > 64):
            try:
                v = _OPS[type(node.op)](a, b)
            except (ArithmeticError, ValueError):
                raise _NotConstant from None
            if _number(v):
                return v
    raise _NotConstant


def constant_arguments(args_source: str) -> tuple[list, dict] | None:
    """The arguments written between a call's parentheses, when all are constants; else None."""
    try:
        call = ast.parse(f"f({args_source})", mode="eval").body
        return [_const(a) for a in call.args], {k.arg: _const(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, _NotConstant, TypeError, RecursionError, ValueError):   # TypeError: {[1]}, unhashable
        return None


def reads_solutions(source: str) -> bool:
    """Whether Python code names the course's solution registry (exercises.solution, SOLUTIONS, ...)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SOLUTION_NAMES or \
                isinstance(node, ast.Name) and node.id == "SOLUTIONS" or \
                isinstance(node, ast.ImportFrom) and any(a.name in SOLUTION_NAMES for a in node.names):
            return True
    return False


# ---- the run of a notebook, and what the sandbox stopped ----------------------------------------------
SETUP = r'''
def _tbt_setup():
    import builtins
    from IPython.display import display

    def plain(v, depth=0):
        if depth > 30:
            raise ValueError("nested too deeply")
        if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
            return plain(v.tolist(), depth + 1)
        for t in (bool, int, float, complex, str, bytes):
            if isinstance(v, t):
                return t(v)
        if v is None:
            return None
        if isinstance(v, (tuple, list)):
            return (tuple if isinstance(v, tuple) else list)(plain(x, depth + 1) for x in v)
        if isinstance(v, (set, frozenset)):
            return {plain(x, depth + 1) for x in v}
        if isinstance(v, dict):
            return {plain(k, depth + 1): plain(x, depth + 1) for k, x in v.items()}
        raise TypeError(f"a {type(v).__name__}, not a number, a string, or a tuple, list, set or dict of them")

    def answer(cell, call, name, func):
        def recorded(*args, **kwargs):
            try:
                record = {"cell": cell, "call": call, "check": name, "args": [repr(plain(a)) for a in args],
                          "kwargs": {str(k): repr(plain(v)) for k, v in kwargs.items()}}
                if len(repr(record)) > 100000:
                    raise ValueError("longer than 100000 characters")
            except Exception as e:
                record = {"cell": cell, "call": call, "check": name, "unreadable": f"{type(e).__name__}: {e}"[:300]}
            display({MIME: record}, raw=True)
            return func()(*args, **kwargs)
        return recorded
    builtins.__tbt_answer__ = answer
    try:
        from helpers.course import exercises
    except Exception:
        return

    def refuse(*args, **kwargs):
        raise RuntimeError("the course's solutions are not available while a notebook is graded")
    for module in (exercises, *exercises.STAGE_MODULES):
        getattr(module, "SOLUTIONS", {}).clear()
    exercises.solution = refuse
_tbt_setup()
del _tbt_setup
'''.replace("MIME", repr(sandboxing.ANSWER_MIME))

@dataclasses.dataclass
class Run:
    """What the grader takes from the sandboxed run: per cell (by its index in the notebook) whether it
    ran, its errors and the answers it recorded; which cells ran; what went wrong with the run."""
    cells: dict[int, dict]
    ran: set[int]
    problem: str | None
    stopped: list[str]


def instrument(source: str, index: int) -> str:
    """The cell with each checker call routed through __tbt_answer__, which records its arguments."""
    calls = checker_calls(source)
    for k, c in reversed(list(enumerate(calls))):
        fn = source[c.func_start:c.func_end]
        source = source[:c.func_start] + f"__tbt_answer__({index}, {k}, {c.name!r}, lambda: {fn})" + source[c.func_end:]
    return source


def run_notebook(nb, sandbox: sandboxing.Sandbox, timeout: int, exercises_only: bool) -> Run:
    import nbformat
    cells = exercise_cells(nb) if exercises_only else list(nb.cells)
    position = {id(c): i for i, c in enumerate(nb.cells)}
    run = nbformat.v4.new_notebook(metadata=nb.metadata)
    run.cells = [nbformat.v4.new_code_cell(SETUP)]
    for cell in cells:
        i = position[id(cell)]
        if cell.cell_type == "code":
            run.cells.append(nbformat.v4.new_code_cell(instrument(cell.source, i), metadata={"tbt_cell": i}))
    summary, outcome = sandboxing.execute(sandbox, run, timeout)
    lim = sandbox.limits
    problem, stopped = None, []
    if outcome.timed_out:
        problem = f"the notebook ran past its {lim.wall_s:.0f} s limit and was stopped"
        stopped.append(f"the whole run, past {lim.wall_s:.0f} s (everything it started was killed)")
    elif summary is None or not summary["done"]:
        problem = f"the run ended before its end (exit status {outcome.returncode}): " + \
                  (outcome.stderr.strip().splitlines() or ["no message"])[-1][:300]
    elif summary.get("problem"):
        problem = f"the kernel stopped: {summary['problem']} (a limit, e.g. CPU time, may have ended it)"
    by_cell = {}
    for c in (summary or {}).get("cells", []):
        if isinstance(c, dict) and isinstance(c.get("cell"), int):
            by_cell[c["cell"]] = c
            stopped += [f"cell {c['cell'] + 1}: {what}" for what in sandboxing.stopped(c, lim)]   # cells from 1
    ran = {position[id(c)] for c in cells}
    return Run(by_cell, ran, problem, stopped)


# ---- results ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class ExerciseResult:
    check: str
    status: str           # one of STATUSES
    message: str

    @property
    def exercise(self) -> int | str:
        m = exercises.CHECKER_NAME.match(self.check)
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


def _judge(name: str, args, kwargs, note: str = "") -> ExerciseResult:
    try:
        fb = CHECKERS[name](*args, **kwargs)
    except Exception as e:   # checkers never raise on an answer; the call's shape can still be wrong
        return ExerciseResult(name, "error", f"the checker cannot take these arguments: {type(e).__name__}: {e}")
    status = getattr(fb, "status", None)
    status = status if status in STATUSES else "right" if fb else "wrong"
    return ExerciseResult(name, status, str(getattr(fb, "message", fb)) + note)


def _judge_call(call: Call, record: dict, reads: bool) -> ExerciseResult:
    const = constant_arguments(call.args)
    if const is not None:
        return _judge(call.name, *const)
    if reads:
        return ExerciseResult(call.name, "wrong", "the notebook reads the course's solutions, and this answer is "
                                                  f"computed ({' '.join(call.args.split())[:80]}), not written")
    try:
        if "unreadable" in record:
            raise ValueError(record["unreadable"])
        args = [ast.literal_eval(a) for a in record["args"]]
        kwargs = {k: ast.literal_eval(v) for k, v in record.get("kwargs", {}).items()}
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
                ename, evalue = cell["errors"][0]
                results.append(ExerciseResult(name, "error", f"its cell raised {ename}: {evalue}"))
            elif run.problem or not cell.get("executed"):
                results.append(ExerciseResult(name, "error", f"not reached: {run.problem or 'its cell did not run'}"))
            else:
                results.append(ExerciseResult(name, "not attempted", "the cell ran, but the checker was not called"))
        return results


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
    time_limit: float = 900.0

    def starter_source(self, source: str) -> str | None:
        """For a student copy: a kernel cell back on its starter (the magic's line alone if there is none),
        whatever kernel it held (a teacher's solution); None for any other cell."""
        m = re.match(rf"\s*%%{self.magic}\s+(\S+)[^\n]*\n?", source)
        if not m:
            return None
        starter = ROOT / self.starters / f"{m.group(1)}.cu"
        return source[:m.end()].rstrip() + "\n" + (starter.read_text().rstrip("\n") if starter.is_file() else "")

    def results(self, nb, stage: str | None, run: Run, sandbox) -> list[ExerciseResult]:
        head = re.compile(rf"\s*%%{self.magic}\s+(\S+)[^\n]*\n?")
        found: dict[str, str] = {}
        for cell in nb.cells:
            m = head.match(cell.source) if cell.cell_type == "code" else None
            if m and (cell.source[m.end():].strip() or m.group(1) not in found):
                found[m.group(1)] = f"// {cell.source[:m.end()].strip()}\n" + cell.source[m.end():]
        missing = {ex_id for ex_stage, ex_id in self.exercises if ex_stage == stage} - set(found)
        return [self.judge_source(ex_id, found[ex_id], sandbox) if ex_id in found else
                ExerciseResult(f"{self.magic} {ex_id}", "not attempted", f"no cell holds %%{self.magic} {ex_id}")
                for ex_id in sorted({*found, *missing})]

    def judge_source(self, exercise_id: str, source: str, sandbox) -> ExerciseResult:
        name = f"{self.magic} {exercise_id}"
        if not source.split("\n", 1)[1].strip():
            return ExerciseResult(name, "not attempted", "its cell holds no kernel, only the magic's line")
        nonce = secrets.token_hex(16)
        judging = sandboxing.Sandbox(dataclasses.replace(sandbox.limits, wall_s=self.time_limit), sandbox.enabled,
                                     sandbox.backend, sandbox.bwrap)
        out = judging.run([sys.executable, "-c", "from helpers.teach import grading; grading.judge_inside()",
                           self.judge, exercise_id], stdin=f"{nonce}\n{source}", cwd=ROOT)
        for line in reversed(out.stdout.splitlines()):
            if line.startswith(nonce + " "):
                try:
                    verdict = json.loads(line[len(nonce) + 1:])
                    return ExerciseResult(name, verdict["status"], verdict["message"])
                except (ValueError, KeyError, TypeError):
                    break
        why = (f"it ran past {self.time_limit:.0f} s" if out.timed_out else
               f"it ended without a verdict (exit status {out.returncode})")
        tail = (out.stderr.strip().splitlines() or [""])[-1][:200]
        return ExerciseResult(name, "error", f"the check of this kernel failed: {why}" + (f": {tail}" if tail else ""))


def _verdict_words(v) -> tuple[str, str]:
    status = getattr(v, "status", None)
    if status not in STATUSES:
        status = "right" if getattr(v, "ok", bool(v)) else "not attempted" if status == "not done yet" else "wrong"
    message = v.last_line() if hasattr(v, "last_line") else getattr(v, "message", None) or str(v)
    return status, str(message)


def judge_inside() -> None:
    """In a sandbox of its own: judges one kernel source (stdin: a secret line, then the source) with the
    check named on the command line, and prints the verdict after the secret. Made undumpable first, so
    that the student's code it runs cannot read the secret from this process."""
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)    # PR_SET_DUMPABLE = 4: no ptrace, no /proc/PID/mem, no /proc/PID/fd
    nonce, _, source = sys.stdin.read().partition("\n")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    judge, exercise_id = sys.argv[1], sys.argv[2]
    path = Path(tempfile.mkdtemp()) / "your_cell" / f"{exercise_id}.cu"
    path.parent.mkdir()
    path.write_text(source)
    try:
        module, _, function = judge.partition(":")
        status, message = _verdict_words(getattr(importlib.import_module(module), function)(exercise_id, path))
    except Exception as e:
        status, message = "error", f"the check raised {type(e).__name__}: {e}"
    sys.stdout.flush()
    os.write(1, f"{nonce} {json.dumps({'status': status, 'message': message})}\n".encode())
    os._exit(0)


# The kinds of exercise a notebook's answers come in; a new kind has results(nb, stage, run, sandbox).
KINDS: list = [CheckerCalls(), KernelCells(exercises=tuple((e.stage, e.id) for e in write_it.exercises()))]


# ---- a notebook's grade -------------------------------------------------------------------------------
def stage_of(nb, path: Path) -> str | None:
    """The stage id of a notebook: its title (# 05 · ...) or its file name (05_...)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.match(r"#\s+(\d\d)\b", cell.source)
            if m:
                return m.group(1)
    m = re.match(r"(\d\d)_", Path(path).name)
    return m.group(1) if m else None


def exercise_cells(nb) -> list:
    """The setup cells (code cells before the first section, ## ...), the code cells between them and the
    Exercises heading that call a checker (a stage's prediction, asked before it measures), and every cell
    from the Exercises heading on: what --exercises-only runs."""
    cells, start = list(nb.cells), None
    first_section = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                          and re.search(r"^##\s", c.source, re.M)), len(cells))
    for i, c in enumerate(cells):
        if c.cell_type == "markdown" and EXERCISES_HEADING.search(c.source):
            start = i
    setup = [c for c in cells[:first_section] if c.cell_type == "code"]
    if start is None or start < first_section:
        return setup
    asked = [c for c in cells[first_section:start] if c.cell_type == "code" and checker_calls(c.source)]
    return setup + asked + cells[start:]


def grade(path, timeout: int = 600, exercises_only: bool = False, backend: str | None = None,
          sandbox: sandboxing.Sandbox | None = None, kinds: list | None = None) -> Grade:
    """Runs a student's notebook in the sandbox (every cell, even after one fails) and judges each answer."""
    import nbformat
    path = Path(path)
    start = time.perf_counter()
    mode = "setup and exercise cells" if exercises_only else "all cells"
    try:
        nb = nbformat.read(path, as_version=4)
        if any(not isinstance(c.get("source", ""), str) for c in nb.cells):
            raise ValueError("a cell's source is not text")
    except Exception as e:   # not a notebook, or broken JSON: say so and go on with the others
        return Grade(str(path), None, [], 0.0, mode, f"could not read it: {type(e).__name__}: {e}")
    sandbox = sandbox or sandboxing.Sandbox(backend=backend)
    stage = stage_of(nb, path)
    run = run_notebook(nb, sandbox, timeout, exercises_only)
    results = [r for kind in (KINDS if kinds is None else kinds) for r in kind.results(nb, stage, run, sandbox)]
    return Grade(str(path), stage, results, time.perf_counter() - start, mode, run.problem, run.stopped)

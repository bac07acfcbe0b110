"""Writing the kernel inside the notebook: the cell magic `%%kernel 03` saves the cell to
my_kernels/03.cu at the course's root (git-ignored; TBT_MY_KERNELS names another folder), never
over kernels/, and checks it at once. Line n of the saved file is line n of the cell (line 1 is the
`%%kernel 03` line), so every message's line number is the one the notebook shows.

    from helpers import write_it
    write_it.enable()          # or: %load_ext helpers.course.write_it

    %%kernel 03                # a cell: your kernel, saved and checked when you run it
    %%kernel 03                # the same line alone (or %kernel 03): the saved kernel comes back into the
                               # cell, checked
    %%kernel 05 --from-mine    # alone: your kernel of the exercise before (04), renamed for 05 and headed by
                               # 05's contract, comes into the cell to grow into 05 (the course's 04 where
                               # yours is not saved or does not pass)

The saved file survives a restart of the kernel: `write_it.load("03")` is its source. A cell that still
holds the unchanged starter never overwrites a different saved kernel; a save that replaces one keeps
the one before it as 03.prev.cu. Every check a cell runs goes into the learner's record (record.py).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from helpers.core.kernel_source import same_kernel
from helpers.core.paths import rel
from helpers.course.write_it import record
from helpers.course.write_it.judge import judge
from helpers.course.write_it.registry import ExerciseError, exercise
from helpers.course.write_it.verdict import Verdict

FOLDER_VARIABLE = record.FOLDER_VARIABLE
HEADER = "// %%kernel {id}: saved from a notebook cell; line n of this file is line n of the cell\n"
OPTIONS = ("--from-mine",)


def folder() -> Path:
    """Where saved kernels go: TBT_MY_KERNELS, else my_kernels/ at the course's root."""
    return record.folder()


def saved_path(exercise_id) -> Path:
    return folder() / f"{exercise(exercise_id).id}.cu"


def _body(text: str) -> str:
    return text.split("\n", 1)[1] if text.startswith("// %%kernel") else text


def save(exercise_id, source: str) -> Path:
    """Writes `source` (a cell's body) as the saved kernel of the exercise; returns its path."""
    ex = exercise(exercise_id)
    path = saved_path(ex.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = HEADER.format(id=ex.id) + source.rstrip("\n") + "\n"
    if path.is_file() and not same_kernel(path.read_text(), text):
        path.with_suffix(".prev.cu").write_text(path.read_text())
    path.write_text(text)
    return path


def load(exercise_id) -> str:
    """The saved kernel's source (as the cell held it)."""
    path = saved_path(exercise_id)
    if not path.is_file():
        ex_id = exercise(exercise_id).id
        raise ExerciseError(f"nothing is saved for exercise {ex_id} yet ({rel(path)} does not exist). "
                            f"Fix: run its %%kernel {ex_id} cell, which saves the kernel it holds.")
    return _body(path.read_text())


def checked(exercise_id, path: Path, where: str | None = None, timed: bool = True) -> Verdict:
    """judge(), with the verdict put into the learner's record (the saved kernel's fingerprint and status)."""
    ex = exercise(exercise_id)
    v = judge(ex.id, path, where, timed=timed)
    record.add(ex.id, "check", status=v.status, source=record.fingerprint(_body(Path(path).read_text())))
    return v


def passes(exercise_id) -> tuple[bool, str]:
    """Whether the saved kernel of the exercise passes (as the record knows, else checked now, untimed), and
    the words that say so (its verdict's last line, or why there is none)."""
    ex = exercise(exercise_id)
    path = saved_path(ex.id)
    if not path.is_file():
        return False, f"nothing is saved for exercise {ex.id} yet ({rel(path)})"
    if record.passed(ex.id, load(ex.id)):
        return True, f"your saved kernel {rel(path)} passed its check"
    v = checked(ex.id, path, "your saved kernel", timed=False)
    return v.ok, v.last_line()


def from_mine(exercise_id) -> tuple[str, str]:
    """The start of the exercise grown from the one before it (Exercise.previous): (source, where it came from).
    Yours where it is saved and passes; the course's (its solution, in a copy of the course that holds them)
    where it does not; else this exercise's starter. Renamed for this exercise and headed by its contract."""
    ex = exercise(exercise_id)
    if ex.previous is None:
        raise ExerciseError(f"exercise {ex.id} grows from no other exercise: its %%kernel {ex.id} cell holds its "
                            f"starter (write_it.starter('{ex.id}')).")
    prev = exercise(ex.previous)
    ok, words = passes(prev.id)
    if ok:
        source, origin = load(prev.id), f"yours ({prev.id})"
    elif prev.solution_path.is_file():
        source, origin = prev.solution_path.read_text(), f"the course's {prev.id} (yours: {words})"
    else:
        return ex.starter_path.read_text(), f"the starter (yours of {prev.id}: {words}; this copy holds no solutions)"
    for (old, _), (new, _) in zip(prev.signatures(), ex.signatures()):
        source = re.sub(rf"\b{re.escape(old)}\b", new, source)
    head = [f"Exercise {ex.id} · {ex.title}, grown from {origin}. Its contract:",
            *(line for item in re.sub(r"`|\*\*", "", ex.contract()).splitlines()[2:] for line in
              textwrap.wrap(item, 108, subsequent_indent="  "))]
    return "\n".join(f"// {line}" for line in head) + "\n" + source.lstrip("\n"), origin


def run_cell(line: str, cell: str, shell=None) -> Verdict | None:
    """What `%%kernel ID` does with its cell: save and check it; an empty cell brings the saved kernel
    back (into the cell where the front end allows it) and checks that; `--from-mine` with an empty cell
    brings the kernel of the exercise before it (from_mine)."""
    words = line.split()
    ex = exercise(words[0] if words else "")
    unknown = [w for w in words[1:] if w not in OPTIONS]
    if unknown:
        raise ExerciseError(f"%%kernel {ex.id} does not know {' '.join(unknown)}: it takes "
                            f"{' or '.join(OPTIONS)} (alone on the line, in an empty cell).")
    path = saved_path(ex.id)
    where = "your cell"
    if "--from-mine" in words[1:]:
        if cell.strip():
            raise ExerciseError(f"--from-mine fills an empty cell: leave only `%%kernel {ex.id} --from-mine` in it "
                                f"(what the cell holds now would be lost).")
        source, origin = from_mine(ex.id)
        record.add(ex.id, "start", **{"from": origin})
        print(f"Exercise {ex.id} starts from {origin}{'' if shell else ' (below)'}: make it this exercise's kernel "
              f"(its contract heads the cell), then run the cell to check it.")
        _into_cell(shell, ex.id, source)
        return None
    if not cell.strip():
        if not path.is_file():
            print(f"Nothing is saved for exercise {ex.id} yet: here is the starter. Run the cell to check it.")
            _into_cell(shell, ex.id, ex.starter_path.read_text())
            return None
        print(f"Your saved kernel ({rel(path)}) is back in this cell{'' if shell else ' (below)'}; checking it.")
        _into_cell(shell, ex.id, load(ex.id))
        return checked(ex.id, path, where)
    starter = ex.starter_path.read_text()
    if same_kernel(cell, starter) and path.is_file() and not same_kernel(load(ex.id), starter):
        print(f"This cell holds the starter; your saved kernel {rel(path)} is different and is kept.\n"
              f"To go on from it: leave only the first line, %%kernel {ex.id}, and run the cell. To start over from "
              f"the starter: change anything in this cell, or delete {rel(path)}.")
        return None
    save(ex.id, cell)
    return checked(ex.id, path, where)


def _into_cell(shell, exercise_id: str, source: str) -> None:
    if shell is None:
        print(source)
        return
    shell.set_next_input(f"%%kernel {exercise_id}\n{source.rstrip()}", replace=True)


def _lone_magic(lines: list[str]) -> list[str]:
    """An input transformer: a cell that is only `%%kernel ID [--from-mine]` (IPython refuses a cell magic with
    an empty body) becomes the line magic `%kernel ID ...`, which brings the saved kernel (or the one before)."""
    text = [ln for ln in lines if ln.strip()]
    if len(text) == 1 and LONE.match(text[0]):
        return [text[0].strip()[1:] + "\n"]
    return lines


LONE = re.compile(r"\s*%%kernel\s+\S+(?:\s+--[\w-]+)*\s*$")


def enable(shell=None) -> None:
    """Registers the %%kernel cell magic (and %kernel ID, the same with an empty cell) in this IPython
    session, a notebook's kernel."""
    if shell is None:
        from IPython import get_ipython   # IPython is no part of helpers; a notebook's kernel has it
        shell = get_ipython()
    if shell is None:
        raise ExerciseError("%%kernel is a cell magic of a notebook (IPython), and this is plain Python. "
                            "Fix: check a file with write_it.check('03', 'my.cu'), or run "
                            "`python -m helpers exercise check 03 my.cu`.")

    def kernel(line: str, cell: str | None = None):
        return run_cell(line, cell or "", shell)

    kernel.__doc__ = run_cell.__doc__
    shell.register_magic_function(kernel, magic_kind="line_cell", magic_name="kernel")
    if _lone_magic not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(_lone_magic)

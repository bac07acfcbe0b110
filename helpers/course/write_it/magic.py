"""Writing the kernel inside the notebook: the cell magic `%%kernel 03` saves the cell to
my_kernels/03.cu at the course's root (git-ignored; TBT_MY_KERNELS names another folder), never
over kernels/, and checks it at once. Line n of the saved file is line n of the cell (line 1 is the
`%%kernel 03` line), so every message's line number is the one the notebook shows.

    from helpers import write_it
    write_it.enable()          # or: %load_ext helpers.course.write_it

    %%kernel 03                # a cell: your kernel, saved and checked when you run it
    %%kernel 03                # the same line alone (or %kernel 03): the saved kernel comes back into the
                               # cell, checked

The saved file survives a restart of the kernel: `write_it.load("03")` is its source. A cell that still
holds the unchanged starter never overwrites a different saved kernel; a save that replaces one keeps
the one before it as 03.prev.cu.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from helpers.core.paths import ROOT, rel
from helpers.course.write_it.judge import judge
from helpers.course.write_it.registry import ExerciseError, exercise
from helpers.course.write_it.verdict import Verdict

FOLDER_VARIABLE = "TBT_MY_KERNELS"
HEADER = "// %%kernel {id}: saved from a notebook cell; line n of this file is line n of the cell\n"


def folder() -> Path:
    """Where saved kernels go: TBT_MY_KERNELS, else my_kernels/ at the course's root."""
    return Path(os.environ.get(FOLDER_VARIABLE) or ROOT / "my_kernels")


def saved_path(exercise_id) -> Path:
    return folder() / f"{exercise(exercise_id).id}.cu"


def _body(text: str) -> str:
    return text.split("\n", 1)[1] if text.startswith("// %%kernel") else text


def _same(a: str, b: str) -> bool:
    return [ln.rstrip() for ln in a.strip().splitlines()] == [ln.rstrip() for ln in b.strip().splitlines()]


def save(exercise_id, source: str) -> Path:
    """Writes `source` (a cell's body) as the saved kernel of the exercise; returns its path."""
    ex = exercise(exercise_id)
    path = saved_path(ex.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = HEADER.format(id=ex.id) + source.rstrip("\n") + "\n"
    if path.is_file() and not _same(path.read_text(), text):
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


def run_cell(line: str, cell: str, shell=None) -> Verdict | None:
    """What `%%kernel ID` does with its cell: save and check it; an empty cell brings the saved kernel
    back (into the cell where the front end allows it) and checks that."""
    ex = exercise(line.split()[0] if line.split() else "")
    path = saved_path(ex.id)
    where = "your cell"
    if not cell.strip():
        if not path.is_file():
            print(f"Nothing is saved for exercise {ex.id} yet: here is the starter. Run the cell to check it.")
            _into_cell(shell, ex.id, ex.starter_path.read_text())
            return None
        print(f"Your saved kernel ({rel(path)}) is back in this cell{'' if shell else ' (below)'}; checking it.")
        _into_cell(shell, ex.id, load(ex.id))
        return judge(ex.id, path, where)
    starter = ex.starter_path.read_text()
    if _same(cell, starter) and path.is_file() and not _same(load(ex.id), starter):
        print(f"This cell holds the starter; your saved kernel {rel(path)} is different and is kept.\n"
              f"To go on from it: leave only the first line, %%kernel {ex.id}, and run the cell. To start over from "
              f"the starter: change anything in this cell, or delete {rel(path)}.")
        return None
    save(ex.id, cell)
    return judge(ex.id, path, where)


def _into_cell(shell, exercise_id: str, source: str) -> None:
    if shell is None:
        print(source)
        return
    shell.set_next_input(f"%%kernel {exercise_id}\n{source.rstrip()}", replace=True)


def _lone_magic(lines: list[str]) -> list[str]:
    """An input transformer: a cell that is only `%%kernel ID` (IPython refuses a cell magic with an
    empty body) becomes the line magic `%kernel ID`, which brings the saved kernel back."""
    text = [ln for ln in lines if ln.strip()]
    if len(text) == 1 and LONE.match(text[0]):
        return [text[0].strip()[1:] + "\n"]
    return lines


LONE = re.compile(r"\s*%%kernel\s+\S+\s*$")


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

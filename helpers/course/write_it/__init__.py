"""Write it yourself: in a stage's notebook the learner writes the stage's kernel, and the course's
own instruments judge it (issue "Write it yourself").

In a notebook:

    from helpers import write_it
    write_it.enable()                 # the %%kernel cell magic (or: %load_ext helpers.course.write_it)

    %%kernel 03                       # the next cell: the starter, which the learner completes; running the
    ...                               # cell saves it to my_kernels/03.cu and checks it at once

    write_it.contract("03")           # the contract, as the notebook states it
    write_it.load("03")               # the saved source (it survives a restart)
    write_it.check("03", "my.cu")     # any file; a Verdict, whose last line is the verdict

    %%kernel 05 --from-mine           # alone in a cell: your 04 (the course's where yours is missing), renamed
                                      # and headed by 05's contract, comes into the cell to grow into 05
    write_it.hint("05")               # the next hint: 1 the idea, 2 what each thread computes
    write_it.hint("05", 3)            # the code, only when asked for (recorded)
    write_it.reveal("05")             # the course's kernel and its diff, once your saved 05 passes
    write_it.reveal("05", give_up=True)   # ... or now, recorded as asked before passing
    write_it.side_by_side("05")       # yours beside the course's: diff, lessons, costs, GPU times, reasons
    write_it.ladder()                 # every saved kernel, checked, beside the course's and cuBLAS

What the learner asked for (hints, reveals, where a kernel started) goes into my_kernels/record.json and into
the metadata of what hint() and reveal() display, where a teacher's grader reads it (record.py).

On the command line: `python -m helpers exercise list | starter ID | check ID FILE.cu [--backend cpu|gpu]
| solution ID`.

The check (helpers.course.write_it.judge) stops at the first failure and names the cause, the
learner's line and one hint: the contract (name, signature), NVRTC, the stage's odd-shape catalogue
against float64 (C full of NaN where beta = 0), out-of-bounds accesses, barriers and races, the
stage's lesson measured from the learner's own trace, and on a GPU the time beside the course's
kernel and cuBLAS. A source that still holds TODO blocks and fails is "not done yet".

Adding an exercise (stages 02-12 each have one): three files, nothing else to edit.

1. helpers/course/write_it/stageNN.py (the registry finds every stageNN.py; stageNNb.py for a second
   exercise of a stage) defines

       EXERCISE = Exercise(
           id="04", stage="04", kernel="sgemm_1d", title="1D thread tiling",
           launch=Launch(block=(512,), per_block=(64, 64)),      # grid (ceil(N/64), ceil(M/64))
           rules=("each thread computes 8 consecutive rows of one column of C", ...),
           lesson=lessons.loads_once(...) or your own function (trace, M, N, K) -> Lesson,
           lesson_text="what the lesson check measures, one line",
           course_kernel="04_1d_thread_tiling", course_config={...})   # the registered kernel timed beside it

   Optional fields: sizes (text), shapes (default verify.WRITE_IT_SHAPES: the catalogue and a poisoned C with N a multiple of 4), lesson_size (traced for the lesson,
   block 0; multiples of every tile), lesson_blocks, race_size (traced for races; first, middle and last
   block); hints (levels 1 and 2, in words), previous (the exercise it grows from), headline (the lesson's
   number the ladder shows); for more than one kernel or another signature, kernels and calls (stage11.py,
   stage12.py), gpu_arch, same_bits. A lesson of your own goes in lessons.py if another stage may use it,
   else in stageNN.py.
2. starters/NN.cu: the contract and what is not the lesson as code, the stage's idea left as blocks marked
   `// TODO n: ...` that state goals in words, never an index expression; it must compile and run (the
   notebook's cell runs it and gets "not done yet").
3. solutions/NN.cu: the same file with the TODO blocks written (the teacher's folder: student copies
   of the course leave solutions/ out).

Then the notebook: a "Your turn" section in its Exercises part with `write_it.contract("NN")`'s text,
`write_it.enable()` and a `%%kernel NN` cell holding starters/NN.cu exactly (tests/course/
test_write_it.py checks each registered exercise: the solution passes, the starter does not, the
solution without its __syncthreads() does not, and the notebook states the contract and holds the starter).
"""

from __future__ import annotations

from helpers.core.markdown import Markdown
from helpers.course.write_it.judge import judge
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.course.write_it.hints import hint
from helpers.course.write_it.judge import TIME_SIZE
from helpers.course.write_it.ladder import ladder
from helpers.course.write_it.magic import enable, folder, from_mine, load, run_cell, save, saved_path
from helpers.course.write_it.registry import EXERCISES, ExerciseError, exercise, exercises
from helpers.course.write_it.reveal import reveal, side_by_side
from helpers.course.write_it.verdict import Verdict

__all__ = ["EXERCISES", "TIME_SIZE", "Exercise", "ExerciseError", "Launch", "Lesson", "Verdict", "check", "contract", "enable",
           "exercise", "exercises", "folder", "from_mine", "hint", "ladder", "load", "load_ipython_extension",
           "reveal", "run_cell", "save", "saved_path", "side_by_side", "solution", "starter"]


def check(exercise_id, path=None) -> Verdict:
    """Checks the kernel in `path` (default: the one the %%kernel cell saved) against the exercise."""
    return judge(exercise_id, saved_path(exercise_id) if path is None else path)


def contract(exercise_id) -> Markdown:
    return Markdown(exercise(exercise_id).contract())


def starter(exercise_id) -> str:
    return exercise(exercise_id).starter_path.read_text()


def solution(exercise_id) -> str:
    path = exercise(exercise_id).solution_path
    if not path.is_file():
        raise ExerciseError(f"this copy of the course holds no solutions ({path.parent} is not there): "
                            f"a teacher's copy does.")
    return path.read_text()


def load_ipython_extension(shell) -> None:
    """`%load_ext helpers.course.write_it` registers the %%kernel cell magic."""
    enable(shell)

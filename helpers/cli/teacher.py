"""`python -m helpers teacher ...`: copies of the notebooks to hand out or to keep, and a grader (helpers.teach).

    python -m helpers teacher student-copies OUTDIR [NOTEBOOK ...] [--no-hints] [--no-outputs]
    python -m helpers teacher teacher-copies OUTDIR [NOTEBOOK ...]
    python -m helpers teacher grade STUDENT.ipynb [...] [--exercises-only] [--json F] [--csv F] [--points F]
                                    [--jobs N] [--container | --no-sandbox]
    python -m helpers teacher export gradescope|prairielearn OUT [NOTEBOOK ...] | autograde | points FILE

What an answer is here: every checked exercise is one call of a checker in a code cell,
`check_05_exercise_1(("?", "?"))`; the learner replaces the placeholders with an answer. The
solutions are not in the notebooks: helpers/course/exercises/solutions/ registers them (SOLUTIONS),
computed the way the checkers compute their answers, in a folder the grader's sandbox leaves out.

- A **student copy** has every checker call back on its placeholder (whatever answer the source
  notebook held), the checkers and everything else kept, and by default the outputs of the cells
  marked # NBVAL_CHECK_OUTPUT (what a correct run prints; the copy still passes nbval), except in
  the cells the stage's prediction asks about (the rest of its section, its performance section): those answer it, so
  they come without outputs (and without the nbval mark), for the learner to run after predicting.
  With --no-hints the <details> hints go; with --no-outputs every output goes.
- A **teacher copy** has the right answer in every checker call, computed on this machine (stage
  01's cache exercise depends on the CPU), and a note at the top saying it is not for students.
- **grade** runs each student's notebook in a sandbox (helpers/teach/sandbox.py: bubblewrap, no
  network, writes only to temporary folders, limits on time, memory and processes), in a fresh kernel
  on this machine's backend, every cell even after one fails (a timed-out cell is interrupted), and
  judges each answer in this process from what the student wrote (helpers/teach/grading/): right,
  wrong, not attempted (the placeholder is still there, or the call is gone) or error (its cell
  raised before the checker's call). --time-limit covers a notebook's run and its %%kernel cells'
  checks together. Each notebook's grade is printed, and --json/--csv written again, as soon as it is
  known: a run stopped halfway (Ctrl-C: exit status 130) keeps every grade it made. Without
  bubblewrap it refuses, unless --container (in a container that is the isolation, as root: every
  other guard kept, helpers/teach/container.py) or --no-sandbox. --jobs N grades N at a time;
  --points FILE scores each exercise (helpers/teach/points.py).
- **export** writes an autograder for Gradescope (autograder.zip) or PrairieLearn (an image and
  question folders); **autograde** is what it runs; **points** writes the default points to edit
  (helpers/cli/teacher_lms.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.cli import teacher_lms
from helpers.cli.commands import whole_arg
from helpers.core import progress
from helpers.core.paths import NOTEBOOKS
from helpers.teach import container, copies, points
from helpers.teach.grading import notebook, parallel, results
from helpers.teach.sandbox import Limits, Sandbox


def add_parser(sub) -> None:
    t = sub.add_parser("teacher", help="student and teacher copies of the notebooks; grade students' notebooks",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    tsub = t.add_subparsers(dest="teacher_command", required=True)
    s = tsub.add_parser("student-copies", help="copies to hand out: answers back on their placeholders")
    s.add_argument("outdir", type=Path)
    s.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    s.add_argument("--no-hints", action="store_true", help="remove the <details> hints")
    s.add_argument("--no-outputs", action="store_true",
                   help="clear every output (default: keep the outputs of the # NBVAL_CHECK_OUTPUT cells)")
    c = tsub.add_parser("teacher-copies", help="copies with the right answer in every exercise cell")
    c.add_argument("outdir", type=Path)
    c.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    g = tsub.add_parser("grade", help="execute students' notebooks and report each exercise's verdict")
    g.add_argument("notebooks", nargs="+", type=Path)
    g.add_argument("--timeout", type=lambda t: whole_arg(t, "--timeout", 1), default=600,
                   help="seconds a cell may run before it is interrupted")
    g.add_argument("--exercises-only", action="store_true",
                   help="run only the setup cells and the Exercises section (faster; an answer that uses a "
                        "variable from an earlier section then fails as an error)")
    g.add_argument("--json", type=Path, help="also write the grades to this JSON file")
    g.add_argument("--csv", type=Path, help="also write one row per exercise to this CSV file")
    g.add_argument("--backend", choices=("cpu", "gpu"), help="the backend of the students' kernels")
    g.add_argument("--time-limit", type=lambda t: whole_arg(t, "--time-limit", 1), default=3600,
                   help="seconds one notebook may take in all, its run and its %%%%kernel cells' checks together "
                        "(and of CPU per process), before it is stopped")
    how = g.add_mutually_exclusive_group()
    how.add_argument("--no-sandbox", action="store_true",
                     help="run the notebooks without bubblewrap, with your rights, network and files: only for "
                          "notebooks you trust (the answers are still judged here, from what the notebook wrote)")
    how.add_argument("--container", action="store_true",
                     help="in a container that is the isolation (no user namespaces for bubblewrap), as root: "
                          "students' code runs as an unprivileged uid, every other guard kept (docs/grading.md)")
    g.add_argument("--jobs", type=lambda t: whole_arg(t, "--jobs", 1), default=1,
                   help="notebooks graded at a time (each takes about one core)")
    g.add_argument("--points", type=Path, help="score each exercise with this points file "
                                               "(python -m helpers teacher points FILE writes the defaults)")
    teacher_lms.add_parsers(tsub)


def main(args) -> int:
    done = teacher_lms.main(args)
    if done is not None:
        return done
    if args.teacher_command in ("student-copies", "teacher-copies"):
        notebooks = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
        absent = [str(p) for p in notebooks if not Path(p).is_file()]
        if absent:
            print(f"error: no such notebook: {', '.join(absent)}", file=sys.stderr)
            return 2
        if args.teacher_command == "student-copies":
            written = copies.write_copies("student", args.outdir, notebooks, hints=not args.no_hints,
                                   outputs=not args.no_outputs)
        else:
            written = copies.write_copies("teacher", args.outdir, notebooks)
        print(f"wrote {len(written)} {args.teacher_command.split('-')[0]} cop{'y' if len(written) == 1 else 'ies'} "
              f"to {args.outdir}")
        return 0
    absent = [str(p) for p in args.notebooks if not Path(p).is_file()]
    if absent:
        print(f"error: no such notebook: {', '.join(absent)}", file=sys.stderr)
        return 2
    if args.no_sandbox:
        print("warning: --no-sandbox: each student's notebook runs with your rights, your network and your files, "
              "and can change them and the course (its checkers included) for every grade after it. Grade only "
              "notebooks you trust this way.", file=sys.stderr)
    for out in (args.json, args.csv):
        if out is not None and not out.parent.is_dir():
            print(f"error: {out}: the folder {out.parent} does not exist", file=sys.stderr)
            return 2
    try:
        table = points.load(args.points) if args.points else None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    limits = Limits(wall_s=args.time_limit, cpu_s=args.time_limit)
    # no bubblewrap, or --container where its guards cannot hold: SandboxUnavailableError, naming the fix
    boxes = [Sandbox(limits, enabled=not args.no_sandbox, backend=args.backend, in_container=args.container,
                     uid=container.SANDBOX_UID - job) for job in range(args.jobs if args.container else 1)]
    if args.container:
        print(f"Grading in {container.describe()}", file=sys.stderr)
    written = results.Written(args.json, args.csv, table)

    def grade_one(path, job):
        return notebook.grade(path, args.timeout, args.exercises_only, args.backend, boxes[min(job, len(boxes) - 1)])
    try:    # each notebook's grade printed and written as soon as it is known: a run stopped keeps them
        bar = progress.bar(total=len(args.notebooks), desc="grading", unit="notebook")
        for grade in parallel.grade_all(args.notebooks, grade_one, args.jobs):
            written.add(grade)
            print(results.report_one(grade) + written.score_line(grade), flush=True)
            bar.update()
        bar.close()
    except KeyboardInterrupt:
        where = " and ".join(str(p) for p in (args.json, args.csv) if p)
        print(f"interrupted: {len(written.grades)} of {len(args.notebooks)} notebooks graded"
              + (f", their grades in {where}" if where else ""), file=sys.stderr)
        return 130
    if len(written.grades) > 1:
        print(results.summary(written.grades), end="")
    return 0

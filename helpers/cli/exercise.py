"""`python -m helpers exercise ...`: the "write it yourself" exercises (helpers.course.write_it).

    python -m helpers exercise list                          id, stage, kernel and launch shape of each
    python -m helpers exercise starter 03 > my.cu            the starter to complete
    python -m helpers exercise check 03 my.cu [--backend cpu|gpu]
                                                             the check; exit status 0 if and only if it
                                                             passes, the verdict on the last line
    python -m helpers exercise solution 03                   the solution (a teacher's copy of the course)
"""

from __future__ import annotations

import argparse

from helpers.course import write_it

EXIT_NOT_PASSED = 1


def add_parser(sub) -> None:
    ex = sub.add_parser("exercise", help="write a stage's kernel yourself: starters, checks, solutions",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    esub = ex.add_subparsers(dest="exercise_command", required=True)
    esub.add_parser("list", help="every exercise: id, stage, kernel name, launch shape")
    ids = sorted(write_it.EXERCISES)
    for name, what in (("starter", "print the starter .cu"), ("solution", "print the solution .cu")):
        one = esub.add_parser(name, help=what)
        one.add_argument("id", choices=ids, metavar="ID", help=f"the exercise: {', '.join(ids)}")
    chk = esub.add_parser("check", help="check your kernel: exit status 0 if and only if it passes")
    chk.add_argument("id", choices=ids, metavar="ID", help=f"the exercise: {', '.join(ids)}")
    chk.add_argument("file", help="your .cu file")
    chk.add_argument("--backend", choices=("cpu", "gpu"), help="default: the GPU when CuPy sees one")


def main(args) -> int:
    command = args.exercise_command
    if command == "list":
        for ex in write_it.exercises():
            print(ex.summary())
        return 0
    if command == "starter":
        print(write_it.starter(args.id), end="")
        return 0
    if command == "solution":
        print(write_it.solution(args.id), end="")
        return 0
    verdict = write_it.check(args.id, args.file)
    print(verdict)
    return 0 if verdict.ok else EXIT_NOT_PASSED

"""`python -m helpers teacher export|autograde|points`: autograders for Gradescope and PrairieLearn, and the
points table (helpers/teach/lms/, helpers/teach/points.py; docs/grading.md).

    python -m helpers teacher export gradescope OUT [NOTEBOOK ...] [--points FILE] [--time-limit S] [--all-cells]
    python -m helpers teacher export prairielearn OUT [NOTEBOOK ...] --image NAME [--points FILE] ...
    python -m helpers teacher autograde gradescope|prairielearn [--root DIR]   (what the exported autograder runs)
    python -m helpers teacher points FILE                                       (the default points, to edit)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from helpers.cli.commands import whole_arg
from helpers.core.paths import NOTEBOOKS
from helpers.teach import points
from helpers.teach.lms import bundle, gradescope, prairielearn

ROOTS = {"gradescope": ("AUTOGRADER_ROOT", "/autograder"), "prairielearn": ("GRADE_ROOT", "/grade")}


def add_parsers(tsub) -> None:
    e = tsub.add_parser("export", help="an autograder for Gradescope or PrairieLearn (CPU-only containers)")
    e.add_argument("lms", choices=("gradescope", "prairielearn"))
    e.add_argument("outdir", type=Path)
    e.add_argument("notebooks", nargs="*", type=Path, help="the notebooks a submission hands in (default: 02-12)")
    e.add_argument("--points", type=Path, help="a points file (python -m helpers teacher points FILE writes one)")
    e.add_argument("--time-limit", type=lambda t: whole_arg(t, "--time-limit", 30), default=540,
                   help="seconds per notebook, its run and its kernel cells' checks together (default 540: "
                        "Gradescope's 10 minutes less the start)")
    e.add_argument("--all-cells", action="store_true",
                   help="run every cell of a notebook, not only its setup and Exercises cells (minutes longer)")
    e.add_argument("--image", default="YOURNAME/tile-by-tile-grader",
                   help="prairielearn: the grading image's name, as you push it (OUT/image/Dockerfile builds it)")
    a = tsub.add_parser("autograde", help="what an exported autograder runs for one submission")
    a.add_argument("lms", choices=("gradescope", "prairielearn"))
    a.add_argument("--root", type=Path, help="the grading root (default: $AUTOGRADER_ROOT or /autograder for "
                                             "gradescope, $GRADE_ROOT or /grade for prairielearn)")
    p = tsub.add_parser("points", help="write the default points per exercise to a file to edit")
    p.add_argument("file", type=Path)


def main(args) -> int | None:
    """The command's exit status, or None where it is not one of these."""
    if args.teacher_command == "points":
        args.file.write_text(points.as_toml(points.defaults()))
        print(f"wrote the default points to {args.file}: edit it, then pass --points {args.file}")
        return 0
    if args.teacher_command == "autograde":
        variable, default = ROOTS[args.lms]
        root = args.root or Path(os.environ.get(variable) or default)
        return (gradescope if args.lms == "gradescope" else prairielearn).autograde(root)
    if args.teacher_command != "export":
        return None
    notebooks = args.notebooks or [p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p.name[:2] >= "02"]
    absent = [str(p) for p in notebooks if not Path(p).is_file()]
    if absent:
        print(f"error: no such notebook: {', '.join(absent)}", file=sys.stderr)
        return 2
    try:
        names = bundle.stages_of(notebooks)
        settings = bundle.Settings(list(names), time_limit=args.time_limit,
                                   exercises_only=not args.all_cells)
        if args.points:
            points.load(args.points)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.lms == "gradescope":
        path = gradescope.export(args.outdir, settings, args.points)
        print(f"wrote {path} (stages {', '.join(settings.stages)}): try it with AUTOGRADER_ROOT (docs/grading.md), "
              f"then upload it as the assignment's autograder")
    else:
        folders = prairielearn.export(args.outdir, settings, names, args.image, args.points)
        print(f"wrote {args.outdir / 'image'} (build and push it as {args.image}) and {len(folders)} question "
              f"folder{'s' * (len(folders) != 1)} in {args.outdir / 'questions'}")
    return 0

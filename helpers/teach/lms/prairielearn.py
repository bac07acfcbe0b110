"""PrairieLearn: `teacher export prairielearn OUT [NOTEBOOK ...]` writes an image to build and one question
folder per notebook, and what the image's grader runs for each submission (autograde).

    OUT/image/Dockerfile, OUT/image/course/   the grading image: the course (as bundle.py carries it) and its
                                              packages; its entrypoint /opt/tile-by-tile/run_prairielearn
    OUT/questions/tile-by-tile-NN/            info.json (externalGradingOptions: the image, the entrypoint,
                                              the timeout), question.html (a file upload), and settings.json
                                              in its tests folder (the stage)

PrairieLearn mounts the student's files at /grade/student and the question's tests/ at /grade/tests, runs the
entrypoint as root with no network, and reads /grade/results/results.json: "gradable", "score" in [0, 1],
"message", "output", "tests" (each "name", "points", "max_points", "output"). A kernel cell that NVRTC refuses
makes the submission not gradable, with the compiler's message (the student fixes it without losing an
attempt). `GRADE_ROOT` moves /grade.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

from helpers.teach import points
from helpers.teach.grading.results import printable
from helpers.teach.lms import bundle

IMAGE_ROOT = "/opt/tile-by-tile"
TIMEOUT_MAX = 600               # PrairieLearn's limit on externalGradingOptions.timeout

DOCKERFILE = f"""# The grading image of the Tile by Tile questions: build and push it, then name it in each
# question's info.json (docker build -t YOURNAME/tile-by-tile-grader . && docker push YOURNAME/tile-by-tile-grader).
FROM ubuntu:24.04
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq && apt-get install -y -qq python3 python3-venv g++ util-linux >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
COPY course {IMAGE_ROOT}/course
RUN python3 -m venv {IMAGE_ROOT}/venv \\
 && {IMAGE_ROOT}/venv/bin/pip install -q --no-cache-dir -r {IMAGE_ROOT}/course/requirements.txt \\
 && chmod -R a+rX,go-w {IMAGE_ROOT} && chmod 755 {IMAGE_ROOT}/course/run_prairielearn
"""

RUN = r"""#!/usr/bin/env bash
# PrairieLearn's entrypoint: grades the notebook under $GRADE_ROOT/student (GRADE_ROOT: default /grade) and writes
# $GRADE_ROOT/results/results.json. The course is this script's folder; its Python the venv beside it.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="$HERE/../venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
cd "$HERE" && exec "$PY" -m helpers teacher autograde prairielearn --root "${GRADE_ROOT:-/grade}"
"""

QUESTION = """<pl-question-panel>
<p>Hand in your notebook <code>{name}</code> (stage {stage} of Tile by Tile), run to its end: every exercise cell
and your <code>%%kernel {stage}</code> cell. It is graded on the CPU emulator, like your notebook without a GPU.</p>
</pl-question-panel>
<pl-file-upload file-names="{name}"></pl-file-upload>
<pl-submission-panel><pl-external-grader-results></pl-external-grader-results><pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def export(out: Path, settings: bundle.Settings, names: dict[str, str], image: str,
           points_file: Path | None = None) -> list[Path]:
    """Writes OUT/image and a question per stage (names: stage -> the notebook's file name); returns the folders."""
    course = out / "image" / "course"
    bundle.copy_course(course)
    bundle.write_settings(course, settings, points_file)
    (course / "run_prairielearn").write_text(RUN)
    (course / "run_prairielearn").chmod(0o755)
    (out / "image" / "Dockerfile").write_text(DOCKERFILE)
    folders = []
    for stage in settings.stages:
        q = out / "questions" / f"tile-by-tile-{stage}"
        (q / "tests").mkdir(parents=True, exist_ok=True)
        info = {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"tile-by-tile/question/{stage}")),
                "title": f"Tile by Tile {stage}: {names.get(stage, 'the notebook')}", "topic": "CUDA SGEMM",
                "tags": ["tile-by-tile", f"stage-{stage}"], "type": "v3", "singleVariant": True,
                "gradingMethod": "External",
                "externalGradingOptions": {"enabled": True, "image": image,
                                           "entrypoint": f"{IMAGE_ROOT}/course/run_prairielearn",
                                           "timeout": min(TIMEOUT_MAX, settings.time_limit + 60)}}
        (q / "info.json").write_text(json.dumps(info, indent=2) + "\n")
        (q / "question.html").write_text(QUESTION.format(name=names.get(stage, f"{stage}_*.ipynb"), stage=stage))
        (q / "tests" / "settings.json").write_text(json.dumps({"stages": [stage]}) + "\n")
        folders.append(q)
    return folders


def compile_error(grades: list[dict]) -> str | None:
    """The compiler's message where a kernel cell failed at "compiles" (NVRTC refused it), else None."""
    for g in grades:
        for e in g.get("exercises", []):
            failed = [s for s in e.get("steps") or [] if isinstance(s, dict) and s.get("step") == "compiles"
                      and s.get("ok") is False]
            if failed:
                lines = "\n".join(str(x) for x in failed[0].get("lines", []))
                return f"{e.get('check')}: NVRTC does not compile it:\n{lines or e.get('message')}"
    return None


def results(grades: list[dict], table: dict, note: str, gpu: bool = False) -> dict:
    """PrairieLearn's results.json for one submission's grades."""
    refused = compile_error(grades)
    if refused:
        return {"gradable": False, "message": printable(refused.split("\n", 1)[0]), "output": refused}
    tests = [{"name": s.name, "points": s.score, "max_points": s.max_score, "output": s.output,
              "message": s.output.split("\n", 1)[0]}
             for g in grades for s in points.score(g, table, gpu)]
    earned, most = sum(t["points"] for t in tests), sum(t["max_points"] for t in tests)
    problems = [f"{g['notebook']}: {printable(g['problem'])}" for g in grades if g.get("problem")]
    return {"gradable": True, "score": earned / most if most else 0.0, "message": note,
            "output": "\n".join([note, *problems]), "tests": tests}


def autograde(root: Path) -> int:
    """What the entrypoint runs: grades ROOT/student, writes ROOT/results/results.json (always: a grading that
    could not run says why, not gradable)."""
    course = Path.cwd()
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        settings = bundle.Settings.read(course)
        question = bundle.read_json(root / "tests" / "settings.json") or {}
        if isinstance(question.get("stages"), list):
            settings = dataclasses.replace(settings, stages=[str(s) for s in question["stages"]])
        table = points.load(course / bundle.POINTS)
        grades, note = bundle.grade_folder(root / "student", settings)
        data = results(grades, table, note, gpu=settings.backend == "gpu")
    except Exception as e:
        data = {"gradable": False, "message": f"The autograder failed ({type(e).__name__}: "
                                              f"{printable(str(e))[:500]}); tell your teacher."}
    bundle.write_json(out, data)
    print(data.get("message", ""))
    return 0

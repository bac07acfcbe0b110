"""Gradescope: `teacher export gradescope OUT [NOTEBOOK ...]` writes OUT/autograder.zip, and what its
run_autograder runs for each submission (autograde).

Gradescope unzips the archive into /autograder/source and runs setup.sh once (building the image: Python 3.11+,
g++, the course's packages in /autograder/venv), then run_autograder per submission, as root, with the files a
student handed in under /autograder/submission; it reads /autograder/results/results.json: "score", "output",
"tests" (each "name", "score", "max_score", "status", "output", "visibility"), "execution_time". One test per
exercise, with the checker's feedback (or a kernel check's steps and their points) as its output.
`AUTOGRADER_ROOT` moves /autograder, so a teacher tries the autograder before uploading it.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
import zipfile
from pathlib import Path

from helpers.teach import points
from helpers.teach.grading.results import printable
from helpers.teach.lms import bundle

SETUP = r"""#!/usr/bin/env bash
# Gradescope runs this once, building the autograder's image (Ubuntu): Python 3.11+, g++ (the CPU emulator
# compiles the students' kernels), and the course's packages in $ROOT/venv. AUTOGRADER_ROOT moves /autograder.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
export DEBIAN_FRONTEND=noninteractive
PY=""
for v in python3.13 python3.12 python3.11; do command -v "$v" >/dev/null && { PY="$v"; break; }; done
if [ -z "$PY" ] || ! command -v g++ >/dev/null || ! command -v setpriv >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq g++ util-linux python3-venv >/dev/null
  if [ -z "$PY" ]; then
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null || {
      apt-get install -y -qq software-properties-common >/dev/null
      add-apt-repository -y ppa:deadsnakes/ppa && apt-get update -qq
      apt-get install -y -qq python3.11 python3.11-venv >/dev/null; }
    PY=python3.11
  fi
fi
"$PY" -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/source/requirements.txt"
# the course is read-only to the students' code (it runs as uid 65534), and readable by it
chmod -R a+rX,go-w "$ROOT/source" "$ROOT/venv"
"""

RUN = r"""#!/usr/bin/env bash
# Gradescope runs this for each submission: the notebooks under $ROOT/submission are graded in container mode
# (the students' code as an unprivileged user, on the CPU emulator) and $ROOT/results/results.json written.
# AUTOGRADER_ROOT moves /autograder (try the autograder on your machine: docs/grading.md).
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="$ROOT/venv/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
cd "$ROOT/source" && exec "$PY" -m helpers teacher autograde gradescope --root "$ROOT"
"""


def export(out: Path, settings: bundle.Settings, points_file: Path | None = None) -> Path:
    """Writes OUT/autograder.zip (and nothing else); returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    zip_path = out / "autograder.zip"
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp)
        bundle.copy_course(course)
        bundle.write_settings(course, settings, points_file)
        (course / "setup.sh").write_text(SETUP)
        (course / "run_autograder").write_text(RUN)
        part = zip_path.with_name(".autograder.zip.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(course.rglob("*")):   # folders too: the solutions' stay, empty
                name = str(path.relative_to(course)) + ("/" if path.is_dir() else "")
                info = zipfile.ZipInfo(name, time.localtime(path.stat().st_mtime)[:6])
                executable = path.is_dir() or path.name in ("setup.sh", "run_autograder")
                info.external_attr = ((0o755 if executable else 0o644) | (stat.S_IFDIR if path.is_dir()
                                                                            else stat.S_IFREG)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, b"" if path.is_dir() else path.read_bytes())
        os.replace(part, zip_path)
    return zip_path


def results(grades: list[dict], table: dict, note: str, seconds: float, gpu: bool = False) -> dict:
    """Gradescope's results.json for one submission's grades."""
    tests, problems = [], []
    for g in grades:
        for s in points.score(g, table, gpu):
            tests.append({"name": s.name, "score": s.score, "max_score": s.max_score, "output": s.output,
                          "status": "passed" if s.status == "right" else "failed", "visibility": "visible"})
        problems += [f"{g['notebook']}: {printable(g['problem'])}"] if g.get("problem") else []
        problems += [f"{g['notebook']}: stopped by the sandbox: {printable(s)}" for s in g.get("stopped", [])]
    student = next((g.get("student") for g in grades if g.get("student")), None)
    output = "\n".join([f"Student: {printable(student)}." if student else "", note, *problems]).strip()
    return {"score": sum(t["score"] for t in tests), "output": output, "tests": tests,
            "execution_time": round(seconds), "stdout_visibility": "hidden"}


def autograde(root: Path) -> int:
    """What run_autograder runs: grades ROOT/submission with ROOT/source's settings, writes ROOT/results/results.json.
    Whatever happens, a results file is written (a grading that could not run says why, with no points)."""
    start = time.perf_counter()
    course = root / "source"
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        settings = bundle.Settings.read(course)
        table = points.load(course / bundle.POINTS)
        metadata = bundle.read_json(root / "submission_metadata.json")
        grades, note = bundle.grade_folder(root / "submission", settings, bundle.student_from(metadata))
        data = results(grades, table, note, time.perf_counter() - start, gpu=settings.backend == "gpu")
    except Exception as e:     # a grader bug, or an export damaged: say so in Gradescope, never a silent zero
        data = {"score": 0, "tests": [], "execution_time": round(time.perf_counter() - start),
                "output": f"The autograder failed ({type(e).__name__}: {printable(str(e))[:500]}); tell your "
                          f"teacher. Nothing was graded."}
    bundle.write_json(out, data)
    print(data.get("output", ""))
    return 0


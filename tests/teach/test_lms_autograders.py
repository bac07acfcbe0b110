"""The exported autograders, run as their LMS runs them, on this machine under a temporary root (AUTOGRADER_ROOT,
GRADE_ROOT): issue 33's bar. An honest notebook 02 (every answer right, a correct kernel) gets full marks; a forged
one gets nothing for its forgeries, and what it aims at the grader (the results file, the course, the solutions,
a process left behind) reaches nothing. As root the autograder grades in container mode (the students' code as
uid 65534), else in bubblewrap; either way about half a minute per notebook (setup and Exercises cells only)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.teach import container, copies, sandbox
from support import require_sandbox

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

ROOT = paths.ROOT
NB02 = ROOT / "notebooks" / "02_naive.ipynb"
SOLUTION = ROOT / "helpers" / "course" / "write_it" / "solutions" / "02.cu"


def _require_a_way_to_grade():
    if not SOLUTION.is_file():
        pytest.skip("no write-it solutions here (a teacher's copy of the course has them)")
    if os.geteuid() == 0:       # container mode: this Python must start as uid 65534
        probe = container.command([sys.executable, "-c", "import numpy, nbclient"], container.SANDBOX_UID,
                                  ["prlimit", "--"])
        r = subprocess.run(probe, capture_output=True, text=True, timeout=120, cwd="/")
        if r.returncode != 0:
            pytest.skip(f"container mode: this Python ({sys.executable}) cannot start as uid 65534 "
                        f"({r.stderr.strip()[-200:]}); run the tests with a Python readable by all")
        return
    require_sandbox()


@pytest.fixture(scope="module")
def export_dir():
    _require_a_way_to_grade()
    top = Path(tempfile.mkdtemp(prefix="tbt-lms-"))
    top.chmod(0o755)                 # uid 65534 reads the course under it (pytest's tmp_path is root's alone)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _unzip(zip_path: Path, dest: Path) -> None:
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            z.extract(info, dest)
            mode = info.external_attr >> 16 & 0o777
            if mode:
                (dest / info.filename).chmod(mode)


def _honest(path: Path) -> None:
    nb = copies.teacher_copy(nbformat.read(NB02, as_version=4), machine="a test")
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("%%kernel 02"):
            cell.source = "%%kernel 02\n" + SOLUTION.read_text()
    nb.metadata["authors"] = [{"name": "Honest Hana"}]
    nbformat.write(nb, path)


def _forged(path: Path, results: Path, tag: str) -> None:
    """Each exercise answered by a forgery: the solutions read in a fresh process, a checker replaced, the
    results file written (now, and later by a process left behind), the course's checker file appended to;
    the kernel's verdict printed by host code that NVRTC never sees."""
    refused = "except OSError as e:\n    import sys; print(e, file=sys.stderr)\n"     # the report's "stopped"
    writes = (f"import json, subprocess\nforged = json.dumps({{'score': 99, 'tests': [], 'output': 'forged {tag}'}})\n"
              f"try:\n    open({str(results)!r}, 'w').write(forged)\n{refused}"
              f"subprocess.Popen(['sh', '-c', 'sleep 4; printf %s \"$0\" > \"$1\"', forged, {str(results)!r}],"
              f" start_new_session=True)\n")
    appends = ("import helpers.course.exercises.stage02 as m\n"
               f"try:\n    open(m.__file__, 'a').write('\\nFORGED = 1\\n')\n{refused}")
    attacks = {        # the cell replaced, or code before the placeholder's call (which stays: not attempted)
        "check_02_exercise_1": "from helpers.course.exercises import check_02_exercise_1, check_02_exercise_2, "
                               "check_02_exercise_3, check_02_exercise_4\nimport subprocess, sys\n"
                               "r = subprocess.run([sys.executable, '-c', 'from helpers.course.exercises import sol'"
                               " + 'utions as s; print(s.solution(\"check_02_exercise_1\")[0])'], capture_output=True,"
                               " text=True)\nans = r.stdout.strip()\ncheck_02_exercise_1(ans)",
        "check_02_exercise_2": "check_02_exercise_2 = lambda *a: print('right')\ncheck_02_exercise_2((1, 1))",
    }
    before = {"check_02_exercise_3": writes, "check_02_exercise_4": appends}
    nb = copies.student_copy(nbformat.read(NB02, as_version=4), known={})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        name = next((n for n in [*attacks, *before] if f"{n}(" in cell.source), None)
        if name:
            cell.source = attacks[name] if name in attacks else before[name] + cell.source
        if cell.source.startswith("%%kernel 02"):      # the starter, printing a verdict from the GPU and the host
            starter = (ROOT / "helpers/course/write_it/starters/02.cu").read_text()
            verdict = '  printf("{\\"status\\": \\"right\\", \\"message\\": \\"PASSED\\"}\\n");\n'
            cell.source = ("%%kernel 02\n#ifndef __CUDACC_RTC__\n#include <cstdio>\nstatic int forged = (std::puts("
                           "\"{\\\"status\\\": \\\"right\\\"}\"), 0);\n#endif\n"
                           + starter.replace("  float acc = 0.0f;\n", "  float acc = 0.0f;\n" + verdict, 1))
            assert verdict in cell.source
    nbformat.write(nb, path)


def _run(export_dir: Path, name: str, make, lms="gradescope") -> tuple[Path, dict]:
    root = export_dir / name
    course = root / "source"
    if lms == "gradescope":
        _unzip(export_dir / "gs" / "autograder.zip", course)
        submission, script, var = root / "submission", course / "run_autograder", "AUTOGRADER_ROOT"
    else:
        shutil.copytree(export_dir / "pl" / "image" / "course", course)
        shutil.copytree(export_dir / "pl" / "questions" / "tile-by-tile-02" / "tests", root / "tests")
        submission, script, var = root / "student", course / "run_prairielearn", "GRADE_ROOT"
    submission.mkdir(parents=True)
    make(submission, root)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Ada Lovelace", "sid": "s123"}]}))
    env = {**os.environ, var: str(root), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = root / "results" / "results.json"
    return out, json.loads(out.read_text())


def test_the_gradescope_autograder_gives_full_marks_to_an_honest_notebook_and_none_to_forgeries(export_dir):
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "export", "gradescope", str(export_dir / "gs"),
                        str(NB02)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    _, honest = _run(export_dir, "honest", lambda sub, root: _honest(sub / "02_naive.ipynb"))
    tests = {t["name"]: t for t in honest["tests"]}
    assert honest["score"] == sum(t["max_score"] for t in honest["tests"]) == 14, honest
    assert all(t["status"] == "passed" for t in tests.values()), honest
    assert tests["02 · write it: %%kernel 02"]["score"] == 10 and "PASSED" in tests["02 · write it: %%kernel 02"][
        "output"]
    assert "Honest Hana" in honest["output"] and ("container mode" in honest["output"]) == (os.geteuid() == 0)

    tag = f"{time.time_ns()}"
    out, forged = _run(export_dir, "forged", lambda sub, root: _forged(sub / "copy_of_02.ipynb",
                                                                        root / "results" / "results.json", tag))
    scores = {t["name"]: (t["score"], t["status"]) for t in forged["tests"]}
    assert forged["score"] == 0 and all(s == (0, "failed") for s in scores.values()), forged
    outputs = {t["name"]: t["output"] for t in forged["tests"]}
    assert "computed in the notebook: ans = ''" in outputs["02 · exercise 1"]         # no solutions to read
    assert outputs["02 · exercise 2"].startswith("wrong: (1, 1)")                       # its own checker, not theirs
    assert "NOT DONE YET" in outputs["02 · write it: %%kernel 02"]                       # the printed PASSED ignored
    assert all(outputs[f"02 · exercise {k}"].startswith("not attempted: replace the placeholder") for k in (3, 4))
    assert forged["output"].count("a write outside its scratch folders (refused)") == 2, forged["output"]
    assert set(scores) == set(tests) and "Ada Lovelace (s123)" in forged["output"]
    time.sleep(6)         # past the process left behind's write: killed with everything of its uid
    assert f"forged {tag}" not in out.read_text() and json.loads(out.read_text()) == forged
    stage02 = export_dir / "forged" / "source" / "helpers" / "course" / "exercises" / "stage02.py"
    assert "FORGED" not in stage02.read_text()
    leftovers = list((export_dir / "forged" / "source" / "notebooks").iterdir())
    assert leftovers == [], leftovers          # the scratch folders are gone


def test_the_prairielearn_grader_scores_a_fraction_and_a_kernel_nvrtc_refuses_is_not_gradable(export_dir):
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "export", "prairielearn", str(export_dir / "pl"),
                        str(NB02)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    _, honest = _run(export_dir, "pl_honest", lambda sub, root: _honest(sub / "02_naive.ipynb"), "prairielearn")
    assert honest["gradable"] and honest["score"] == 1.0, honest
    assert sum(t["points"] for t in honest["tests"]) == 14

    def broken(sub, root):
        _honest(sub / "02_naive.ipynb")
        nb = nbformat.read(sub / "02_naive.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.source.startswith("%%kernel 02"):
                cell.source = cell.source.replace("{", "{ undeclared_name = 1;", 1)
        nbformat.write(nb, sub / "02_naive.ipynb")
    _, refused = _run(export_dir, "pl_broken", broken, "prairielearn")
    assert refused["gradable"] is False and "undeclared_name" in refused["output"], refused


def test_grade_jobs_grades_notebooks_at_the_same_time_and_writes_each(tmp_path):
    require_sandbox()
    answers = {"a": "'02_naive_coalesced'", "b": "'02_naive'", "c": "'02_naive_coalesced'"}
    for who, answer in answers.items():
        nb = nbformat.v4.new_notebook(metadata={"authors": [{"name": f"student {who}"}]}, cells=[
            nbformat.v4.new_markdown_cell("# 02 · a test"),
            nbformat.v4.new_code_cell("import time\nfrom helpers.course.exercises import check_02_exercise_1"),
            nbformat.v4.new_markdown_cell("## Exercises"),
            nbformat.v4.new_code_cell(f"time.sleep(8)\ncheck_02_exercise_1({answer})")])
        nbformat.write(nb, tmp_path / f"{who}_02.ipynb")
    (tmp_path / "p.toml").write_text('["02"]\ncheck_02_exercise_1 = 3\n')
    start = time.perf_counter()
    notebooks = sorted(map(str, tmp_path.glob("*.ipynb")))
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", *notebooks,
                        "--jobs", "3", "--exercises-only", "--json", str(tmp_path / "g.json"),
                        "--points", str(tmp_path / "p.toml")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert r.returncode == 0, r.stderr
    graded = {Path(g["notebook"]).name[0]: g for g in json.loads((tmp_path / "g.json").read_text())}
    assert sorted(graded) == ["a", "b", "c"] and graded["b"]["student"] == "student b"
    assert [graded[w]["exercises"][0]["status"] for w in "abc"] == ["right", "wrong", "right"]
    assert [graded[w]["score"] for w in "abc"] == [3, 0, 3] and len({g["max_score"] for g in graded.values()}) == 1
    assert r.stdout.count(f"score: 3 of {graded['a']['max_score']:.0f} points") == 2, r.stdout
    # one at a time, the run would take at least the sum of the notebooks' own times: they overlapped
    assert seconds < sum(g["seconds"] for g in graded.values()), (seconds, [g["seconds"] for g in graded.values()])

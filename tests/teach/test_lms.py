"""Points, LMS results files and exports (helpers/teach/points.py, helpers/teach/lms/), without running a notebook:
fast. tests/teach/test_lms_autograders.py runs the exported autograders themselves."""

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest

from helpers.core import paths
from helpers.teach import container, points
from helpers.teach.lms import bundle, gradescope, prairielearn

ROOT = paths.ROOT


def _grade(exercises, stage="02"):
    return {"notebook": "alice_02.ipynb", "stage": stage, "problem": None, "stopped": [], "student": None,
            "exercises": exercises}


def _kernel(status, steps):
    return {"exercise": "kernel 02", "check": "kernel 02", "status": status, "message": "m",
            "steps": [{"step": k, "ok": ok, "lines": []} for k, ok in steps]}


RIGHT = {"exercise": 1, "check": "check_02_exercise_1", "status": "right", "message": "yes"}
WRONG = {"exercise": 2, "check": "check_02_exercise_2", "status": "wrong", "message": "swapped"}
PREDICTION = {"exercise": "check_02_prediction", "check": "check_02_prediction", "status": "right", "message": "12x"}


# ---- points ---------------------------------------------------------------------------------------------------
def test_the_defaults_cover_every_checker_and_kernel_and_read_back_from_their_file(tmp_path):
    table = points.defaults()
    assert table["02"]["check_02_exercise_1"] == 1 and table["02"]["check_02_prediction"] == 0
    assert table["05"]["kernel 05"] == points.KERNEL_STEPS and "kernel 01" not in table.get("01", {})
    (tmp_path / "p.toml").write_text(points.as_toml(table))
    assert points.load(tmp_path / "p.toml") == table


def test_a_teachers_file_overrides_only_what_it_names_and_bad_entries_are_refused(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('["02"]\ncheck_02_exercise_1 = 2.5\n"kernel 02" = { timing = 3, correct = 6 }\n')
    table = points.load(f)
    assert table["02"]["check_02_exercise_1"] == 2.5 and table["02"]["check_02_exercise_2"] == 1
    assert table["02"]["kernel 02"] == dict(points.KERNEL_STEPS, timing=3, correct=6)
    for bad, words in (('["02"]\ncheck_02_exercise_1 = -1\n', "0 or more"),
                       ('["02"]\ncheck_02_exercise_1 = "ten"\n', "points are a number"),
                       ('["02"]\n"kernel 02" = { speed = 1 }\n', "not speed"),
                       ('["02"\n', "not a points file")):
        f.write_text(bad)
        with pytest.raises(ValueError, match=words):
            points.load(f)


def test_a_kernel_earns_the_points_of_the_steps_it_passed_and_nothing_left_on_its_starter():
    table = points.defaults()
    steps = [("contract", True), ("compiles", True), ("correct", True), ("safe", False)]
    [s] = points.score(_grade([_kernel("wrong", steps)]), table)
    assert (s.score, s.max_score) == (5, 10) and "safe      failed" in s.output and "lesson    not reached" in s.output
    # a starter passes "compiles", and still earns nothing: it was not attempted
    [s] = points.score(_grade([_kernel("not attempted", steps[:2])]), table)
    assert (s.score, s.max_score) == (0, 10)
    # timing counts only where a GPU grades (the emulator does not run it): out of the maximum without one
    table["02"]["kernel 02"]["timing"] = 2
    passed = [(k, True) for k in ("contract", "compiles", "correct", "safe", "lesson")]
    [cpu] = points.score(_grade([_kernel("right", passed + [("timing", None)])]), table)
    [gpu] = points.score(_grade([_kernel("right", passed + [("timing", True)])]), table, gpu=True)
    assert (cpu.score, cpu.max_score, gpu.score, gpu.max_score) == (10, 10, 12, 12)
    assert "timing    not run without a GPU" in cpu.output


def test_checker_exercises_score_their_points_when_right():
    scored = points.score(_grade([RIGHT, WRONG, PREDICTION]), points.defaults())
    assert [(s.name, s.score, s.max_score) for s in scored] == [
        ("02 · exercise 1", 1, 1), ("02 · exercise 2", 0, 1), ("02 · prediction", 0, 0)]
    assert scored[1].output == "wrong: swapped"


# ---- results files ---------------------------------------------------------------------------------------------
def test_gradescope_results_have_its_fields():
    g = _grade([RIGHT, WRONG, _kernel("right", [(k, True) for k in ("compiles", "correct", "safe", "lesson")])])
    g["student"], g["problem"] = "Ada (s1)", "cell 3 \x1b[2Jraised"
    data = gradescope.results([g], points.defaults(), "Graded in a test.", 12.3)
    assert data["score"] == 11 and data["execution_time"] == 12
    assert {t["name"]: (t["score"], t["max_score"], t["status"]) for t in data["tests"]} == {
        "02 · exercise 1": (1, 1, "passed"), "02 · exercise 2": (0, 1, "failed"),
        "02 · write it: %%kernel 02": (10, 10, "passed")}
    assert all(t["visibility"] == "visible" and t["output"] for t in data["tests"])
    assert data["output"].startswith("Student: Ada (s1).") and "\x1b" not in data["output"]   # escapes shown, not run


def test_prairielearn_results_score_a_fraction_and_a_compile_error_is_not_gradable():
    g = _grade([RIGHT, WRONG])
    data = prairielearn.results([g], points.defaults(), "note")
    assert data["gradable"] and data["score"] == 0.5 and [t["points"] for t in data["tests"]] == [1, 0]
    refused = _kernel("wrong", [("contract", True), ("compiles", False)])
    refused["steps"][1]["lines"] = ["line 3: error: identifier \"x\" is undefined"]
    data = prairielearn.results([_grade([RIGHT, refused])], points.defaults(), "note")
    assert data["gradable"] is False and "identifier \"x\" is undefined" in data["output"]
    assert "score" not in data


def test_the_student_comes_from_the_lms_metadata():
    meta = {"users": [{"name": "Ada Lovelace", "sid": "s123", "email": "a@x"}, {"name": "Bob"}, "junk"]}
    assert bundle.student_from(meta) == "Ada Lovelace (s123), Bob"
    assert bundle.student_from({"users": "x"}) is None and bundle.student_from(None) is None


# ---- exports ---------------------------------------------------------------------------------------------------
@pytest.mark.slow  # starts the command line (about 4.5 s on 2 cores)
def test_the_gradescope_export_carries_the_course_without_its_solutions(tmp_path):
    nb = ROOT / "notebooks" / "02_naive.ipynb"
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "export", "gradescope", str(tmp_path), str(nb)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        settings = json.loads(z.read("settings.json"))
        requirements = z.read("requirements.txt").decode()
    assert {"setup.sh", "run_autograder", "points.toml", "helpers/teach/lms/gradescope.py",
            "kernels/02_naive.cu"} <= names
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert settings["stages"] == ["02"] and settings["exercises_only"] and settings["backend"] == "cpu"
    hidden = [n for n in names for h in ("solutions/", "my_kernels", ".git/") if h in n and not n.endswith(h)]
    assert hidden == [], hidden          # the solutions' folders are there, empty
    assert "helpers/course/exercises/solutions/" in names and "tests/" not in {n[:6] for n in names}
    assert "pytest" not in requirements and "numpy" in requirements


@pytest.mark.slow  # starts the command line (about 4.5 s on 2 cores)
def test_the_prairielearn_export_has_a_question_per_notebook(tmp_path):
    nbs = [str(ROOT / "notebooks" / n) for n in ("02_naive.ipynb", "05_2d_thread_tiling.ipynb")]
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "export", "prairielearn", str(tmp_path), *nbs,
                        "--image", "me/tbt", "--time-limit", "900"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    for stage, name in (("02", "02_naive.ipynb"), ("05", "05_2d_thread_tiling.ipynb")):
        q = tmp_path / "questions" / f"tile-by-tile-{stage}"
        info = json.loads((q / "info.json").read_text())
        grading = info["externalGradingOptions"]
        assert info["gradingMethod"] == "External" and grading["image"] == "me/tbt"
        assert grading["timeout"] == 600 and grading["entrypoint"].endswith("/course/run_prairielearn")
        assert json.loads((q / "tests" / "settings.json").read_text()) == {"stages": [stage]}
        assert name in (q / "question.html").read_text()
    course = tmp_path / "image" / "course"
    assert os.access(course / "run_prairielearn", os.X_OK) and (tmp_path / "image" / "Dockerfile").is_file()
    assert not list((course / "helpers" / "course" / "write_it" / "solutions").iterdir())


@pytest.mark.slow  # starts the command line (about 4.5 s on 2 cores)
def test_an_export_refuses_a_bad_points_file_before_writing(tmp_path):
    (tmp_path / "p.toml").write_text('["02"]\ncheck_02_exercise_1 = -3\n')
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "export", "gradescope", str(tmp_path / "out"),
                        str(ROOT / "notebooks" / "02_naive.ipynb"), "--points", str(tmp_path / "p.toml")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "0 or more" in r.stderr and not (tmp_path / "out").exists()


# ---- container mode --------------------------------------------------------------------------------------------
def test_container_mode_refuses_where_its_guards_cannot_hold(tmp_path):
    """In this tree the solutions are readable (and without root no uid of its own): refused, naming the fix."""
    nb = tmp_path / "a_02.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", str(nb), "--container"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stdout + r.stderr
    assert ("needs the grader to run as root" in r.stderr) != (os.geteuid() == 0)
    if os.geteuid() == 0 and (ROOT / "helpers" / "course" / "exercises" / "solutions" / "__init__.py").is_file():
        assert "could read" in r.stderr and "teacher export" in r.stderr
        assert "helpers/course/write_it/solutions" in r.stderr and "helpers/course/exercises/solutions" in r.stderr


def test_container_mode_drops_to_an_unprivileged_uid_without_capabilities():
    argv = container.command(["id"], 65533, ["prlimit", "--nproc=5", "--"])
    assert argv[:2] == ["setpriv", "--reuid=65533"] and "--no-new-privs" in argv and "--bounding-set=-all" in argv
    assert argv[-4:] == ["prlimit", "--nproc=5", "--", "id"]

"""`python -m helpers exercise`: list, starter, check (exit 0 iff it passes, the verdict on the last
line) and solution, as a learner runs them; exercises 11 and 12; `ladder --mine`."""

import json

import pytest

from helpers.course import write_it
from support import helpers_cli


def test_list_prints_a_line_per_exercise_with_its_stage_kernel_and_launch():
    r = helpers_cli("exercise", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(write_it.exercises())
    assert any(line.startswith("03  stage 03  sgemm_tiled") and "grid (ceil(N/16), ceil(M/16))" in line for line in lines)


def test_starter_and_solution_print_the_files():
    for command, attr in (("starter", "starter_path"), ("solution", "solution_path")):
        r = helpers_cli("exercise", command, "03")
        assert r.returncode == 0 and r.stdout == getattr(write_it.exercise("03"), attr).read_text()


def test_check_exits_0_on_the_solution_and_1_on_the_starter_with_the_verdict_last(tmp_path):
    starter = tmp_path / "mine.cu"
    r = helpers_cli("exercise", "starter", "02")
    starter.write_text(r.stdout)
    passed = helpers_cli("exercise", "check", "02", str(write_it.exercise("02").solution_path), "--backend", "cpu")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.splitlines()[-1].startswith("Exercise 02 (sgemm_coalesced): PASSED")
    todo = helpers_cli("exercise", "check", "02", str(starter), "--backend", "cpu")
    assert todo.returncode == 1 and "NOT DONE YET" in todo.stdout.splitlines()[-1]


def test_an_unknown_exercise_or_a_missing_file_is_a_usage_error(tmp_path):
    assert helpers_cli("exercise", "check", "99", "x.cu").returncode == 2
    r = helpers_cli("exercise", "check", "03", str(tmp_path / "none.cu"))
    assert r.returncode == 2 and "No kernel file" in r.stderr


def test_exercises_11_and_12_are_listed_with_their_kernels():
    r = helpers_cli("exercise", "list")
    lines = r.stdout.splitlines()
    assert any(line.startswith("11  stage 11  splitk_partial") for line in lines)
    assert any(line.startswith("12  stage 12  sgemm_tma_ring") and "block 160" in line for line in lines)


@pytest.mark.slow
def test_check_11_runs_both_kernels_and_the_starter_of_12_is_not_done(tmp_path):
    passed = helpers_cli("exercise", "check", "11", str(write_it.exercise("11").solution_path), "--backend", "cpu")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "the same bits both times" in passed.stdout
    starter = tmp_path / "12.cu"
    starter.write_text(helpers_cli("exercise", "starter", "12").stdout)
    todo = helpers_cli("exercise", "check", "12", str(starter), "--backend", "cpu")
    assert todo.returncode == 1 and "NOT DONE YET" in todo.stdout.splitlines()[-1]


@pytest.mark.slow
def test_ladder_mine_checks_the_saved_kernels_beside_the_courses(tmp_path):
    mine = tmp_path / "my_kernels"
    mine.mkdir()
    (mine / "04.cu").write_text(write_it.exercise("04").solution_path.read_text())
    r = helpers_cli("ladder", "--mine", "--backend", "cpu", "--json", str(tmp_path / "mine.json"),
                    env={"TBT_MY_KERNELS": str(mine)}, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(line.startswith("04 1D thread tiling") and " passed " in line for line in r.stdout.splitlines())
    assert any(line.startswith("05 2D thread tiling") and "not saved" in line for line in r.stdout.splitlines())
    rungs = {x["exercise"]: x for x in json.loads((tmp_path / "mine.json").read_text())["rungs"]}
    assert rungs["04"]["yours"] == pytest.approx(8 / 9) and rungs["12"]["status"] == "not saved"

"""`python -m helpers exercise`: list, starter, check (exit 0 iff it passes, the verdict on the last
line) and solution, as a learner runs them."""

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

"""Write it yourself (helpers/course/write_it): every registered exercise's check passes its solution,
says "not done yet" to its starter and fails the solution without its barriers; compile errors,
host functions, out-of-bounds accesses and uncoalesced or untiled kernels are caught at the learner's
line; the %%kernel magic saves to the git-ignored folder, and what it saved survives a restart; each
exercise's notebook states its contract and holds its starter. A check takes 1 to 2 s on the CPU emulator."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers.core import stages
from helpers.core.paths import KERNELS, ROOT
from helpers.course import write_it
from helpers.course.write_it import diagnose, magic
from helpers.measure import verify
from helpers.run import cpu_backend as emulator_backend

pytestmark = pytest.mark.emulator

EXERCISES = write_it.exercises()
IDS = [ex.id for ex in EXERCISES]
# (12's one __syncthreads orders the barriers' setup: without it the race is on a barrier, tests/course/
# test_write_it_11_12.py)
WITH_BARRIERS = [ex for ex in EXERCISES if "__syncthreads()" in ex.solution_path.read_text() and ex.id != "12"]


@pytest.fixture
def saved_here(tmp_path, monkeypatch):
    """The %%kernel magic saves into a temporary folder, not the course's my_kernels/."""
    monkeypatch.setenv(magic.FOLDER_VARIABLE, str(tmp_path / "my_kernels"))
    return tmp_path / "my_kernels"


def _variant(tmp_path, ex, name: str, text: str):
    path = tmp_path / f"{ex.id}_{name}.cu"
    path.write_text(text)
    return path


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---- the registry and the contract ---------------------------------------------------------------------
def test_exercises_02_and_03_are_registered_with_their_files_and_a_registered_course_kernel():
    assert {"02", "03"} <= set(IDS) and len(IDS) == len(set(IDS))
    for ex in EXERCISES:
        assert ex.starter_path.is_file() and ex.solution_path.is_file()
        assert ex.course_kernel in [v.name for v in stages.stage(ex.stage).variants]
        assert ex.starter_path.parent != ex.solution_path.parent      # the teacher kit can leave solutions/ out


def test_exercise_03_has_exactly_the_issues_contract():
    ex = write_it.exercise("03")
    assert ex.kernel == "sgemm_tiled" and ex.launch.block == (16, 16)
    assert ex.launch.grid(M=33, N=17, K=5) == (2, 3, 1)
    text = write_it.contract("03")
    assert ('`extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A, '
            'const float* B, float beta, float* C)`') in text
    for words in ("row-major", "C = alpha·A·B + beta·C", "16 × 16 tiles of A and B in shared memory",
                  "block (16, 16) and grid (ceil(N/16), ceil(M/16))", "any M, N, K ≥ 1"):
        assert words in text


def test_list_names_every_exercise_with_its_kernel_and_launch():
    from helpers.cli import exercise as cli
    lines = [ex.summary() for ex in EXERCISES]
    assert any(line.startswith("02  stage 02  sgemm_coalesced") and "block (32, 32)" in line for line in lines)
    assert cli.EXIT_NOT_PASSED == 1


def test_an_unknown_exercise_is_a_course_error_naming_the_known_ones():
    with pytest.raises(write_it.ExerciseError, match="02, 03"):
        write_it.exercise("99")


# ---- the checks, on the CPU emulator ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.usefixtures("cpu_backend")
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_the_solution_passes_and_the_pass_reports_what_it_measured(ex):
    v = write_it.check(ex.id, ex.solution_path)
    assert v.ok, str(v)
    assert [s.name for s in v.steps] == ["contract", "compiles", "correct", "safe", "lesson", "timing"]
    assert v.numbers["worst error / tolerance"] <= 1 and v.numbers["races"] == 0
    text = str(v)
    assert text.splitlines()[-1].startswith(f"Exercise {ex.id} ({ex.kernel}): PASSED")
    assert "512x512x512" in text and "65x67x69" in text     # the catalogue, beta = 0 on poisoned C included


@pytest.mark.usefixtures("cpu_backend")
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_the_starter_compiles_runs_and_is_not_done_yet(ex):
    v = write_it.check(ex.id, ex.starter_path)
    assert not v.ok and v.status == "not done yet", str(v)
    assert [s.ok for s in v.steps[:2]] == [True, True]          # contract and NVRTC: it compiles
    assert v.todo_lines and "NOT DONE YET" in str(v).splitlines()[-1]


@pytest.mark.slow
@pytest.mark.usefixtures("cpu_backend")
@pytest.mark.parametrize("ex", WITH_BARRIERS, ids=[ex.id for ex in WITH_BARRIERS])
def test_the_solution_without_its_barriers_fails_naming_a_race_or_a_wrong_result(ex, tmp_path):
    text = ex.solution_path.read_text()
    path = _variant(tmp_path, ex, "no_barriers", "\n".join(ln for ln in text.splitlines() if "__syncthreads()" not in ln))
    v = write_it.check(ex.id, path)
    assert v.status == "failed" and v.failed_step in ("safe", "correct"), str(v)
    assert "race" in v.cause or "wrong result" in v.cause
    if "race" in v.cause:
        assert v.line and "As" in v.code or "Bs" in v.code
        # races between warps on the block's tiles: the barrier missing is a __syncthreads(), not a __syncwarp()
        assert v.hint.startswith("a __syncthreads() is missing") and "a lane of the same warp" not in v.cause


@pytest.mark.usefixtures("cpu_backend")
def test_a_compile_error_is_nvrtcs_message_at_the_learners_line(tmp_path):
    ex = write_it.exercise("03")
    text = ex.solution_path.read_text().replace("acc += As[ty][k] * Bs[k][tx];", "acc += As[ty][k] * Bs[k][tx] * scal;")
    path = _variant(tmp_path, ex, "typo", text)
    v = write_it.check("03", path)
    assert v.failed_step == "compiles" and v.line == _line_of(text, "* scal;")
    assert 'identifier "scal" is undefined' in v.cause and "scal" in v.code and v.hint


@pytest.mark.skipif(not hasattr(emulator_backend, "check_gpu_compiles"),
                    reason="the CPU backend's NVRTC gate (helpers/run/cpu_backend.py) is not in yet")
@pytest.mark.usefixtures("cpu_backend")
def test_a_host_function_fails_at_nvrtc_and_never_runs(tmp_path):
    ex = write_it.exercise("03")
    ran = tmp_path / "system-ran"
    text = 'extern "C" int system(const char*);\n' + ex.solution_path.read_text().replace(
        "  float acc = 0.0f;", f'  float acc = 0.0f;\n  system("touch {ran}");')
    v = write_it.check("03", _variant(tmp_path, ex, "host", text))
    assert v.failed_step == "compiles" and "host function" in v.cause and "__device__" in v.hint
    assert v.line == 1 and not ran.exists()


@pytest.mark.usefixtures("cpu_backend")
def test_an_out_of_bounds_load_is_stopped_with_its_thread_and_line(tmp_path):
    ex = write_it.exercise("03")
    text = ex.solution_path.read_text().replace("(row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f",
                                                 "A[row * K + k0 + tx]")
    v = write_it.check("03", _variant(tmp_path, ex, "oob", text))
    assert v.failed_step == "safe" and "OutOfBoundsError" in v.cause and "thread" in v.cause
    assert v.line == _line_of(text, "As[ty][tx] = A[row * K + k0 + tx];")


@pytest.mark.usefixtures("cpu_backend")
def test_an_index_past_a_shared_array_fails_safe_after_correct_and_the_hint_names_the_array(tmp_path):
    """The report keeps the notebooks' order (correct, then safe) when the emulator stops the kernel while
    "correct" runs it, and the hint is about the shared array's size, not the matrix edges."""
    ex = write_it.exercise("03")
    text = ex.solution_path.read_text().replace("Bs[ty][tx] = (k0", "Bs[ty + 1][tx] = (k0")
    v = write_it.check("03", _variant(tmp_path, ex, "shared_oob", text))
    assert [(s.name, s.ok) for s in v.steps] == [("contract", True), ("compiles", True), ("correct", None),
                                                 ("safe", False)], str(v)
    assert "not finished" in v.steps[2].lines[0] and "1x1x1" in v.steps[2].lines[0]
    assert v.failed_step == "safe" and "the __shared__ array Bs" in v.cause
    assert v.line == _line_of(text, "Bs[ty + 1][tx] = (k0")
    assert "the index into the __shared__ array Bs runs past its declared size" in v.hint
    assert "`Bs[TILE][TILE]` at line 9" in v.hint and "if (row < M" not in v.hint


@pytest.mark.usefixtures("cpu_backend")
def test_reading_c_when_beta_is_zero_fails_on_the_poisoned_shape(tmp_path):
    ex = write_it.exercise("02")
    text = ex.solution_path.read_text().replace("(beta == 0.0f ? 0.0f : beta * C[row * N + col])",
                                                 "beta * C[row * N + col]")
    v = write_it.check("02", _variant(tmp_path, ex, "reads_c", text))
    assert v.failed_step == "correct" and "65x67x69" in v.cause and "must not read C" in v.hint


@pytest.mark.usefixtures("cpu_backend")
def test_a_correct_but_uncoalesced_kernel_fails_the_lesson_of_02_at_its_line(tmp_path):
    ex = write_it.exercise("02")
    text = (ex.solution_path.read_text()
            .replace("blockIdx.y * blockDim.y + threadIdx.y;", "blockIdx.y * blockDim.y + threadIdx.x;")
            .replace("blockIdx.x * blockDim.x + threadIdx.x;", "blockIdx.x * blockDim.x + threadIdx.y;"))
    v = write_it.check("02", _variant(tmp_path, ex, "rows", text))   # a square block: still correct
    assert v.failed_step == "lesson" and "not coalesced" in v.cause, str(v)
    assert v.line == _line_of(text, "acc += A[row * K + k]") and v.numbers["load A sectors per request"] == 32


@pytest.mark.usefixtures("cpu_backend")
def test_a_correct_kernel_without_shared_memory_fails_the_lesson_of_03(tmp_path):
    ex = write_it.exercise("03")
    naive = write_it.exercise("02").solution_path.read_text().replace("sgemm_coalesced", "sgemm_tiled")
    v = write_it.check("03", _variant(tmp_path, ex, "naive", naive))
    assert v.failed_step == "lesson" and "shared memory" in v.cause
    assert v.numbers["A loads per element"] == 16


@pytest.mark.usefixtures("cpu_backend")
@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace("sgemm_tiled", "sgemm_tile"), "no __global__ kernel named sgemm_tiled"),
    (lambda t: t.replace('extern "C" ', ""), 'not extern "C"'),
    (lambda t: t.replace("float beta, float* C", "float beta, double* C"), "the contract says"),
], ids=["name", "extern C", "signature"])
def test_the_contract_is_checked_before_compiling(tmp_path, edit, says):
    ex = write_it.exercise("03")
    v = write_it.check("03", _variant(tmp_path, ex, "contract", edit(ex.solution_path.read_text())))
    assert v.failed_step == "contract" and says in v.cause


def test_signature_types_are_read_whatever_the_spelling():
    assert diagnose.signature_problem(write_it.exercise("03"), 'extern "C" __global__ void sgemm_tiled(int M, int N, '
                                      'int K, float alpha, float const * __restrict__ A, const float *B, float beta, '
                                      'float* __restrict__ C) {}') is None


@pytest.mark.gpu
def test_on_a_gpu_the_solution_passes_and_is_timed_beside_the_course_kernel_and_cublas():
    from helpers.run import backend
    backend.use("gpu")
    try:
        v = write_it.check("03", write_it.exercise("03").solution_path)
    finally:
        backend.use(None)
    assert v.ok and v.steps[-1].name == "timing" and v.steps[-1].ok
    assert {"yours TFLOP/s", "cuBLAS (FP32) TFLOP/s"} <= set(v.numbers)


# ---- %%kernel: saved to the git-ignored folder, checked, and back after a restart ------------------------
@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    write_it.enable(ip)
    return ip


def test_the_default_folder_is_git_ignored_and_outside_kernels(monkeypatch):
    monkeypatch.delenv(magic.FOLDER_VARIABLE, raising=False)
    path = magic.saved_path("03")
    assert path == ROOT / "my_kernels" / "03.cu" and KERNELS not in path.parents
    r = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT)
    assert r.returncode == 0, "my_kernels/ must be in .gitignore"


@pytest.mark.usefixtures("cpu_backend")
def test_the_magic_saves_the_cell_checks_it_and_keeps_the_cells_line_numbers(shell, saved_here):
    ex = write_it.exercise("03")
    body = ex.solution_path.read_text().replace("acc += As[ty][k] * Bs[k][tx];", "acc += As[ty][k] * Bs[k][tx] * scal;")
    cell = f"%%kernel 03\n{body}"
    result = shell.run_cell(cell)
    v = result.result
    assert (saved_here / "03.cu").is_file() and write_it.load("03") == body
    assert v.failed_step == "compiles" and v.where == "your cell"
    assert v.line == _line_of(cell, "* scal;")                 # the line the notebook shows (%%kernel is line 1)
    assert f"line {v.line} of your cell" in str(v)


@pytest.mark.slow
@pytest.mark.usefixtures("cpu_backend")
def test_what_the_magic_saved_survives_a_restart_and_comes_back_into_the_cell(shell, saved_here):
    ex = write_it.exercise("03")
    solution = ex.solution_path.read_text()
    assert shell.run_cell_magic("kernel", "03", solution).ok
    restarted = subprocess.run([sys.executable, "-c", "from helpers import write_it; print(write_it.load('03'), end='')"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120,
                               env={**__import__("os").environ, magic.FOLDER_VARIABLE: str(saved_here)})
    assert restarted.returncode == 0 and restarted.stdout == solution
    shell.rl_next_input = None
    back = shell.run_cell("%%kernel 03\n").result                 # the lone line: IPython would refuse an empty body
    assert back.ok and shell.rl_next_input == f"%%kernel 03\n{solution.rstrip()}"


@pytest.mark.usefixtures("cpu_backend")
def test_the_unchanged_starter_never_overwrites_a_saved_kernel_and_a_replaced_one_is_kept(shell, saved_here, capsys):
    ex = write_it.exercise("03")
    solution, starter = ex.solution_path.read_text(), ex.starter_path.read_text()
    shell.run_cell_magic("kernel", "03", solution)
    assert shell.run_cell_magic("kernel", "03", starter) is None
    assert write_it.load("03") == solution and "is kept" in capsys.readouterr().out
    edited = starter.replace("// TODO 2", "// TODO 2 (soon)")
    assert shell.run_cell_magic("kernel", "03", edited).status == "not done yet"
    assert write_it.load("03") == edited and (saved_here / "03.prev.cu").read_text().endswith(solution)


def test_load_without_a_saved_kernel_says_how_to_save_one(saved_here):
    with pytest.raises(write_it.ExerciseError, match=r"run its %%kernel 03 cell"):
        write_it.load("03")


# ---- the notebooks ------------------------------------------------------------------------------------
def _notebook(ex):
    path = stages.stage(ex.stage).notebook
    return [("".join(c["source"]), c["cell_type"]) for c in json.loads(path.read_text())["cells"]]


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_the_notebook_states_the_contract_and_its_kernel_cell_holds_the_starter(ex):
    cells = _notebook(ex)
    assert any(ex.contract() in text for text, kind in cells if kind == "markdown")
    kernel_cells = [text for text, kind in cells if kind == "code" and re.match(rf"%%kernel {ex.id}\n", text)]
    assert [cell.split("\n", 1)[1] for cell in kernel_cells] == [ex.starter_path.read_text().rstrip("\n")]
    assert any("write_it.enable()" in text for text, kind in cells if kind == "code")


def _result(shape: verify.Shape, wrong: int) -> verify.Check:
    return verify.Check(shape, wrong == 0, 1.0 if wrong else 0.0, 9.0 if wrong else 0.5, wrong, 0, 0)


def test_the_edge_hint_needs_the_shape_that_is_a_multiple_of_the_tile_to_pass():
    """A wrong result after shapes that passed blames the edges only where the kernel is right on a shape that is
    a multiple of every tile (run only when needed); wrong there too, the hint says the interior is wrong."""
    ex = write_it.exercise("03")
    aligned = ex.aligned_shape()
    assert ex.is_aligned(aligned) and aligned.M != aligned.N and aligned.K % 16 == 0
    primes, one = verify.shape("primes"), [_result(verify.shape("1x1x1"), 0)]
    edges = diagnose.wrong_hint(_result(primes, 40), one, ex, lambda: _result(aligned, 0))
    assert "31x37x41 is not a multiple of the tile" in edges and f"so does {aligned.dims}" in edges
    inside = diagnose.wrong_hint(_result(primes, 40), one, ex, lambda: _result(aligned, 7))
    assert "not a multiple of the tile" not in inside and inside.startswith("not only the edges")
    assert f"{aligned.dims}, a multiple of the tile" in inside and "(7 of " in inside
    assert inside.endswith(diagnose.INTERIOR_CAUSES)

    def not_needed():
        raise AssertionError("the hint ran the aligned shape where it was not needed")
    large = diagnose.wrong_hint(_result(verify.shape("large"), 9), one * 9, ex, not_needed)
    assert "512x512x512 is a multiple of the tile, so its edges are not the cause" in large
    # every element wrong: an index where the aligned shape fails too, the last k-tile where it passes
    assert diagnose.wrong_hint(_result(primes, 1147), one, ex, lambda: _result(aligned, 7)).startswith(
        "only 1x1x1 passes and every element is wrong: an index is off")
    assert "every element is wrong: look at K" in diagnose.wrong_hint(_result(primes, 1147), one, ex,
                                                                      lambda: _result(aligned, 0))

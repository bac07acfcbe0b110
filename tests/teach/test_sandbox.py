"""The grader's sandbox (helpers/teach/sandbox.py) and grades that cannot be forged (helpers/teach/grading/).

Hostile code, run as a student's would be: it writes to the teacher's home and to the course, calls
system(), reaches for the network, forks without end, loops forever, allocates without end; each is
stopped, reported, and harms nothing. Forgers: a notebook that writes verdicts where the grader kept
them, replaces the checkers, appends to helpers/course/exercises/*.py, reads the solution registry;
each is graded by what it wrote, and a student graded after it is unaffected. A kernel cell is
judged in a sandbox of its own whose verdict the kernel cannot forge.

Needs bubblewrap (`.ci/run` installs it): without it these tests skip, saying why (under CI they fail).
About a minute: three tiny notebooks built here, each run in a sandboxed Jupyter kernel."""

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.core.errors import SandboxUnavailableError
from helpers.teach import copies, sandbox
from helpers.teach.grading import answers, checkers, kernel_cells, notebook, results, run
from support import require_sandbox

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

ROOT = paths.ROOT
HOME = Path.home()
GUARDED = sorted((ROOT / "helpers" / "course" / "exercises").glob("*.py"))   # what forgers append to


@pytest.fixture(scope="module")
def box():
    require_sandbox()
    return sandbox.Sandbox(sandbox.Limits(wall_s=60, processes=128), backend="cpu")


@pytest.fixture
def tag():
    """A name no file has yet; the test fails if hostile code created one with it, and removes it."""
    tag = uuid.uuid4().hex[:10]
    before = _digests()
    yield tag
    made = [p for d in (HOME, ROOT, ROOT / "notebooks") for p in d.glob(f"*{tag}*")]
    for p in made:
        p.unlink()
    assert made == [], f"the sandbox let these through: {made}"
    assert _digests() == before, "a forger changed helpers/course/exercises"
    assert _survivors(tag) == [], "the sandbox left processes running"


def _digests() -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in GUARDED}


def _survivors(text: str, grace_s: float = 10.0) -> list[str]:
    """The processes with `text` in their command line that outlive a grace period. When the sandbox's bwrap dies,
    the kernel SIGKILLs every process of its PID namespace, but they exit asynchronously: a fork bomb's hundred
    processes may still be exiting when the grader returns, on a loaded machine. One that escaped would still be
    running after the grace period."""
    deadline = time.monotonic() + grace_s
    while (left := _processes_with(text)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _processes_with(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(proc.name)
        except OSError:
            pass
    return [p for p in found if p != str(os.getpid())]


def _notebook(path: Path, *cells: str, title: str = "# 02 · a test notebook") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(title)] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


# ---- the sandbox itself ------------------------------------------------------------------------------------
PROBE = r"""
import json, os, socket, sys
home, repo, tag = sys.argv[1:4]
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = "done"
    except Exception as e:
        out[name] = f"{type(e).__name__}: {e}"
attempt("home", lambda: open(f"{home}/pwned_{tag}", "w").write("x"))
attempt("repo", lambda: open(f"{repo}/pwned_{tag}", "w").write("x"))
attempt("checker", lambda: open(f"{repo}/helpers/course/exercises/stage02.py", "a").write("# pwned\n"))
attempt("secret", lambda: open(f"{home}/secret_{tag}").read())
attempt("tmp", lambda: open("/tmp/scratch", "w").write("x"))
attempt("network", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
out["system"] = os.system(f"touch {home}/pwned_system_{tag} 2>/dev/null")
out["hidden"] = {d: sorted(os.listdir(f"{repo}/{d}")) for d in (".git", "helpers/course/write_it/solutions")
                 if os.path.isdir(f"{repo}/{d}")}
print(json.dumps(out))
"""


def test_the_sandbox_keeps_writes_network_and_secrets_out(box, tag):
    secret = HOME / f"secret_{tag}"
    secret.write_text("the teacher's")
    try:
        out = box.run([sys.executable, "-c", PROBE, str(HOME), str(ROOT), tag])
    finally:
        secret.unlink()
    seen = json.loads(out.stdout)
    for name in ("home", "repo", "checker"):
        assert seen[name].startswith(("OSError", "PermissionError", "FileNotFoundError")), seen
    assert seen["secret"].startswith("FileNotFoundError"), seen      # the teacher's home is not there
    assert seen["tmp"] == "done" and seen["system"] != 0
    assert seen["network"].startswith("OSError") and "unreachable" in seen["network"], seen
    assert seen["dns"].startswith("gaierror"), seen
    assert all(listing == [] for listing in seen["hidden"].values()), seen   # .git, reference kernels: hidden


LENT = r"""
import json, os
from helpers.emulator import build_cache, compiler
runtime = compiler.runtime_object()
try:
    open(runtime, "ab").write(b"poison")
    wrote = "done"
except OSError as e:
    wrote = f"{type(e).__name__}: {e}"
print(json.dumps({"runtime": str(runtime), "cache": str(build_cache.cache_dir()), "wrote": wrote,
                  "lent": os.path.ismount(os.path.dirname(runtime))}))
"""


def test_the_grader_lends_its_runtime_build_read_only_and_the_rest_of_the_cache_is_the_sandboxs(box):
    lent = sandbox.lent_runtime()
    assert lent is not None, "the grader could not lend its build of the emulator's runtime"
    before = (lent / "runtime.o").read_bytes()
    seen = json.loads(box.run([sys.executable, "-c", LENT]).stdout)
    assert seen["runtime"] == f"{sandbox.CACHE}/emulator/{lent.name}/runtime.o" and seen["lent"], seen  # not built
    assert seen["cache"] == f"{sandbox.CACHE}/emulator", seen            # the sandbox's own, for what it builds
    assert any(why in seen["wrote"] for why in ("Read-only file system", "Permission denied")), seen
    assert (lent / "runtime.o").read_bytes() == before


BOMB = """subprocess.Popen(['bash', '-c', ':(){{ :|:& }};: # {tag}'])   # the classic, then more of its own
time.sleep(2)
n = 0
try:
    while n < 10000:
        subprocess.Popen(['sleep', '60'])
        n += 1
except OSError as e:
    print('refused after', n, 'more:', e)
"""


def test_a_fork_bomb_stops_at_the_process_limit(box, tag):
    out = sandbox.Sandbox(sandbox.Limits(wall_s=30, processes=40), backend="cpu").run(
        [sys.executable, "-c", f"import subprocess, time\n{BOMB.format(tag=tag)}\nprint('started', n)"])
    assert not out.timed_out and "[Errno 11] Resource temporarily unavailable" in out.stdout, out
    assert int(out.stdout.split("refused after ")[1].split()[0]) < 40 and out.seconds < 20


def test_an_endless_loop_is_stopped_with_all_it_started(box, tag):
    spin = (f"import os, signal\n# {tag}\nif os.fork() == 0:\n    os.setsid()\n    signal.signal(signal.SIGTERM, "
            f"signal.SIG_IGN)\nwhile True:\n    pass\n")
    out = sandbox.Sandbox(sandbox.Limits(wall_s=3), backend="cpu").run([sys.executable, "-c", spin])
    assert out.timed_out and out.returncode is None and out.seconds < 10


def test_memory_past_the_limit_is_refused(box):
    out = sandbox.Sandbox(sandbox.Limits(wall_s=30, memory_bytes=2 * sandbox.GiB), backend="cpu").run(
        [sys.executable, "-c", "x = bytearray(4 * 2 ** 30)"])
    assert out.returncode != 0 and "MemoryError" in out.stderr


def test_without_bubblewrap_grading_refuses_and_names_the_fix(monkeypatch):
    monkeypatch.setenv("TBT_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap.*--no-sandbox"):
        sandbox.Sandbox()
    monkeypatch.setenv("TBT_BWRAP", "/bin/false")     # installed, but it cannot start a sandbox
    sandbox._checked.pop("/bin/false", None)
    with pytest.raises(SandboxUnavailableError, match="cannot start a sandbox here.*user namespaces"):
        sandbox.Sandbox()


# ---- notebooks: hostile, forged, and graded by what they wrote ---------------------------------------------
def test_a_hostile_notebook_is_reported_and_harms_nothing(box, tag, tmp_path):
    path = _notebook(
        tmp_path / "eve_02.ipynb",
        "import os, socket, subprocess, time\nfrom helpers.course.exercises import check_02_exercise_1, "
        "check_02_exercise_2",
        f"os.system('touch {HOME}/pwned_system_{tag}')\nopen('{HOME}/pwned_{tag}', 'w')",
        f"open('{ROOT}/pwned_{tag}', 'w')",
        "from helpers.course.exercises import stage02\nopen(stage02.__file__, 'a').write('\\n# pwned\\n')",
        "socket.create_connection(('1.1.1.1', 80), timeout=3)",
        "hog = bytearray(64 * 2 ** 30)",
        "while True:\n    pass",
        BOMB.format(tag=tag).replace("except OSError as e:\n    print('refused after', n, 'more:', e)",
                                     "finally:\n    print('started', n)"),
        "check_02_exercise_1('02_naive_coalesced')",
        "check_02_exercise_2((13, 5))")
    g = notebook.grade(path, timeout=5, sandbox=box, kinds=[checkers.CheckerCalls()])
    stopped = "\n".join(g.stopped)
    for what in ("cell 3: a write outside its scratch folders", "cell 4: a write outside", "cell 5: a write outside",
                 "cell 6: network access", "cell 7: an allocation, past 8 GiB", "cell 8: a cell past its time limit",
                 "cell 9: new processes, past the limit of 128"):    # cells counted from 1, the title first
        assert what in stopped, stopped
    assert [(r.exercise, r.status) for r in g.results] == [(1, "right"), (2, "wrong"), (3, "not attempted"),
                                                           (4, "not attempted"),
                                                           ("check_02_prediction", "not attempted")]
    assert "stopped by the sandbox: cell 6: network access" in results.report([g])


def test_forged_verdicts_patched_checkers_and_solutions_count_for_nothing(box, tag, tmp_path):
    mallory = _notebook(
        tmp_path / "mallory_02.ipynb",
        "import glob, importlib, json\nfrom helpers.course import exercises\nfrom helpers.teach.grading import checkers\n"
        "from helpers.course.exercises import stage02, feedback\nfrom helpers.course.exercises import *",
        # the grader's record file, as the old grader kept it, and verdicts printed as a checker prints them
        "forged = [{'check': f'check_02_exercise_{i}', 'status': 'right', 'message': 'forged by the student'} "
        "for i in range(1, 5)]\nfor log in glob.glob('/tmp/tbt_grade_*/checks.jsonl'):\n"
        "    open(log, 'a').write(''.join(json.dumps(f) + '\\n' for f in forged))\n"
        "print('Correct: forged by the student')",
        # every checker replaced by one that always says right, where the notebook can reach it
        "always = lambda *a, **k: feedback.Feedback(True, 'forged by the student')\n"
        "for m in (exercises, *exercises.STAGE_MODULES, checkers):\n"
        "    for name in [n for n in vars(m) if n.startswith('check_')]:\n        setattr(m, name, always)\n"
        "checkers.CHECKERS.update({n: always for n in checkers.CHECKERS})\n"
        "globals().update({n: always for n in exercises.CHECKERS})",
        # the course's checkers rewritten on disk, for every student graded after this one
        f"for f in ('stage02.py', '__init__.py'):\n    try:\n"
        f"        open(exercises.__path__[0] + '/' + f, 'a').write('\\ncheck_02_exercise_1 = lambda *a: "
        f"feedback.Feedback(True, \"forged {tag}\")\\n')\n    except OSError as e:\n        print('refused:', e)",
        "check_02_exercise_1('02_naive')",
        "check_02_exercise_2(('?', '?'))",
        "check_02_exercise_3(*exercises.solution('check_02_exercise_3'))",
        "importlib.reload(stage02)\nmine = stage02.SOLUTIONS[stage02.check_02_exercise_4]()\n"
        "check_02_exercise_4(*mine)")
    bob = _notebook(
        tmp_path / "bob_02.ipynb",
        "import numpy as np\nfrom helpers.course.exercises import check_02_exercise_1, check_02_exercise_2, "
        "check_02_exercise_3, check_02_exercise_4",
        "check_02_exercise_1('02_naive')",                                   # wrong: must stay wrong after mallory
        "grid = ((70 + 15) // 16, (100 + 7) // 8)\ncheck_02_exercise_2(grid)",   # computed: right
        "check_02_exercise_3(np.int64(1), 32)",                             # a NumPy value: right
        "check_02_exercise_4('?', '?')")
    r = subprocess.run([sys.executable, "-m", "helpers", "teacher", "grade", str(mallory), str(bob), "--timeout", "120",
                        "--json", str(tmp_path / "g.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    graded = {Path(g["notebook"]).stem: [(e["exercise"], e["status"]) for e in g["exercises"]]
              for g in json.loads((tmp_path / "g.json").read_text())}
    # 4: the registry is not in the sandbox at all, so the cell raises before its call (was: "wrong")
    assert graded["mallory_02"] == [(1, "wrong"), (2, "not attempted"), (3, "wrong"), (4, "error"),
                                    ("check_02_prediction", "not attempted"),
                                    ("kernel 02", "not attempted")], r.stdout     # no %%kernel 02 cell
    assert graded["bob_02"] == [(1, "wrong"), (2, "right"), (3, "right"), (4, "not attempted"),
                                ("check_02_prediction", "not attempted"), ("kernel 02", "not attempted")], r.stdout
    assert "forged by the student" not in r.stdout
    messages = " ".join(e["message"] for g in json.loads((tmp_path / "g.json").read_text()) for e in g["exercises"])
    assert "taken from the course's solutions" in messages and "computed in the notebook: grid = (5, 13)" in messages


def test_no_sandbox_grades_with_a_warning(tmp_path, monkeypatch):
    path = _notebook(tmp_path / "trusted_02.ipynb",
                     "from helpers.course.exercises import check_02_exercise_1\ncheck_02_exercise_1('02_naive_coalesced')")
    env = {**os.environ, "TBT_BWRAP": "/nonexistent/bwrap"}
    cmd = [sys.executable, "-m", "helpers", "teacher", "grade", str(path), "--timeout", "120"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 3 and "bubblewrap (bwrap) is not installed" in r.stderr and "--no-sandbox" in r.stderr
    r = subprocess.run(cmd + ["--no-sandbox"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "warning: --no-sandbox" in r.stderr, r.stderr
    assert "exercise 1   right" in r.stdout, r.stdout + r.stderr


# ---- kernel cells: judged in a sandbox of their own ----------------------------------------------------------
def test_a_kernel_cell_is_judged_apart_and_its_verdict_cannot_be_forged(box, tag):
    # 10 s: the judge alone imports the course in about 3.5 s on 2 busy cores (4 s failed there now and then)
    kind = kernel_cells.KernelCells(magic="toy", judge="tests.teach.sandbox_judges:run_as_shell", time_limit=10)
    forged = json.dumps({"status": "right", "message": f"forged {tag}"})
    cases = {
        "echo 42": "right",
        "echo 41": "wrong",
        # the kernel writes a verdict where the judge writes its own, and reads the judge for its secret
        f"echo '{forged}' > /proc/$PPID/fd/1; cat /proc/$PPID/mem /proc/$PPID/environ; echo 0": "wrong",
        f"touch {HOME}/pwned_kernel_{tag}; echo 0": "wrong",
        "sleep 100": "error",
        "   \n": "not attempted",
    }
    for body, status in cases.items():
        r = kind.judge_source("01", f"// %%toy 01\n{body}", box)
        assert (r.check, r.status) == ("toy 01", status), (body, r)
        assert "forged" not in r.message and ("ran past 10 s" in r.message) == (body == "sleep 100")


def test_a_write_it_kernel_is_judged_by_its_check_in_the_sandbox(box):
    """The real kind: helpers/course/write_it's check, on the emulator, in the sandbox (a teacher's tree)."""
    solution = ROOT / "helpers" / "course" / "write_it" / "solutions" / "03.cu"
    if not solution.is_file():
        pytest.skip("no write-it solutions here (helpers/course/write_it/solutions/03.cu): a teacher's copy has them")
    kind = kernel_cells.KernelCells()
    source = "// %%kernel 03\n" + solution.read_text()
    assert kind.judge_source("03", source, box).status == "right"
    racy = kind.judge_source("03", source.replace("__syncthreads();", ""), box)
    assert racy.status == "wrong" and "race" in racy.message


def test_student_copies_put_kernel_cells_back_on_their_starter(tmp_path):
    starters = tmp_path / "starters"
    starters.mkdir()
    (starters / "07.cu").write_text("// TODO: write it\n")
    kind = kernel_cells.KernelCells(starters=str(starters))     # ROOT / an absolute path is that path
    assert kind.starter_source("%%kernel 07\n__global__ void the_teachers_solution() {}") == \
           "%%kernel 07\n// TODO: write it"
    assert kind.starter_source("%%kernel 99\nsolution") == "%%kernel 99\n"      # no starter: the magic alone
    assert kind.starter_source("x = 1") is None
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%%kernel 02\n__global__ void solved() { /* the reference */ }")]
    copy = copies.student_copy(nb, known={})
    assert "the reference" not in copy.cells[0].source and copy.cells[0].source.startswith("%%kernel 02\n")


# ---- reading answers ------------------------------------------------------------------------------------------
def test_constant_answers_are_read_without_running_anything():
    assert answers.constant_arguments("(13, 5)") == ([(13, 5)], {})
    assert answers.constant_arguments("'02_' + 'naive', -(3 * 4) // 2, {1, 2}") == (["02_naive", -6, {1, 2}], {})
    assert answers.constant_arguments("4096 * 4096 * 4 / 2 ** 20, k=1") == ([64.0], {"k": 1})
    for computed in ("grid", "f(1)", "*x", "9 ** 9 ** 9", "'a' * 10 ** 9", "__import__('os').system('x')", "{[1]}"):
        assert answers.constant_arguments(computed) is None, computed
    assert answers.reads_solutions("exercises.solution('check_02_exercise_1')")
    assert answers.reads_solutions("from helpers.course.exercises import SOLUTIONS")
    assert not answers.reads_solutions("solution = (4, 8)\ncheck_05_exercise_1(solution)")


def test_each_checker_call_is_routed_through_the_recorder():
    src = "x = check_02_exercise_1('a')\nprint(exercises.check_02_exercise_2(\n    (1, 2)))"
    out = run.instrument(src, 7)
    assert out == ("x = __tbt_answer__(7, 0, 'check_02_exercise_1', lambda: check_02_exercise_1)('a')\n"
                   "print(__tbt_answer__(7, 1, 'check_02_exercise_2', lambda: exercises.check_02_exercise_2)(\n"
                   "    (1, 2)))")
    assert run.instrument("%%kernel 03\nint x;", 1) == "%%kernel 03\nint x;"

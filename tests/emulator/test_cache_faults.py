"""The emulator's build cache survives the faults a laptop has: every kind of entry damaged, a build
killed half-way, builders racing, a cache folder that is read-only, full or not a folder. Each run
after a fault succeeds, with one line saying what was rebuilt or where the builds went instead.

NVRTC and ptxas results and traces are cached in memory only (helpers.run.toolchain,
helpers.measure.accesses): on disk there are the emulator's programs (checks="inline" for check,
checks="trace" for trace) and its runtime object, tested here, and autotune's search cache
(tests/measure/test_autotune.py, tests/views/test_damaged_results.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import emulator
from helpers.core.errors import CacheError
from helpers.core.kernel_source import KernelSource
from helpers.core.paths import ROOT
from helpers.emulator import build_cache, compiler
from support import helpers_cli

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

NAIVE = ["kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "3,3", "--block", "16,16", "--mnk", "40,37,23",
         "--backend", "cpu"]
CHECK = ["check", *NAIVE]
TRACE = ["trace", *NAIVE, "--blocks", "0"]
REBUILT = "building it again"


def _entries(root: Path) -> set[str]:
    folder = root / "emulator"
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")} if folder.is_dir() else set()


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """A cache holding the runtime, 02_naive's program and its trace program, built once."""
    root = tmp_path_factory.mktemp("seed")
    r = helpers_cli(*CHECK, env={"TBT_CACHE_DIR": str(root)})
    assert r.returncode == 0 and "PASS" in r.stdout, r.stderr
    checked = _entries(root)
    r = helpers_cli(*TRACE, env={"TBT_CACHE_DIR": str(root)})
    assert r.returncode == 0, r.stderr
    runtime = next(e for e in checked if e.startswith("runtime-"))
    return {"root": root, "runtime": runtime, "kernel": (checked - {runtime}).pop(),
            "trace": (_entries(root) - checked).pop()}


def _copy(seed, to: Path) -> Path:
    shutil.copytree(seed["root"], to)
    return to


def _random(p: Path) -> None:
    p.write_bytes(os.urandom(100))


def _flip_one_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(data)


def _runtime_cut_short(e: dict) -> None:
    """ld said `runtime.o: file too short` for every kernel built after this (the program is removed
    so that 02_naive is linked again)."""
    os.truncate(e["runtime"] / "runtime.o", 1000)
    shutil.rmtree(e["kernel"])


# The fault table: what was done to the cache, the command run next, the one line it prints.
FAULTS = [
    ("program overwritten with 100 random bytes (was: Exec format error, every run)", CHECK,
     lambda e: _random(e["kernel"] / "kernel"), r"kernel is 100 bytes; its build wrote [\d,]+ bytes"),
    ("program with one byte changed", CHECK, lambda e: _flip_one_byte(e["kernel"] / "kernel"),
     r"kernel is not what its build wrote \(SHA-256 differs\)"),
    ("runtime object cut short (was: ld: runtime.o: file too short)", CHECK, _runtime_cut_short,
     r"runtime.o is 1,000 bytes; its build wrote"),
    ("entry without its record (a build that never finished)", CHECK, lambda e: (e["kernel"] / "entry.json").unlink(),
     r"no entry.json: its build never finished"),
    ("record overwritten", CHECK, lambda e: _random(e["kernel"] / "entry.json"), r"its entry.json is unreadable"),
    ("trace program overwritten", TRACE, lambda e: _random(e["trace"] / "kernel"), r"kernel is 100 bytes"),
]


@pytest.mark.parametrize("fault, command, damage, line", FAULTS, ids=[f[0] for f in FAULTS])
def test_a_damaged_entry_is_built_again_once_with_one_line(seed, tmp_path, fault, command, damage, line):
    cache = _copy(seed, tmp_path / "cache")
    damage({k: cache / "emulator" / seed[k] for k in ("runtime", "kernel", "trace")})
    r = helpers_cli(*command, env={"TBT_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert ("PASS" in r.stdout) if command is CHECK else ("traced block 0" in r.stdout)
    said = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(said) == 1 and REBUILT in said[0] and re.search(line, said[0]), r.stderr
    assert "Traceback" not in r.stderr and "file too short" not in r.stderr
    if fault == FAULTS[0][0]:
        again = helpers_cli(*command, env={"TBT_CACHE_DIR": str(cache)})
        assert again.returncode == 0 and again.stderr == "", again.stderr   # healed: nothing to say the next time


def test_a_program_damaged_while_python_runs_is_built_again_at_its_next_launch(seed, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TBT_CACHE_DIR", str(_copy(seed, tmp_path / "cache")))
    compiler.forget_builds()
    try:
        program = emulator.build(KernelSource.read(ROOT / "kernels" / "02_naive.cu"), ("sgemm_naive",))
        _random(program.executable)
        rng = np.random.default_rng(0)
        A, B = rng.uniform(-1, 1, (20, 12)).astype(np.float32), rng.uniform(-1, 1, (12, 18)).astype(np.float32)
        C = np.zeros((20, 18), np.float32)
        emulator.launch(program, "sgemm_naive", (2, 2, 1), (16, 16, 1),
                        (np.int32(20), np.int32(18), np.int32(12), np.float32(1), A, B, np.float32(0), C))
        assert np.allclose(C, A @ B, atol=1e-5)
        assert REBUILT in capsys.readouterr().err
    finally:
        compiler.forget_builds()


def _zero_the_middle_keeping_size_and_dates(p: Path) -> None:
    """Damage no size or date shows: a tenth of the program's bytes zeroed in place, its times set back."""
    stat = p.stat()
    data = bytearray(p.read_bytes())
    n = len(data)
    data[n // 2:n // 2 + n // 10] = bytes(n // 10)
    with open(p, "r+b") as f:
        f.write(data)
    os.utime(p, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert p.stat().st_size == stat.st_size and p.stat().st_mtime_ns == stat.st_mtime_ns


def _sgemm_args():
    rng = np.random.default_rng(0)
    A, B = rng.uniform(-1, 1, (20, 12)).astype(np.float32), rng.uniform(-1, 1, (12, 18)).astype(np.float32)
    C = np.full((20, 18), np.nan, np.float32)
    return A, B, C, (np.int32(20), np.int32(18), np.int32(12), np.float32(1), A, B, np.float32(0), C)


@pytest.mark.parametrize("route", ["the next build() of it", "a launch of the program held"])
def test_a_program_damaged_in_place_with_its_size_and_date_is_caught(seed, tmp_path, monkeypatch, capsys, route):
    """Issue 32, item 10: a running notebook's cached program rewritten with the same size and modification
    time (was: 'the emulator failed unexpectedly (exit status -5)' until a fresh process)."""
    monkeypatch.setenv("TBT_CACHE_DIR", str(_copy(seed, tmp_path / "cache")))
    compiler.forget_builds()
    try:
        source = KernelSource.read(ROOT / "kernels" / "02_naive.cu")
        program = emulator.build(source, ("sgemm_naive",))
        A, B, C, args = _sgemm_args()
        emulator.launch(program, "sgemm_naive", (2, 2, 1), (16, 16, 1), args)     # checked whole, and runs
        _zero_the_middle_keeping_size_and_dates(program.executable)
        if route == "the next build() of it":
            program = emulator.build(source, ("sgemm_naive",))
        C[:] = np.nan
        emulator.launch(program, "sgemm_naive", (2, 2, 1), (16, 16, 1), args)
        assert np.allclose(C, A @ B, atol=1e-5)
        said = capsys.readouterr().err
        assert REBUILT in said and "SHA-256 differs" in said, said
    finally:
        compiler.forget_builds()


def _runtime_only(seed, to: Path) -> Path:
    """A cache with the seed's runtime and no program: the next run builds 02_naive's."""
    shutil.copytree(seed["root"] / "emulator" / seed["runtime"], to / "emulator" / seed["runtime"])
    return to


def test_a_build_killed_half_way_publishes_nothing_and_the_next_run_builds(tmp_path):
    cache = tmp_path / "cache"
    # The compiler, through a wrapper that waits before linking while SLOW_LINK is set: the build
    # is killed there for certain, with the kernel compiled and not yet linked.
    cxx = tmp_path / "cxx"
    cxx.write_text(f'#!/bin/sh\nif [ -n "$SLOW_LINK" ]; then case "$*" in *"-o kernel"*) sleep 60;; esac; fi\n'
                   f'exec {shutil.which("g++") or shutil.which("c++")} "$@"\n')
    cxx.chmod(0o755)
    env = {"TBT_CACHE_DIR": str(cache), "TBT_CXX": str(cxx)}
    proc = subprocess.Popen([sys.executable, "-m", "helpers", *CHECK], cwd=ROOT, env={**os.environ, **env, "SLOW_LINK": "1"},
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list((cache / "emulator").glob(".tmp-*/unit.o")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)               # Python and the compiler it runs, as a crash would
    proc.wait()
    left = list((cache / "emulator").glob(".tmp-*"))
    assert left and not [e for e in _entries(cache) if not e.startswith("runtime-")], "killed before publishing"
    hour_ago = time.time() - 2 * build_cache.STALE_S
    for p in left:
        os.utime(p, (hour_ago, hour_ago))
    r = helpers_cli(*CHECK, env=env)
    assert r.returncode == 0 and "PASS" in r.stdout and r.stderr == "", r.stderr
    assert not any(p.exists() for p in left), "what the killed build left is swept by the next build"


def test_builders_racing_for_one_entry(seed, tmp_path):
    env = {**os.environ, "TBT_CACHE_DIR": str(_runtime_only(seed, tmp_path / "cache"))}
    procs = [subprocess.Popen([sys.executable, "-m", "helpers", *CHECK], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "PASS" in out and err == "", err
    assert len(_entries(tmp_path / "cache")) == 2 and not list((tmp_path / "cache" / "emulator").glob(".*"))


# ---- a cache folder that cannot be written -------------------------------------------------------
def _unshare(mount: str) -> list[str] | None:
    """A command prefix that runs under `mount` (a shell line on "$0") in a user and mount namespace
    of its own, where no privilege is needed; None where this machine does not allow it."""
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs tmpfs /tmp"], capture_output=True)
    return ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"'] if probe.returncode == 0 else None


def _warning(stderr: str, why: str) -> str:
    said = [x for x in stderr.splitlines() if x.strip()]
    assert len(said) == 1, stderr
    assert "warning: the build cache" in said[0] and why in said[0] and "TBT_CACHE_DIR" in said[0], said[0]
    return said[0]


def test_a_read_only_cache_falls_back_to_a_temporary_folder_with_one_warning(seed, tmp_path):
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    env = {"TBT_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}
    prefix = _unshare('mount --bind -o ro "$0" "$0"')
    if os.geteuid() != 0:                               # an ordinary user: permissions are enough
        cache.mkdir()
        cache.chmod(0o555)
        prefix, why, uid = [], "Permission denied", os.getuid()
    elif prefix is None:
        pytest.skip("needs a folder root cannot write: unshare (user and mount namespaces) is not available")
    else:
        cache.mkdir()
        prefix, why, uid = [*prefix, str(cache)], "Read-only file system", 0   # uid 0 inside the namespace
    _runtime_only(seed, tmp / f"tile-by-tile-{uid}")   # the program is built there, the runtime kept
    try:
        r = helpers_cli(*CHECK, env=env, prefix=prefix)
    finally:
        cache.chmod(0o755)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stderr
    assert str(tmp / "tile-by-tile-") in _warning(r.stderr, why)
    assert not _entries(cache), "nothing was written to the read-only cache"


def test_a_read_only_cache_holding_the_build_is_used_as_it_is(seed, tmp_path):
    prefix = _unshare('mount --bind -o ro "$0" "$0"')
    if prefix is None:
        pytest.skip("needs unshare (user and mount namespaces)")
    cache, tmp = _copy(seed, tmp_path / "cache"), tmp_path / "tmp"
    tmp.mkdir()
    r = helpers_cli(*CHECK, env={"TBT_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}, prefix=[*prefix, str(cache)])
    assert r.returncode == 0 and "PASS" in r.stdout, r.stderr
    _warning(r.stderr, "Read-only file system")
    assert not any(p.name[0] != "." for p in tmp.rglob("emulator/*")), "nothing was built: the cache had it"


def test_a_full_disk_falls_back_to_a_temporary_folder(seed, tmp_path):
    prefix = _unshare('mount -t tmpfs -o size=256k tmpfs "$0"')
    if prefix is None:
        pytest.skip("needs unshare (user and mount namespaces) for a small full disk")
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir()
    fallback = tmp / "tile-by-tile-0"                 # uid 0 inside the namespace
    shutil.copytree(seed["root"] / "emulator", fallback / "emulator")   # so that nothing is compiled
    r = helpers_cli(*CHECK, env={"TBT_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}, prefix=[*prefix, str(cache)])
    assert r.returncode == 0 and "PASS" in r.stdout, r.stderr
    assert str(fallback) in _warning(r.stderr, "No space left on device")


def test_a_cache_path_through_a_file_falls_back_to_a_temporary_folder(seed, tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    tmp = tmp_path / "tmp"
    fallback = tmp / f"tile-by-tile-{os.getuid()}"
    shutil.copytree(seed["root"] / "emulator", fallback / "emulator")
    r = helpers_cli(*CHECK, env={"TBT_CACHE_DIR": str(tmp_path / "a_file" / "cache"), "TMPDIR": str(tmp)})
    assert r.returncode == 0 and "PASS" in r.stdout, r.stderr
    assert str(fallback) in _warning(r.stderr, "Not a directory")


def test_nowhere_to_write_stops_with_a_message_naming_tbt_cache_dir(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    monkeypatch.setattr(build_cache, "temporary_root", lambda: tmp_path / "a_file" / "tmp")
    build_cache.forget()
    try:
        with pytest.raises(CacheError) as err:
            build_cache.cache_dir()
    finally:
        build_cache.forget()
    text = str(err.value)
    assert "a_file/cache/emulator" in text and "a_file/tmp/emulator" in text and "Not a directory" in text
    assert "Fix: set TBT_CACHE_DIR to a folder you can write" in text

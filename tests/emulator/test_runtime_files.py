"""The emulator runtime's files (helpers/emulator/runtime/runtime_*.cpp): each compiles alone,
none is over 800 lines, and the runtime's cache key covers every one of them, so that editing
any file builds the runtime again. (The build compiles them as one unit: compiler.runtime_object.)
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers.emulator import compiler

pytestmark = pytest.mark.emulator

RUNTIME = compiler.RUNTIME_DIR
PARTS = sorted(p.name for p in RUNTIME.glob("runtime_*.cpp"))
CXX_FILES = sorted(p for p in RUNTIME.rglob("*") if p.suffix in (".cpp", ".h", ".cuh"))


def test_the_runtime_is_in_several_files():
    assert {"runtime_launch.cpp", "runtime_memory.cpp", "runtime_warps.cpp", "runtime_wgmma.cpp",
            "runtime_tma.cpp", "runtime_races.cpp"} <= set(PARTS)
    assert [p.name for p in compiler._runtime_parts()] == PARTS


@pytest.mark.parametrize("part", PARTS)
def test_each_runtime_file_compiles_alone(part):
    cxx = compiler.find_compiler()
    r = subprocess.run([cxx.path, "-std=c++17", "-fsyntax-only",
                        "-I", str(RUNTIME), str(RUNTIME / part)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("path", CXX_FILES, ids=lambda p: str(p.relative_to(RUNTIME)))
def test_no_emulator_cxx_file_is_over_800_lines(path):
    assert len(path.read_text().splitlines()) <= 800


def test_editing_any_runtime_file_changes_the_runtime_key(tmp_path, monkeypatch):
    copy = tmp_path / "runtime"
    shutil.copytree(RUNTIME, copy)
    monkeypatch.setattr(compiler, "RUNTIME_DIR", copy)
    before = compiler._runtime_sources()
    files = [p for p in copy.rglob("*") if p.suffix in (".cpp", ".h", ".cuh")]
    assert len(files) == len(CXX_FILES)
    for p in files:
        text = p.read_text()
        p.write_text(text + "// edited\n")
        assert compiler._runtime_sources() != before, p.name
        p.write_text(text)
    (copy / "runtime_new.cpp").write_text("")  # a new, empty file of the runtime changes it too
    assert compiler._runtime_sources() != before

"""NVRTC's verdicts and ptxas's counts kept on disk (helpers.emulator.build_cache.remembered, used by
helpers/run/toolchain.py): a later process asks the disk instead of compiling again; an edited source or header,
or a damaged file, is compiled again; where no cache can be written nothing is kept and nothing breaks."""

from __future__ import annotations

import json

import pytest

from helpers.core.errors import KernelCompileError
from helpers.core.kernel_source import KernelSource
from helpers.emulator import build_cache
from helpers.run import toolchain


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder, and a process that has compiled nothing yet (its memory caches emptied)."""
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path / "cache"))
    build_cache.forget()
    fresh_process()
    yield tmp_path / "cache"
    build_cache.forget()
    fresh_process()


def fresh_process():
    toolchain._nvrtc_verdict.cache_clear()
    toolchain._ptxas_cached.cache_clear()
    toolchain._PTX.clear()


@pytest.fixture
def compiles(monkeypatch):
    calls = []
    real = toolchain._compile_program
    monkeypatch.setattr(toolchain, "_compile_program", lambda *a: calls.append(a[2]) or real(*a))
    return calls


def kernel(tmp_path, body: str = "out[0] = SCALE;", header: str = "#define SCALE 2.0f\n") -> KernelSource:
    (tmp_path / "scale.cuh").write_text(header)
    cu = tmp_path / "k.cu"
    cu.write_text(f'#include "scale.cuh"\n__global__ void k(float* out) {{ {body} }}\n')
    return KernelSource.read(cu)


def test_a_verdict_is_read_from_disk_by_a_later_process(tmp_path, cache, compiles):
    toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))
    assert len(compiles) == 1 and len(list((cache / "results" / "nvrtc").glob("*.json"))) == 1
    fresh_process()
    toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))
    assert len(compiles) == 1                                   # from the disk: NVRTC was not run again


def test_a_rejection_is_kept_with_its_message_and_an_edit_is_a_new_key(tmp_path, cache, compiles):
    bad = kernel(tmp_path, body="out[0] = undefined_y;")
    for _ in range(2):
        with pytest.raises(KernelCompileError, match="undefined_y"):
            toolchain.check_gpu_compiles(bad, ("k",))
        fresh_process()
    assert len(compiles) == 1
    toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))    # the source edited: compiled again
    fresh_process()
    with pytest.raises(KernelCompileError, match="undefined_scale"):   # the header edited: compiled again
        toolchain.check_gpu_compiles(kernel(tmp_path, header="#define SCALE undefined_scale\n"), ("k",))
    assert len(compiles) == 3


def test_a_damaged_file_is_compiled_again_and_replaced(tmp_path, cache, compiles):
    toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))
    (entry,) = (cache / "results" / "nvrtc").glob("*.json")
    for damage in ("{not json", json.dumps({"key": "another key", "value": "forged"})):
        entry.write_text(damage)
        fresh_process()
        toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))
    assert len(compiles) == 3 and json.loads(entry.read_text())["value"]["log"] is None


def test_without_a_writable_cache_nothing_is_kept_and_the_verdict_is_the_same(tmp_path, monkeypatch, compiles):
    monkeypatch.setattr(build_cache, "cache_root", lambda: (_ for _ in ()).throw(build_cache.CacheError("no")))
    fresh_process()
    try:
        for _ in range(2):
            toolchain.check_gpu_compiles(kernel(tmp_path), ("k",))
            fresh_process()
        assert len(compiles) == 2
    finally:
        fresh_process()


def test_ptxas_counts_are_read_from_disk_and_reuse_the_checks_ptx(tmp_path, cache, compiles, monkeypatch):
    source = kernel(tmp_path)
    toolchain.check_gpu_compiles(source, ("k",))                   # the source check compiles once...
    first = toolchain.ptxas_info(source.path, "k", "sm_90")         # ...and ptxas reads its PTX: no second compile
    assert len(compiles) == 1 and first.registers > 0
    fresh_process()
    monkeypatch.setattr(toolchain, "_run_ptxas", lambda *a: pytest.fail("ptxas ran again"))
    assert toolchain.ptxas_info(source.path, "k", "sm_90") == first

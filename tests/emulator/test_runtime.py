"""The CPU emulator runs real CUDA C++ correctly.

Every test launches a kernel from tests/kernels/ through the course's launch call on the
emulator (the `cpu_backend` fixture forces it, GPU or not) and compares the result with an
expectation computed independently here, in NumPy, from the CUDA semantics; the emulator is
never compared with itself alone.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from helpers.core import paths
from helpers import emulator
from helpers.emulator import compiler
from helpers.core.errors import CompilerNotFoundError, KernelArgumentError, KernelCompileError
from helpers.core.kernel_source import KernelSource
from helpers.run.kernel_loader import load_kernel

KERNELS = paths.ROOT / "tests" / "kernels"

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def run(file: str, name: str, grid, block, args, shared_mem: int = 0) -> float:
    return load_kernel(KERNELS / file, name)(grid, block, args, shared_mem=shared_mem)


def marked_line(file: str, tag: str) -> int:
    """The line of tests/kernels/<file> that ends with `// LINE: <tag>`."""
    for number, text in enumerate((KERNELS / file).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"// LINE: {tag}"):
            return number
    raise LookupError(f"no `// LINE: {tag}` in {file}")


# ---- block barriers and shared memory --------------------------------------------------------

@pytest.mark.parametrize("threads, blocks", [(128, 3), (256, 2), (100, 5)])
def test_block_barrier_exchange(rng, threads, blocks):
    x = rng.integers(-10**6, 10**6, size=threads * blocks, dtype=np.int32)
    out = np.zeros_like(x)
    run("barriers.cu", "exchange", blocks, threads, (x, out))
    t = np.arange(threads)
    expected = x.reshape(blocks, threads)[:, (t + 1) % threads].reshape(-1)
    np.testing.assert_array_equal(out, expected)


def test_shared_memory_is_private_to_each_block():
    blocks, threads = 24, 128
    out = np.full(blocks * threads, -12345, dtype=np.int32)
    run("barriers.cu", "isolation", blocks, threads, (out,))
    np.testing.assert_array_equal(out, np.repeat(np.arange(blocks, dtype=np.int32), threads))


@pytest.mark.parametrize("dynamic", [False, True])
def test_unwritten_shared_memory_reads_as_nan_in_every_block(monkeypatch, dynamic):
    # One worker runs all the blocks one after another: what block b wrote must not show in
    # block b + 1, which must see the poison pattern instead.
    monkeypatch.setenv("TBT_WORKERS", "1")
    blocks, threads = 6, 64
    out = np.zeros(blocks * threads, dtype=np.float32)
    if dynamic:
        run("barriers.cu", "poison_dynamic", blocks, threads, (out,), shared_mem=threads * 4)
    else:
        run("barriers.cu", "poison_static", blocks, threads, (out,))
    out = out.reshape(blocks, threads)
    bits = out.view(np.uint32)
    for b in range(blocks):
        written = b % threads
        assert out[b, written] == b
        others = np.delete(bits[b], written)
        assert np.all(others == 0xFFFFFFFF), f"block {b}: {others[others != 0xFFFFFFFF][:4]}"
    assert np.isnan(np.delete(out[0], 0)).all()


def test_syncthreads_count_and_or(rng):
    blocks, threads = 5, 128
    pred = rng.integers(0, 2, size=(blocks, threads), dtype=np.int32)
    pred[1] = 1                      # all
    pred[2] = 0                      # none
    pred[3] = 0
    pred[3, 77] = 5                  # exactly one, and non-zero means true
    out = np.full(blocks * 3, -1, dtype=np.int32)
    run("barriers.cu", "sync_votes", blocks, threads, (pred.reshape(-1).copy(), out))
    nonzero = pred != 0
    expected = np.stack([nonzero.sum(1), nonzero.all(1), nonzero.any(1)], axis=1).astype(np.int32)
    np.testing.assert_array_equal(out.reshape(blocks, 3), expected)
    assert out.reshape(blocks, 3)[3].tolist() == [1, 0, 1]


# ---- warp collectives ---------------------------------------------------------------------

def shuffle_reference(v: np.ndarray, width: int, src: int, delta: int, lane_mask: int) -> np.ndarray:
    """The four shuffles of one warp's 32 values, lane by lane, from the CUDA Programming
    Guide's rules: lanes form segments of `width`; __shfl_sync reads lane
    (srcLane % width) of the caller's segment; up/down read lane -/+ delta, and a source outside
    the caller's segment gives the caller's own value; xor reads lane ^ laneMask, and a source
    in a later segment (beyond the caller's) gives the caller's own value."""
    out = np.empty((4, 32), dtype=v.dtype)
    for lane in range(32):
        first = (lane // width) * width
        last = first + width - 1
        out[0, lane] = v[first + (src + lane // width) % width]
        up = lane - delta
        out[1, lane] = v[up] if up >= first else v[lane]
        down = lane + delta
        out[2, lane] = v[down] if down <= last else v[lane]
        x = lane ^ lane_mask
        out[3, lane] = v[x] if x <= last else v[lane]
    return out


@pytest.mark.parametrize("width, src, delta, lane_mask", [
    (32, 5, 3, 1), (32, 0, 16, 31), (32, 31, 1, 16),
    (8, 3, 2, 5), (8, 7, 7, 3), (8, 1, 9, 8),   # delta past the segment; xor into another segment
    (16, 2, 4, 12),
])
def test_shuffles(rng, width, src, delta, lane_mask):
    threads = 64
    v = rng.integers(-2**31, 2**31 - 1, size=threads, dtype=np.int32)
    out = np.zeros(threads * 4, dtype=np.int32)
    run("warp.cu", "shuffles", 1, threads, (v, out, np.int32(width), np.int32(src), np.int32(delta),
                                             np.int32(lane_mask)))
    got = out.reshape(2, 4, 32)
    for warp in range(2):
        np.testing.assert_array_equal(got[warp], shuffle_reference(v[32 * warp:32 * warp + 32], width, src,
                                                                   delta, lane_mask),
                                      err_msg=f"warp {warp} (rows: idx, up, down, xor)")


def test_shuffle_segment_edges_by_hand():
    # Values equal to the lane number make the source lane visible directly.
    v = np.arange(32, dtype=np.int32)
    out = np.zeros(4 * 32, dtype=np.int32)
    run("warp.cu", "shuffles", 1, 32, (v, out, np.int32(8), np.int32(3), np.int32(2), np.int32(8)))
    idx, up, down, xor = out.reshape(4, 32)
    assert idx.tolist() == [3] * 8 + [12] * 8 + [21] * 8 + [30] * 8   # lane 3, 4, 5, 6 of each segment
    assert up[8:12].tolist() == [8, 9, 8, 9]       # lanes 8, 9: source before the segment: own value
    assert down[12:16].tolist() == [14, 15, 14, 15]  # lanes 14, 15: source after it: own value
    assert xor[:8].tolist() == list(range(8))      # lane ^ 8 is in a later segment: own value
    assert xor[8:16].tolist() == list(range(8))    # lane ^ 8 is in an earlier segment: its value


def test_shuffle_of_doubles_with_default_width(rng):
    v = rng.standard_normal(64)
    out, out2 = np.zeros(64), np.zeros(64)
    run("warp.cu", "shuffle_double", 1, 64, (v, out, out2))
    lanes = np.arange(64)
    np.testing.assert_array_equal(out, v[lanes ^ 5])
    np.testing.assert_array_equal(out2, v[(lanes // 32) * 32 + 31 - lanes % 32])


def test_ballot_any_all(rng):
    pred = rng.integers(0, 2, size=96, dtype=np.int32)
    pred[32:64] = 3                # warp 1: all true
    pred[64:96:2] = 0              # warp 2: even lanes all false, odd lanes random
    out = np.zeros(3 * 6, dtype=np.uint32)
    run("warp.cu", "votes", 1, 96, (pred, out))
    for warp in range(3):
        p = pred[32 * warp:32 * warp + 32] != 0
        ballot = sum(1 << lane for lane in range(32) if p[lane])
        even = sum(1 << lane for lane in range(0, 32, 2) if p[lane])
        expected = [ballot, int(p.any()), int(p.all()), even, int(p[::2].any()), int(p[::2].all())]
        assert out[6 * warp:6 * warp + 6].tolist() == expected, f"warp {warp}"


def test_syncwarp_orders_shared_memory_within_a_warp(rng):
    threads = 96
    x = rng.integers(-1000, 1000, size=threads, dtype=np.int32)
    out = np.zeros(2 * threads, dtype=np.int32)
    run("warp.cu", "warp_rotate", 1, threads, (x, out))
    t = np.arange(threads)
    np.testing.assert_array_equal(out[:threads], 3 * x)
    np.testing.assert_array_equal(out[threads:], 3 * x[t - t % 32 + (t % 32 + 1) % 32])


def test_warp_sum_int(rng):
    x = rng.integers(-10**6, 10**6, size=4 * 128, dtype=np.int32)
    sums = np.zeros(x.size // 32, dtype=np.int32)
    run("warp.cu", "warp_sum_int", 4, 128, (x, sums))
    np.testing.assert_array_equal(sums, x.reshape(-1, 32).sum(1))


def test_warp_sum_float_is_the_shuffle_tree_exactly(rng):
    x = rng.standard_normal(4 * 128).astype(np.float32)
    sums = np.zeros(x.size // 32, dtype=np.float32)
    run("warp.cu", "warp_sum_float", 4, 128, (x, sums))
    # The same tree in float32: lane l adds lane l + offset (its own value past lane 31).
    v = x.reshape(-1, 32).copy()
    lanes = np.arange(32)
    for offset in (16, 8, 4, 2, 1):
        src = np.where(lanes + offset < 32, lanes + offset, lanes)
        v = (v + v[:, src]).astype(np.float32)
    np.testing.assert_array_equal(sums, v[:, 0])
    np.testing.assert_allclose(sums, x.reshape(-1, 32).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_warp_max_butterfly(rng):
    x = rng.integers(-10**9, 10**9, size=256, dtype=np.int32)
    out = np.zeros_like(x)
    run("warp.cu", "warp_max_xor", 2, 128, (x, out))
    np.testing.assert_array_equal(out, np.repeat(x.reshape(-1, 32).max(1), 32))


@pytest.mark.parametrize("n", [32, 45, 70])
def test_activemask_after_an_early_exit_names_the_surviving_lanes(rng, n):
    x = rng.integers(-1000, 1000, size=96, dtype=np.int32)
    masks = np.zeros(96, np.uint32)
    sums = np.full(3, -1, np.int32)
    run("warp.cu", "active_lanes", 1, 96, (x, np.int32(n), masks, sums))
    for w in range(3):
        alive = max(0, min(32, n - 32 * w))
        want = np.uint32((1 << alive) - 1) if alive < 32 else np.uint32(0xFFFFFFFF)
        np.testing.assert_array_equal(masks[32 * w:32 * w + alive], want)
        assert sums[w] == (x[32 * w:32 * w + alive].sum() if alive else -1)


# ---- memory: vector loads, dynamic shared memory, alignment --------------------------------

def test_float4_and_float2_through_global_and_shared_memory(rng):
    blocks, threads = 3, 64
    x = rng.standard_normal(blocks * threads * 4).astype(np.float32)
    out = np.zeros_like(x)
    run("memory.cu", "vector_copy", blocks, threads, (x, out))
    quads = x.reshape(blocks, threads, 4)
    expected = 2.0 * quads[:, (np.arange(threads) + 1) % threads, :]
    np.testing.assert_array_equal(out, expected.reshape(-1))


@pytest.mark.parametrize("n, threads", [(256, 64), (1000, 128), (3000, 96)])
def test_dynamic_shared_memory_sized_at_launch(rng, n, threads):
    blocks = 3
    x = rng.standard_normal(blocks * n).astype(np.float32)
    out = np.zeros_like(x)
    run("memory.cu", "dynamic_reverse", blocks, threads, (x, out, np.int32(n)), shared_mem=4 * n)
    np.testing.assert_array_equal(out.reshape(blocks, n), x.reshape(blocks, n)[:, ::-1])


def test_buffers_are_256_byte_aligned():
    out = np.full(4, 99, dtype=np.uint64)
    run("memory.cu", "alignment", 1, 32, (np.zeros(3, np.float32), np.zeros(5, np.int32), np.zeros(7),
                                           np.zeros(13, np.uint8), out))
    assert out.tolist() == [0, 0, 0, 0]


# ---- atomics ----------------------------------------------------------------------------------

def test_global_atomics_are_exact_across_worker_processes(monkeypatch, rng):
    monkeypatch.setenv("TBT_WORKERS", "2")
    blocks, threads = 64, 128
    n = blocks * threads
    values = rng.integers(0, 10**9, size=n, dtype=np.int32)
    counters = np.zeros(2, dtype=np.int32)
    fcount = np.zeros(1, dtype=np.float32)
    maximum = np.array([np.iinfo(np.int32).min], dtype=np.int32)
    winner = np.array([-1], dtype=np.int32)
    wins = np.zeros(1, dtype=np.int32)
    run("atomics.cu", "atomics_global", blocks, threads, (values, counters, fcount, maximum, winner, wins))
    assert counters[0] == n
    assert counters[1] == int((values % 7).sum())
    assert fcount[0] == float(n)
    assert maximum[0] == values.max()
    assert wins[0] == 1
    assert 0 <= winner[0] < n


def test_shared_memory_atomics():
    blocks, threads = 6, 200
    per_block = np.zeros(blocks, dtype=np.int32)
    run("atomics.cu", "atomics_shared", blocks, threads, (per_block,))
    assert per_block.tolist() == [sum(t % 3 + 1 for t in range(threads))] * blocks


def test_histogram_atomics(rng):
    values = rng.integers(0, 10**6, size=40 * 256, dtype=np.int32)
    bins = np.zeros(37, dtype=np.uint32)
    run("atomics.cu", "histogram", 40, 256, (values, bins, np.int32(37)))
    np.testing.assert_array_equal(bins, np.bincount(values % 37, minlength=37))


# ---- the language: templates, device functions, unrolling, 3-D indices, printf --------------

@pytest.mark.parametrize("factor", [2, 3, 7])
def test_template_instantiations(rng, factor):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    run("language.cu", f"scale<{factor}>", (n + 255) // 256, 256, (x, out, np.int32(n)))
    np.testing.assert_array_equal(out, x * np.float32(factor))


@pytest.mark.parametrize("type_name, dtype", [("int", np.int32), ("float", np.float32), ("double", np.float64),
                                              ("unsigned long long", np.uint64)])
def test_type_template_instantiations(rng, type_name, dtype):
    n = 300
    x = (rng.integers(0, 1000, size=n)).astype(dtype)
    before = x.copy()
    run("language.cu", f"add_one<{type_name}>", 2, 256, (x, np.int32(n)))
    np.testing.assert_array_equal(x, before + 1)


def test_template_instantiation_checks_the_array_dtype():
    k = load_kernel(KERNELS / "language.cu", "add_one<double>")
    with pytest.raises(KernelArgumentError, match="float64"):
        k(1, 32, (np.zeros(32, np.float32), np.int32(32)))


def test_device_functions_and_pragma_unroll(rng):
    n = 500
    x = rng.integers(-50, 50, size=n, dtype=np.int32)
    out = np.zeros_like(x)
    run("language.cu", "helpers_unroll", 4, 128, (x, out, np.int32(n)))
    v = x.astype(np.int64)
    expected = v**2 + v**3 + (v + v**2 + v**3 + v**4) + 8 * v + 28
    np.testing.assert_array_equal(out, expected.astype(np.int32))


def test_3d_grids_and_blocks():
    grid, block = (2, 3, 2), (4, 2, 3)
    per_block = block[0] * block[1] * block[2]
    total = per_block * grid[0] * grid[1] * grid[2]
    out = np.full(12 * total, -1, dtype=np.int32)
    run("language.cu", "ids3d", grid, block, (out,))
    rows = out.reshape(total, 12)
    expected = []
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for tz in range(block[2]):
                    for ty in range(block[1]):
                        for tx in range(block[0]):
                            expected.append([tx, ty, tz, bx, by, bz, *block, *grid])
    np.testing.assert_array_equal(rows, np.array(expected, dtype=np.int32))


def test_printf_reaches_python_stdout(capsys):
    out = np.zeros(64, dtype=np.int32)
    run("language.cu", "hello", 2, 32, (out,))
    assert "hello from thread 3 of block 1\n" in capsys.readouterr().out
    assert (out == 7).all()


def test_launch_returns_the_grid_time():
    out = np.zeros(64, dtype=np.int32)
    seconds = run("language.cu", "hello", 2, 32, (out,))
    assert isinstance(seconds, float) and 0 < seconds < 10


# ---- the build: caching, check modes, workers ---------------------------------------------

@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty build cache, a forgotten in-process cache, and a record of compiler runs."""
    monkeypatch.setenv("TBT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiler, "_programs", {})
    compiler.forget_builds()
    calls: list[list[str]] = []
    real_run = compiler._run

    def counting_run(cmd, cwd):
        calls.append(list(cmd))
        return real_run(cmd, cwd)

    monkeypatch.setattr(compiler, "_run", counting_run)
    yield calls
    monkeypatch.undo()
    compiler.forget_builds()


def compiles(calls) -> int:
    return sum("-c" in cmd for cmd in calls)


@pytest.mark.slow
def test_second_build_compiles_nothing(fresh_cache, tmp_path):
    calls = fresh_cache
    cu = tmp_path / "lang.cu"
    shutil.copy(KERNELS / "language.cu", cu)
    source = KernelSource.read(cu)

    first = emulator.build(source, ("scale<2>",))
    assert compiles(calls) == 2  # the runtime and the kernel
    assert first.executable.is_file() and (tmp_path / "cache") in first.executable.parents

    calls.clear()
    assert emulator.build(source, ("scale<2>",)) is first  # in this process
    compiler._programs.clear()
    again = emulator.build(KernelSource.read(cu), ("scale<2>",))  # from the disk cache
    assert calls == [] and again.executable == first.executable

    other = emulator.build(source, ("scale<3>",))  # other template arguments: a new build
    assert compiles(calls) == 1 and other.executable != first.executable

    calls.clear()
    cu.write_text(source.text.replace("in[i] * (float)F", "in[i] * (float)F + 1.0f"))
    changed = emulator.build(KernelSource.read(cu), ("scale<2>",))  # changed source: a new build
    assert compiles(calls) == 1 and changed.executable != first.executable

    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    emulator.launch(changed, "scale<2>", (1, 1, 1), (32, 1, 1), (x, out, np.int32(8)))
    np.testing.assert_array_equal(out, 2 * x + 1)


@pytest.mark.slow
def test_second_load_kernel_compiles_nothing(fresh_cache, tmp_path):
    calls = fresh_cache
    cu = tmp_path / "atomics_copy.cu"
    shutil.copy(KERNELS / "atomics.cu", cu)
    load_kernel(cu, "atomics_shared")
    assert compiles(calls) >= 1
    calls.clear()
    k = load_kernel(cu, "atomics_shared")
    assert calls == []
    per_block = np.zeros(2, dtype=np.int32)
    k(2, 32, (per_block,))
    assert per_block.tolist() == [sum(t % 3 + 1 for t in range(32))] * 2


def test_call_checks_give_the_same_results_as_inline_checks(rng):
    results = {}
    for checks in ("inline", "calls"):
        warp = emulator.build(KernelSource.read(KERNELS / "warp.cu"), ("shuffles", "warp_sum_float"), checks=checks)
        mem = emulator.build(KernelSource.read(KERNELS / "memory.cu"), ("vector_copy", "dynamic_reverse"),
                             checks=checks)
        assert warp.checks == checks
        v = np.arange(64, dtype=np.int32) * 7 - 100
        shuffled = np.zeros(4 * 64, dtype=np.int32)
        emulator.launch(warp, "shuffles", (1, 1, 1), (64, 1, 1),
                        (v, shuffled, np.int32(8), np.int32(3), np.int32(2), np.int32(5)))
        x = np.linspace(-3, 3, 256, dtype=np.float32)
        sums = np.zeros(8, dtype=np.float32)
        emulator.launch(warp, "warp_sum_float", (2, 1, 1), (128, 1, 1), (x, sums))
        y = np.linspace(0, 1, 2 * 32 * 4, dtype=np.float32)
        copied = np.zeros_like(y)
        emulator.launch(mem, "vector_copy", (2, 1, 1), (32, 1, 1), (y, copied))
        z = np.linspace(-1, 1, 1000, dtype=np.float32)
        rev = np.zeros(2 * 500, dtype=np.float32)
        emulator.launch(mem, "dynamic_reverse", (2, 1, 1), (64, 1, 1), (z, rev, np.int32(500)), shared_mem=2000)
        results[checks] = (shuffled, sums, copied, rev)
    for a, b in zip(results["inline"], results["calls"]):
        np.testing.assert_array_equal(a, b)
    shuffled = results["calls"][0].reshape(2, 4, 32)
    np.testing.assert_array_equal(shuffled[1], shuffle_reference(v[32:], 8, 3, 2, 5))
    np.testing.assert_array_equal(results["calls"][2].reshape(2, 32, 4),
                                  2 * y.reshape(2, 32, 4)[:, (np.arange(32) + 1) % 32])
    np.testing.assert_array_equal(results["calls"][3].reshape(2, 500), z.reshape(2, 500)[:, ::-1])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_worker_count_does_not_change_results(monkeypatch, workers):
    monkeypatch.setenv("TBT_WORKERS", workers)
    blocks, threads = 16, 64
    x = np.arange(blocks * threads, dtype=np.int32) * 3 + 1
    exchanged = np.zeros_like(x)
    run("barriers.cu", "exchange", blocks, threads, (x, exchanged))
    per_block = np.zeros(blocks, dtype=np.int32)
    run("atomics.cu", "atomics_shared", blocks, threads, (per_block,))
    bins = np.zeros(5, dtype=np.uint32)
    run("atomics.cu", "histogram", blocks, threads, (x, bins, np.int32(5)))
    t = np.arange(threads)
    np.testing.assert_array_equal(exchanged, x.reshape(blocks, threads)[:, (t + 1) % threads].reshape(-1))
    assert per_block.tolist() == [sum(t % 3 + 1 for t in range(threads))] * blocks
    np.testing.assert_array_equal(bins, np.bincount(x % 5, minlength=5))


# ---- the compiler: missing, and errors in the kernel ----------------------------------------

@pytest.fixture
def compiler_lookup(monkeypatch):
    """Forgets the compiler found so far, and again after the test, once the environment is back."""
    compiler.find_compiler.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    compiler.find_compiler.cache_clear()


def test_no_compiler_on_path_gives_an_install_hint(compiler_lookup, tmp_path):
    compiler_lookup.delenv("TBT_CXX", raising=False)
    compiler_lookup.delenv("CXX", raising=False)
    compiler_lookup.setenv("PATH", str(tmp_path))  # an empty folder: no g++, clang++ or c++
    with pytest.raises(CompilerNotFoundError) as err:
        emulator.build(KernelSource.read(KERNELS / "language.cu"), ("scale<2>",))
    assert "apt-get install g++" in str(err.value) and "TBT_CXX" in str(err.value)


def test_tbt_cxx_naming_a_missing_compiler(compiler_lookup, tmp_path):
    compiler_lookup.setenv("TBT_CXX", "no-such-compiler-tbt")
    cu = tmp_path / "k.cu"
    shutil.copy(KERNELS / "language.cu", cu)
    with pytest.raises(CompilerNotFoundError, match="no-such-compiler-tbt"):
        load_kernel(cu, "scale<2>")


def test_compiler_found_again_after_the_missing_compiler_tests():
    assert Path(compiler.find_compiler().path).is_file()


def test_compile_errors_name_the_cu_file_and_its_own_line():
    line = marked_line("compile_error.cu", "compile_error")
    with pytest.raises(KernelCompileError) as err:
        load_kernel(KERNELS / "compile_error.cu", "broken")
    text = str(err.value)
    assert f"compile_error.cu:{line}:" in text
    assert "undeclared_variable" in text
    assert "unit.cpp" not in text


def test_a_wrong_name_expression_says_what_to_write():
    with pytest.raises(KernelCompileError, match=r"scale<4, 4>"):
        load_kernel(KERNELS / "language.cu", "scale<4, 4>")


def test_build_describes_the_kernel_parameters():
    program = emulator.build(KernelSource.read(KERNELS / "barriers.cu"), ("exchange",))
    out = subprocess.run([str(program.executable), "--describe"], capture_output=True, text=True, check=True).stdout
    assert "entry 0 2 exchange" in out
    assert [p.type_name for p in program.entries["exchange"].params] == ["const int*", "int*"]

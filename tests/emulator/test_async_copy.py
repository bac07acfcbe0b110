"""Asynchronous copies (<cuda_pipeline.h>: __pipeline_memcpy_async, __pipeline_commit,
__pipeline_wait_prior) on the CPU emulator: results, zero fill, groups, errors with their line,
and what traces and the race check see. Kernels: tests/kernels/async_copy.cu.
"""

from __future__ import annotations


import numpy as np
import pytest

from helpers.core import paths
from helpers.measure import memory
from helpers.measure import trace
from helpers.core.errors import KernelCrashError, OutOfBoundsError
from helpers.run.kernel_loader import load_kernel

KERNELS = paths.ROOT / "tests" / "kernels"
FILE = KERNELS / "async_copy.cu"

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def marked_line(tag: str) -> int:
    for number, text in enumerate(FILE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"// LINE: {tag}"):
            return number
    raise LookupError(f"no `// LINE: {tag}` in {FILE.name}")


def run(name, grid, block, args):
    return load_kernel(FILE, name)(grid, block, args)


def test_copies_land_and_are_shared_after_wait_and_barrier(rng):
    threads, blocks = 64, 3
    n = 4 * threads
    src = rng.standard_normal(n * blocks).astype(np.float32)
    out = np.zeros_like(src)
    run("rotate", blocks, threads, (src, out))
    np.testing.assert_array_equal(out.reshape(blocks, n), np.roll(src.reshape(blocks, n), -4, axis=1))


@pytest.mark.parametrize("size, zfill", [(16, 0), (16, 4), (16, 12), (16, 16), (8, 0), (8, 4), (4, 0), (4, 4)])
def test_zero_fill(size, zfill):
    src = np.arange(1, 5, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run("copy_one", 1, 1, (src, out, np.int32(size), np.int32(zfill)))
    copied, filled = (size - zfill) // 4, zfill // 4
    expected = np.concatenate([src[:copied], np.zeros(filled), -np.ones(4 - copied - filled)]).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_a_copy_lands_only_when_waited_for(rng):
    src = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(64, np.float32)
    run("read_before_wait", 1, 32, (src, out))
    assert np.isnan(out[:32]).all()  # shared memory as it was: never written (NaN on the emulator)
    np.testing.assert_array_equal(out[32:], src)


@pytest.mark.parametrize("prior, landed", [(0, 3), (1, 2), (2, 1), (3, 0), (9, 0)])
def test_wait_prior_leaves_the_most_recent_groups_in_flight(prior, landed):
    src = np.array([1, 2, 3], np.float32)
    out = np.full(3, -1, np.float32)
    run("groups", 1, 1, (src, out, np.int32(prior)))
    np.testing.assert_array_equal(out, np.where(np.arange(3) < landed, src, 0))


def test_a_source_past_the_end_is_reported_with_its_line(rng):
    threads = 32
    n = 4 * threads - 2
    src = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(threads, np.float32)
    with pytest.raises(OutOfBoundsError) as err:
        run("past_the_end", 1, threads, (src, out, np.int32(n)))
    text = str(err.value)
    assert "thread (31,0,0)" in text and f"loads src[{4 * 31}] (16 bytes), past the end of src" in text, text
    assert f"async_copy.cu:{marked_line('oob')}:" in text, text
    np.testing.assert_array_equal(out, 0)  # a failed launch leaves the arrays as they were


def test_a_misaligned_copy_is_reported_with_its_line():
    src, out = np.zeros(8, np.float32), np.zeros(1, np.float32)
    with pytest.raises(KernelCrashError) as err:
        run("misaligned", 1, 1, (src, out))
    text = str(err.value)
    assert "misaligned" in text and "multiples of 16" in text and "the source is 4 bytes" in text, text
    assert f"async_copy.cu:{marked_line('misaligned')}:" in text, text


def test_a_destination_outside_shared_memory_is_reported_with_its_line():
    src, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(KernelCrashError) as err:
        run("global_destination", 1, 1, (src, out))
    text = str(err.value)
    assert "is not shared memory" in text and f"async_copy.cu:{marked_line('global_dst')}:" in text, text


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_a_ring_of_stages_is_right_and_race_free(rng, stages):
    threads, tiles = 64, 7
    src = rng.standard_normal(threads * tiles).astype(np.float32)
    out = np.zeros(threads, np.float32)
    name = f"ring<{stages}, {stages - 2}, true>"
    run(name, 1, threads, (src, out, np.int32(tiles)))
    expected = np.roll(src.reshape(tiles, threads), -1, axis=1).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    t = trace.capture(FILE, name, 1, threads, (src, out, np.int32(tiles)))
    assert memory.races(t) == [] and memory.unwritten_reads(t) == []
    # every copy is traced where it is issued: a 4-byte global load, and a shared store in each
    # barrier interval it may still be in flight (STAGES - 1 of them)
    r = t.records
    loads = r[(r["space"] == 0) & (r["op"] == 0)]
    assert loads.size == threads * tiles and (loads["size"] == 4).all()
    in_loop = r[(r["line"] == marked_line("ring_copy")) & (r["space"] == 1)]
    assert (in_loop["op"] == 1).all() and in_loop.size == threads * (tiles - stages + 1) * (stages - 1)
    # ... but the copy is one instruction: all records after the first are marked as repeats, and
    # the warp requests count each copy once
    assert (in_loop["repeat"] == 1).sum() == threads * (tiles - stages + 1) * (stages - 2)
    copies = [q for q in memory.requests(t, "shared") if q.line == marked_line("ring_copy")]
    assert sum(len(q.lanes) for q in copies) == threads * (tiles - stages + 1)


def race_lines(name, threads=64, tiles=7):
    src = np.ones(threads * tiles, np.float32)
    out = np.zeros(threads, np.float32)
    races = memory.races(trace.capture(FILE, name, 1, threads, (src, out, np.int32(tiles))))
    return {(r.first[1], r.second[1]) for r in races}


def test_a_missing_barrier_is_a_race_between_the_copy_and_the_read():
    assert (marked_line("ring_copy"), marked_line("ring_read")) in race_lines("ring<3, 1, false>")


def test_waiting_for_too_few_groups_is_caught_by_the_result_and_the_race_check(rng):
    threads, tiles = 64, 7
    src = rng.standard_normal(threads * tiles).astype(np.float32) + 2
    out = np.zeros(threads, np.float32)
    run("ring<3, 2, true>", 1, threads, (src, out, np.int32(tiles)))  # wait_prior(2): tile i not yet in
    expected = np.roll(src.reshape(tiles, threads), -1, axis=1).sum(axis=0)
    assert not np.allclose(out, expected, rtol=1e-3)
    # the copy of tile i may still be landing while the neighbour reads it
    assert (marked_line("ring_copy"), marked_line("ring_read")) in race_lines("ring<3, 2, true>")

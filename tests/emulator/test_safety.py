"""A faulty kernel on the emulator raises the course's specific exception, never crashes Python.

Each message must name the kernel, the thread and block, the array and index (for global
memory), and the source line of the offending statement (found here from the `// LINE: tag`
comment in the kernel file); a failed launch must leave the caller's arrays untouched.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

from helpers.core import paths
from helpers import emulator
from helpers.core.errors import BarrierError, KernelCompileError, KernelCrashError, KernelTimeoutError, OutOfBoundsError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource
from helpers.run.kernel_loader import load_kernel

KERNELS = paths.ROOT / "tests" / "kernels"

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def marked_line(file: str, tag: str) -> int:
    for number, text in enumerate((KERNELS / file).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"// LINE: {tag}"):
            return number
    raise LookupError(f"no `// LINE: {tag}` in {file}")


def at_line(file: str, tag: str) -> str:
    """The `file.cu:LINE:` the message must point at."""
    return f"{file}:{marked_line(file, tag)}:"


def launch_fails(exc_type, file: str, name: str, grid, block, args, shared_mem: int = 0) -> str:
    """Launches, expects exc_type, checks that no array argument changed; returns the message."""
    before = [a.copy() for a in args if isinstance(a, np.ndarray)]
    kernel = load_kernel(KERNELS / file, name)
    with pytest.raises(exc_type) as err:
        kernel(grid, block, args, shared_mem=shared_mem)
    after = [a for a in args if isinstance(a, np.ndarray)]
    for i, (b, a) in enumerate(zip(before, after)):
        np.testing.assert_array_equal(a, b, err_msg=f"array argument {i} changed by a failed launch")
    text = str(err.value)
    assert text.startswith(f"{name}"), text
    return text


# ---- out-of-bounds accesses ------------------------------------------------------------------

def test_global_store_past_the_end(rng):
    n = 4096
    C = rng.standard_normal(n).astype(np.float32)  # the launch writes 1.0 everywhere: it must not stick
    text = launch_fails(OutOfBoundsError, "oob_global.cu", "store_past_end", 17, 256, (C, np.int32(n)))
    assert "C[4096]" in text and "past the end of C" in text
    assert "thread (0,0,0) of block (16,0,0)" in text  # global thread 4096 = 16 * 256 + 0
    assert "stores" in text and "valid indices 0 to 4095" in text
    assert at_line("oob_global.cu", "store_past_end") in text


def test_global_load_before_the_start(rng):
    n = 1000
    A = rng.standard_normal(n).astype(np.float32)
    out = rng.standard_normal(n).astype(np.float32)
    text = launch_fails(OutOfBoundsError, "oob_global.cu", "load_before_start", 4, 256, (A, out, np.int32(n)))
    assert "A[-1]" in text and "before the start of A" in text
    assert "thread (0,0,0) of block (0,0,0)" in text and "loads" in text
    assert at_line("oob_global.cu", "load_before_start") in text


@pytest.mark.parametrize("stride", [1 << 14, 1 << 22])  # inside the checked redzone, and far beyond it
def test_global_store_far_past_the_end(stride):
    C = np.arange(64, dtype=np.float32)
    text = launch_fails(OutOfBoundsError, "oob_global.cu", "store_far", 1, 64, (C, np.int32(64), np.int32(stride)))
    assert f"C[{5 + stride}]" in text and "past the end of C" in text
    assert "thread (5,0,0) of block (0,0,0)" in text
    assert at_line("oob_global.cu", "store_far") in text


def test_static_shared_out_of_bounds():
    out = np.full(64, 3.0, dtype=np.float32)
    text = launch_fails(OutOfBoundsError, "oob_shared.cu", "static_shared_oob", 2, 64, (out,))
    assert "byte 128 of the __shared__ array tile" in text and "tile has 128 bytes" in text
    assert re.search(r"thread \(32,0,0\) of block \([01],0,0\)", text), text
    assert at_line("oob_shared.cu", "static_shared_oob") in text


def test_running_off_one_shared_array_into_the_next_is_caught():
    out = np.zeros(64, dtype=np.float32)
    text = launch_fails(OutOfBoundsError, "oob_shared.cu", "shared_overflow_into_next<32>", 1, 64, (out,))
    assert "__shared__ array As" in text and "byte 128" in text
    assert at_line("oob_shared.cu", "shared_overflow_into_next") in text


def test_template_kernels_shared_memory_starts_as_nan():
    out = np.zeros(32, dtype=np.float32)
    load_kernel(KERNELS / "oob_shared.cu", "template_shared_poison<32>")(1, 32, (out,))
    assert np.all(out.view(np.uint32) == 0xFFFFFFFF)


def test_dynamic_shared_out_of_bounds():
    out = np.full(64, 3.0, dtype=np.float32)
    text = launch_fails(OutOfBoundsError, "oob_dynamic.cu", "dynamic_shared_oob", 2, 64, (out, np.int32(32)),
                        shared_mem=32 * 4)
    assert "dynamic shared memory" in text and "gave it 128 bytes" in text
    m = re.search(r"thread \((\d+),0,0\) of block \([01],0,0\) loads byte (\d+) ", text)
    assert m, text
    thread, byte = int(m.group(1)), int(m.group(2))
    assert thread >= 32 and byte == 4 * thread  # dyn[threadIdx.x], past the 32 floats given
    assert at_line("oob_dynamic.cu", "dynamic_shared_oob") in text


@pytest.mark.parametrize("checks", ["inline", "calls"])
def test_both_check_modes_catch_out_of_bounds(checks):
    program = emulator.build(KernelSource.read(KERNELS / "oob_global.cu"), ("store_past_end",), checks=checks)
    C = np.zeros(300, dtype=np.float32)
    with pytest.raises(OutOfBoundsError, match=r"C\[300\]") as err:
        emulator.launch(program, "store_past_end", (2, 1, 1), (256, 1, 1), (C, np.int32(300)))
    assert "thread (44,0,0) of block (1,0,0)" in str(err.value)
    assert at_line("oob_global.cu", "store_past_end") in str(err.value)
    assert not C.any()
    shared = emulator.build(KernelSource.read(KERNELS / "oob_shared.cu"), ("static_shared_oob",), checks=checks)
    with pytest.raises(OutOfBoundsError, match="past its end: tile has 128 bytes"):
        emulator.launch(shared, "static_shared_oob", (1, 1, 1), (64, 1, 1), (np.zeros(64, np.float32),))


# ---- crashes -----------------------------------------------------------------------------------

def test_wild_pointer_segfault():
    out = np.full(64, -7, dtype=np.int32)
    text = launch_fails(KernelCrashError, "crash.cu", "wild_pointer", 2, 32, (out,))
    assert "SIGSEGV" in text and "0x10" in text
    assert "thread (3,0,0) of block (1,0,0)" in text
    assert at_line("crash.cu", "wild_pointer") in text


@pytest.mark.parametrize("name, args, tag", [
    ("stack_recursion", (np.zeros(4, np.int32), np.int32(10**6)), "recurse"),
    ("stack_big_array", (np.zeros(4, np.int32), np.int32(5)), "big_array"),
])
def test_stack_overflow(name, args, tag):
    text = launch_fails(KernelCrashError, "crash.cu", name, 1, 4, args)
    assert "overflowed its 128 KiB stack" in text
    assert "thread (0,0,0) of block (0,0,0)" in text
    # The report points into the function that overflows: at the marked statement, or at the
    # function's first line (where the compiler probes the new frame).
    m = re.search(r"crash\.cu:(\d+):", text)
    assert m, text
    source = (KERNELS / "crash.cu").read_text().splitlines()
    marked = start = marked_line("crash.cu", tag)
    while not source[start - 1].startswith(("__device__", "__global__")):
        start -= 1
    assert start <= int(m.group(1)) <= marked, text


def test_failed_assert():
    out = np.full(64, -1, dtype=np.int32)
    text = launch_fails(KernelCrashError, "assert_fail.cu", "assert_fail", 2, 32, (out, np.int32(34)))
    assert "failed an assert" in text
    assert "thread (2,0,0) of block (1,0,0)" in text  # global thread 34
    assert "i != limit" in text and at_line("assert_fail.cu", "assert_fail") in text


def test_endless_loop_times_out(monkeypatch):
    monkeypatch.setenv("TBT_TIMEOUT", "2")
    load_kernel(KERNELS / "crash.cu", "endless_loop")  # compile outside the timed part
    start = time.monotonic()
    text = launch_fails(KernelTimeoutError, "crash.cu", "endless_loop", 1, 4,
                        (np.zeros(1, np.int32), np.full(4, 9, np.int32)))
    elapsed = time.monotonic() - start
    assert 1.5 < elapsed < 10, elapsed
    assert "time limit of 2 s" in text and "TBT_TIMEOUT" in text
    assert "thread (0,0,0) of block (0,0,0)" in text
    # the time limit interrupts the loop anywhere: on its condition or on its body's line
    loop = marked_line("crash.cu", "endless_loop")
    assert re.search(rf"crash\.cu:({loop}|{loop + 1}):", text), text


# ---- barriers ----------------------------------------------------------------------------------

def test_syncthreads_in_a_divergent_branch():
    out = np.zeros(32, dtype=np.int32)
    text = launch_fails(BarrierError, "barrier_errors.cu", "divergent_syncthreads", 1, 32, (out,))
    line = marked_line("barrier_errors.cu", "divergent_syncthreads")
    assert "block (0,0,0)" in text and "thread (16,0,0)" in text  # the first thread to skip it
    assert f"line {line}" in text and at_line("barrier_errors.cu", "divergent_syncthreads") in text
    assert "never reached" in text


def test_two_different_syncthreads():
    out = np.zeros(32, dtype=np.int32)
    text = launch_fails(BarrierError, "barrier_errors.cu", "two_barriers", 1, 32, (out,))
    even, odd = marked_line("barrier_errors.cu", "two_barriers_even"), marked_line("barrier_errors.cu", "two_barriers_odd")
    assert f"line {even} and line {odd}" in text and "different barriers" in text
    assert "block (0,0,0)" in text and "thread (1,0,0)" in text
    assert at_line("barrier_errors.cu", "two_barriers_odd") in text


def test_syncwarp_naming_an_exited_lane():
    out = np.zeros(64, dtype=np.int32)
    text = launch_fails(BarrierError, "barrier_errors.cu", "syncwarp_exited", 1, 64, (out,))
    assert "0xffffffff" in text and "lane 0" in text and "finished" in text
    assert "block (0,0,0)" in text and "thread (16,0,0)" in text
    assert at_line("barrier_errors.cu", "syncwarp_exited") in text


def test_syncwarp_deadlock():
    out = np.zeros(32, dtype=np.int32)
    text = launch_fails(BarrierError, "barrier_errors.cu", "warp_deadlock", 1, 32, (out,))
    line = marked_line("barrier_errors.cu", "warp_deadlock")
    assert "no thread of the block can go on" in text
    assert f"thread (0,0,0) waits at a warp collective (line {line})" in text
    assert f"thread (1,0,0) waits at __syncthreads (line {line + 2})" in text
    assert "block (0,0,0)" in text


def test_shuffle_with_a_mask_that_leaves_the_caller_out():
    out = np.zeros(32, dtype=np.int32)
    text = launch_fails(BarrierError, "barrier_errors.cu", "shuffle_bad_mask", 1, 32,
                        (np.arange(32, dtype=np.int32), out))
    assert "lane 16" in text and "0x0000ffff" in text and "leaves it out" in text
    assert "thread (16,0,0)" in text
    assert at_line("barrier_errors.cu", "shuffle_bad_mask") in text


# ---- what does not build ---------------------------------------------------------------------

def test_compile_error_names_its_line():
    with pytest.raises(KernelCompileError) as err:
        load_kernel(KERNELS / "compile_error.cu", "broken")
    assert at_line("compile_error.cu", "compile_error") in str(err.value)


def test_inline_ptx_is_refused_with_its_line():
    with pytest.raises(UnsupportedFeatureError) as err:
        load_kernel(KERNELS / "inline_ptx.cu", "lane_id")
    text = str(err.value)
    line = marked_line("inline_ptx.cu", "inline_ptx")
    assert f"inline_ptx.cu:{line}:" in text and "asm volatile" in text and "TBT_BACKEND=gpu" in text


# ---- after a failure, the next launch works ------------------------------------------------------

def test_a_good_launch_after_failures(rng):
    with pytest.raises(OutOfBoundsError):
        load_kernel(KERNELS / "oob_global.cu", "store_past_end")(2, 256, (np.zeros(300, np.float32), np.int32(300)))
    C = rng.standard_normal(300).astype(np.float32)
    load_kernel(KERNELS / "oob_global.cu", "store_past_end")(2, 256, (C, np.int32(299)))
    np.testing.assert_array_equal(C, np.ones(300, np.float32))

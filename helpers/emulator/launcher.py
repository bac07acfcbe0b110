"""Launching a built emulator program: buffers in, one worker process group, errors out.

The kernel runs in a separate process group, so a crash, a deadlock or an endless loop in
it can only end that process: the Python process (a notebook's Jupyter kernel) lives on and
gets an exception that names the kernel, the thread and block, the array, the index and the
source line. Arrays are copied into shared memory files for the launch and copied back only
when it succeeds, so a failed launch leaves the learner's arrays as they were.
"""

from __future__ import annotations

import math
import mmap
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from helpers.core.errors import (BarrierError, CacheError, InputError, KernelArgumentError, KernelCrashError,
                                  KernelRuntimeError, KernelTimeoutError, LaunchConfigError, OutOfBoundsError,
                                  UnsupportedFeatureError)
from helpers.emulator import build_cache
from helpers.emulator.compiler import EntryInfo, ParamInfo, Program, rebuild
from helpers.emulator.tensor_map import SIZE as TENSOR_MAP_SIZE
from helpers.emulator.tensor_map import TensorMapArg

TENSOR_MAP_TYPES = ("TensorMap",)  # the kernels' tensor-map parameter type (kernels/tma.cuh)

DEFAULT_TIME_LIMIT_S = 30.0


class ShadowUnavailable(RuntimeError):
    """The machine refused the address-space reservation of inline checks; use checks="calls"."""
_RESULT_BYTES = 8192


MAX_TIME_LIMIT_S = 7 * 24 * 3600     # TBT_TIMEOUT's largest (a week); past it a time-out no longer fits the runtime
MAX_WORKERS = 1024


def time_limit() -> float:
    """Seconds a launch may run before it is stopped: TBT_TIMEOUT, else 30. InputError naming the fix when it is not
    a number of seconds above 0 (a NaN, an infinity, 1e30 or -20 once raised deep inside a launch, or failed a
    correct kernel)."""
    text = os.environ.get("TBT_TIMEOUT")
    if text is None or not text.strip():
        return DEFAULT_TIME_LIMIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIME_LIMIT_S:      # NaN fails too
        raise InputError(f"TBT_TIMEOUT={text!r}: the seconds a kernel's launch may run on the emulator must be a "
                         f"number above 0 and at most {MAX_TIME_LIMIT_S:,}. Fix: e.g. TBT_TIMEOUT=120, or unset it "
                         f"for {DEFAULT_TIME_LIMIT_S:g} s.")
    return value


def default_workers() -> int:
    """Worker processes a launch spreads its blocks over: TBT_WORKERS, else one per core. InputError naming the fix
    when it is not a whole number from 1 to MAX_WORKERS."""
    text = os.environ.get("TBT_WORKERS")
    if text is None or not text.strip():
        return os.cpu_count() or 1
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise InputError(f"TBT_WORKERS={text!r}: the emulator's worker processes must be a whole number from 1 to "
                         f"{MAX_WORKERS}. Fix: e.g. TBT_WORKERS=4, or unset it for one per core "
                         f"({os.cpu_count() or 1} here).")
    return value


def _shared_file(name: str, nbytes: int) -> tuple[int, mmap.mmap]:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, 0)
    else:  # macOS and others: an unlinked temporary file
        f = tempfile.TemporaryFile()
        fd = os.dup(f.fileno())
        f.close()
    os.ftruncate(fd, max(nbytes, 1))
    return fd, mmap.mmap(fd, max(nbytes, 1))


_DTYPE_FOR = {("f", 4): np.float32, ("f", 8): np.float64, ("i", 4): np.int32, ("i", 8): np.int64,
              ("u", 4): np.uint32, ("u", 8): np.uint64, ("i", 2): np.int16, ("u", 2): np.uint16,
              ("i", 1): np.int8, ("u", 1): np.uint8}


def _describe_param(names: list[str], i: int, p: ParamInfo) -> str:
    name = f" ({names[i]})" if i < len(names) else ""
    return f"argument {i}{name}, of type `{p.type_name}`"


def _check_args(kernel: str, entry: EntryInfo, args, names: list[str]) -> None:
    if len(args) != len(entry.params):
        raise KernelArgumentError(f"{kernel} takes {len(entry.params)} arguments "
                                  f"({', '.join(p.type_name for p in entry.params)}) but was given {len(args)}.")
    for i, (a, p) in enumerate(zip(args, entry.params)):
        what = _describe_param(names, i, p)
        if isinstance(a, TensorMapArg) or p.type_name in TENSOR_MAP_TYPES:
            if not (isinstance(a, TensorMapArg) and p.type_name in TENSOR_MAP_TYPES and p.size == TENSOR_MAP_SIZE):
                raise KernelArgumentError(
                    f"{kernel}: {what} {'takes' if p.type_name in TENSOR_MAP_TYPES else 'is not'} a TMA tensor map. "
                    "Fix: build tensor maps with helpers.run.tensor_maps.operand_maps and pass them for the "
                    "kernel's `const __grid_constant__ TensorMap` parameters only.")
            continue
        if p.is_pointer:
            if not isinstance(a, np.ndarray):
                raise KernelArgumentError(f"{kernel}: {what} needs an array, got {type(a).__name__}.")
            want = _DTYPE_FOR.get((p.category, p.pointee_size))
            if want is not None and a.dtype != want:
                raise KernelArgumentError(
                    f"{kernel}: {what} needs a {np.dtype(want).name} array, got {a.dtype}. "
                    f"Fix: pass x.astype(np.{np.dtype(want).name}).")
        else:
            want = _DTYPE_FOR.get((p.category, p.size))
            if not isinstance(a, np.generic) or (want is not None and a.dtype != want):
                got = type(a).__name__ if not isinstance(a, np.generic) else a.dtype.name
                fix = f"np.{np.dtype(want).name}(value)" if want is not None else "a NumPy scalar of that type"
                raise KernelArgumentError(
                    f"{kernel}: {what} got {got}. Pass scalars typed, as {fix}: on a GPU, CuPy would pass "
                    f"a Python int as a 64-bit integer and the kernel would read garbage.")


@dataclass
class _Buffer:
    fd: int
    view: mmap.mmap
    array: np.ndarray
    writable: bool


# One traced access, as runtime/runtime_memory.cpp's TraceRecord writes it.
TRACE_RECORD = np.dtype([("pc", "<u8"), ("offset", "<i8"), ("block", "<u4"), ("epoch", "<u4"),
                         ("warp_epoch", "<u4"), ("seq", "<u4"), ("thread", "<u2"), ("buffer", "i1"),
                         ("space", "u1"), ("size", "u1"), ("op", "u1"), ("repeat", "u1"), ("pad", "V1")])
assert TRACE_RECORD.itemsize == 40
_TRACE_HEADER = 16


@dataclass(frozen=True)
class SharedVariable:
    name: str
    offset: int   # bytes from the start of the block's static shared memory
    size: int
    line: int     # of its declaration


@dataclass
class RawTrace:
    records: np.ndarray   # TRACE_RECORD entries in program order of each thread
    dropped: int          # accesses beyond the capacity, counted but not kept
    param_buffer: list    # for each kernel parameter, its buffer index (pointers) or None
    shared: list          # SharedVariable of each __shared__ array of the kernel


def launch(program: Program, name_expression: str, grid, block, args, shared_mem: int = 0,
           timeout: float | None = None, workers: int | None = None) -> float:
    """Runs the kernel to completion; returns the grid's run time in seconds (no process start)."""
    program = _verified(program)
    try:
        return _launch(program, name_expression, grid, block, args, shared_mem, timeout, workers)[0]
    except _Unstartable:  # its cached program was damaged since it was built: built again, once
        return _launch(rebuild(program), name_expression, grid, block, args, shared_mem, timeout, workers)[0]
    except KernelRuntimeError as e:
        if not _damaged_since_built(program, e):
            raise
        return _launch(rebuild(program), name_expression, grid, block, args, shared_mem, timeout, workers)[0]


def trace(program: Program, name_expression: str, grid, block, args, blocks, shared_mem: int = 0,
          capacity: int = 4_000_000, timeout: float | None = None) -> RawTrace:
    """Runs only `blocks` (linear block indices) of the grid, one after another, recording every
    shared and global access of their threads. Needs a checks="trace" build."""
    if program.checks != "trace":
        raise ValueError("tracing needs a program built with checks='trace'")
    program = _verified(program)
    try:
        return _launch(program, name_expression, grid, block, args, shared_mem, timeout, 1,
                       trace_blocks=tuple(blocks), trace_capacity=capacity)[1]
    except (_Unstartable, KernelRuntimeError) as e:  # as in launch()
        if not isinstance(e, _Unstartable) and not _damaged_since_built(program, e):
            raise
        return _launch(rebuild(program), name_expression, grid, block, args, shared_mem, timeout, 1,
                       trace_blocks=tuple(blocks), trace_capacity=capacity)[1]


def _verified(program: Program) -> Program:
    """The program, its file checked before it runs: by its identity (a stat), hashed again when that changed
    (a file rewritten in place keeping its size and date still has a new change time); built again if damaged."""
    if build_cache.problem(program.executable.parent, program.executable.name) is None:
        return program
    return rebuild(program)


def _damaged_since_built(program: Program, e: Exception) -> bool:
    """Whether a program that failed unexpectedly or crashed (a fault the runtime cannot tell from the kernel's)
    is no longer what its build wrote: its cache entry hashed again, whatever its size and date say. The rebuild
    that follows says so in one line (build_cache.entry)."""
    return type(e) in (KernelRuntimeError, KernelCrashError) and \
        build_cache.problem(program.executable.parent, program.executable.name, recheck=True) is not None


def _buffer_index(buffers: list, a: np.ndarray, name_expression: str) -> int:
    """The launch's buffer holding array `a`, made (a shared file with a copy of it) at its first use."""
    b = next((k for k, buf in enumerate(buffers) if buf.array is a), None)
    if b is not None:
        return b
    if any(np.shares_memory(a, buf.array) for buf in buffers):
        raise KernelArgumentError(
            f"{name_expression}: two array arguments overlap in memory; the emulator "
            f"needs each argument to be a separate array (or the very same one).")
    fd, view = _shared_file("buffer", a.nbytes)
    np.frombuffer(view, dtype=np.uint8, count=a.nbytes)[:] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    buffers.append(_Buffer(fd, view, a, False))
    return len(buffers) - 1


def _launch(program, name_expression, grid, block, args, shared_mem, timeout, workers,
            trace_blocks=None, trace_capacity=0):
    entry = program.entries[name_expression]
    names = program.source.parameter_names(name_expression)
    _check_args(name_expression, entry, args, names)
    cluster = program.nvrtc.cluster(name_expression)
    _check_cluster(name_expression, grid, cluster)
    buffers: list[_Buffer] = []
    lines = [f"entry {entry.index}", "grid {} {} {}".format(*grid), "block {} {} {}".format(*block),
             f"dynamic_smem {shared_mem}", f"workers {workers or default_workers()}",
             f"timeout_ms {int((timeout or time_limit()) * 1000)}"]
    if cluster:
        lines.append("cluster {} {} {}".format(*cluster))
    param_lines, param_buffer = [], []
    try:
        for a, p in zip(args, entry.params):
            if isinstance(a, TensorMapArg):  # the map names its array by buffer index (written: TMA stores)
                b = _buffer_index(buffers, a.array, name_expression)
                buffers[b].writable |= a.writable
                param_lines.append(f"value {a.encode(b).hex()}")
                param_buffer.append(b)
            elif p.is_pointer:
                b = _buffer_index(buffers, a, name_expression)
                buffers[b].writable |= not p.pointee_const
                param_lines.append(f"pointer {b} 0")
                param_buffer.append(b)
            else:
                param_lines.append(f"value {a.tobytes().hex()}")
                param_buffer.append(None)
        result_fd, result_view = _shared_file("result", _RESULT_BYTES)
        lines += [f"result_fd {result_fd}"]
        lines += [f"buffer {buf.fd} {buf.array.nbytes}" for buf in buffers]
        fds = [result_fd] + [buf.fd for buf in buffers]
        if trace_blocks is not None:
            trace_fd, trace_view = _shared_file("trace", _TRACE_HEADER + trace_capacity * TRACE_RECORD.itemsize)
            fds.append(trace_fd)
            lines += [f"trace {trace_fd} {trace_capacity}"] + [f"trace_block {b}" for b in trace_blocks]
        lines += param_lines + ["run", ""]
        out, err, code = _run_process(program, "\n".join(lines), fds, timeout or time_limit())
        if out:
            sys.stdout.write(out)  # the kernel's printf
        text = result_view[4:].split(b"\0", 1)[0].decode(errors="replace")
        if code != 0:
            raise _error(program, name_expression, text, code, err, args, entry, names, param_buffer,
                         timeout or time_limit())
        elapsed = int(_fields(text).get("elapsed_ns", 0)) / 1e9
        if trace_blocks is not None:  # a traced run computed only some blocks: keep no results
            return elapsed, _read_trace(trace_view, param_buffer, _fields(text).get("shared", ""))
        for buf in buffers:
            if buf.writable and buf.array.nbytes:
                _copy_back(buf)
        return elapsed, None
    finally:
        for buf in buffers:
            buf.view.close()
            os.close(buf.fd)
        if "result_fd" in locals():
            result_view.close()
            os.close(result_fd)
        if "trace_fd" in locals():
            trace_view.close()
            os.close(trace_fd)


def _check_cluster(kernel: str, grid, cluster) -> None:
    """A kernel declared __cluster_dims__(x, y, z) runs in clusters of that shape, and a GPU refuses a launch whose
    grid is not made of whole clusters (cuLaunchKernel: CUDA_ERROR_INVALID_CLUSTER_SIZE); at most 8 blocks a cluster
    (the portable size; more needs an opt-in this course does not make)."""
    if not cluster:
        return
    size = math.prod(cluster)
    if size > 8:
        raise LaunchConfigError(f"{kernel}: __cluster_dims__{tuple(cluster)} makes clusters of {size} blocks; a GPU "
                                f"launches at most 8 (the portable cluster size).\nFix: at most 8 blocks a cluster.")
    grid = tuple(grid) + (1,) * (3 - len(grid))
    if any(g % c for g, c in zip(grid, cluster)):
        raise LaunchConfigError(f"{kernel}: the grid {grid} is not made of whole clusters of {tuple(cluster)} blocks "
                                f"(the kernel's __cluster_dims__): a GPU refuses the launch "
                                f"(CUDA_ERROR_INVALID_CLUSTER_SIZE).\nFix: launch a grid whose every dimension is a "
                                f"multiple of the cluster's.")


def _read_trace(view: mmap.mmap, param_buffer: list, shared: str) -> RawTrace:
    count, capacity = np.frombuffer(view, dtype="<u8", count=2)
    kept = int(min(count, capacity))
    records = np.frombuffer(view, dtype=TRACE_RECORD, count=kept, offset=_TRACE_HEADER).copy()
    variables = []
    for item in filter(None, shared.split(",")):
        name, offset, size, line = item.rsplit(":", 3)
        variables.append(SharedVariable(name, int(offset), int(size), int(line)))
    return RawTrace(records, int(count - kept), list(param_buffer), variables)


def _copy_back(buf: _Buffer) -> None:
    flat = np.frombuffer(buf.view, dtype=buf.array.dtype, count=buf.array.size)
    np.copyto(buf.array, flat.reshape(buf.array.shape))


class _Unstartable(CacheError):
    """The program's file could not be run (damaged or deleted since it was built)."""


def _run_process(program: Program, request: str, fds: list[int], limit: float):
    try:
        proc = subprocess.Popen([str(program.executable)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=fds, start_new_session=True, text=True)
    except OSError as e:
        raise _Unstartable(f"the emulator program {program.executable} could not be started ({e.strerror or e}), "
                           f"even after it was built again. Delete the folder and try again.") from None
    try:
        out, err = proc.communicate(request, timeout=limit + 10)  # the runtime stops itself first
    except BaseException:  # a backstop time-out, or the learner pressed interrupt
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it had ended already (the interrupt reached it too)
            pass
        proc.communicate()
        raise
    return out, err, proc.returncode


def _fields(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(";") if "=" in part)


def _source_line(program: Program, pc: str | None) -> int | None:
    """The kernel file's line of a code address, through addr2line's inline chain."""
    if not pc or pc in ("(nil)", "0x0"):
        return None
    addr = hex(int(pc, 16) - 1)  # return addresses point just past the call
    out = subprocess.run(["addr2line", "-i", "-e", str(program.executable), addr], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        path, _, num = line.rpartition(":")
        num = num.split(" ")[0]
        if path == str(program.source.path) and num.isdigit():
            return int(num)
    return None


def _at(program: Program, line: int | None) -> str:
    if not line:
        return ""
    return f"\n  at {program.source.display_path}:{line}:  {program.source.line(line)}"


def _who(f: dict[str, str]) -> str:
    if "thread" not in f:
        return ""
    return f"thread ({f['thread']}) of block ({f['block']}) "


def _oob_message(program, kernel, f, args, entry, names, param_buffer) -> str:
    op = {"store": "stores", "load": "loads"}.get(f.get("op"), "touches")
    offset, size = int(f.get("offset", f.get("var_offset", 0))), int(f.get("size", 1))
    # A fault caught by the signal handler knows the address, not the access's width.
    nbytes = f" ({size} bytes)" if f.get("op") in ("load", "store") else ""
    space = f["space"]
    if space == "global":
        b = int(f["buffer"])
        i = param_buffer.index(b)
        arr, p = args[i], entry.params[i]
        name = names[i] if i < len(names) else f"argument {i}"
        item = p.pointee_size if p.category != "?" else arr.itemsize
        where = (f"{name}[{offset // item}]" if offset % item == 0 else f"byte {offset} of {name}")
        n = arr.size
        side = "before the start" if offset < 0 else "past the end"
        return (f"{kernel}: {_who(f)}{op} {where}{nbytes}, {side} of {name}, which has {n} "
                f"elements of {arr.itemsize} bytes (valid indices 0 to {n - 1}).")
    if space == "dynamic_shared":
        return (f"{kernel}: {_who(f)}{op} byte {offset} of dynamic shared memory{nbytes}, but the "
                f"launch gave it {f['limit']} bytes (shared_mem=).")
    if "var" in f:  # past the end of one __shared__ array (into the gap before the next)
        var, var_size = f["var"], int(f["var_size"])
        return (f"{kernel}: {_who(f)}{op} byte {offset} of the __shared__ array {var}{nbytes}, past its end: "
                f"{var} has {var_size} bytes (valid byte offsets 0 to {var_size - 1}).")
    return (f"{kernel}: {_who(f)}{op} byte {offset} of static shared memory{nbytes}, before any "
            f"__shared__ array.")


_FIXES = {
    "oob": "Fix: check the index arithmetic, and guard loads and stores at the matrix edges "
           "(e.g. `if (row < M && col < N)`) so that every size works.",
    "divergence": "Fix: every thread of the block must reach each __syncthreads (every lane in the mask "
                  "each warp collective, every thread of a warpgroup each wgmma call): move barriers out "
                  "of conditions that differ between threads, and let threads past the edge skip the work, "
                  "not the barrier. On a GPU this hangs or silently gives wrong results.",
    "deadlock": "Fix: make every thread reach the same barriers in the same order.",
    "shuffle_source": "Fix: read only lanes in the mask (on a GPU a value read from a lane outside it "
                      "is undefined): clamp the source lane, or widen the mask.",
    "stack_overflow": "Fix: make per-thread local arrays smaller (they live in registers or local memory "
                      "on a GPU).",
    "crash": "Fix: look for a pointer that is not one of the kernel's arrays, or a division by zero.",
    "wmma": "Fix: give wmma::load_matrix_sync and store_matrix_sync a pointer that is a multiple of 32 bytes "
            "(a tile's corner at a multiple of 8 floats from an aligned array) and ldm a multiple of 4 floats; "
            "pad shared rows by a multiple of 4 floats. On a GPU this is undefined: a misaligned-address error or "
            "wrong results.",
    "async_copy": "Fix: __pipeline_memcpy_async(dst, src, bytes, zfill) copies 4, 8 or 16 bytes from a global "
                  "array to a __shared__ one, both addresses multiples of the size; at the edges, fall back to "
                  "4-byte copies or zero-fill (zfill = bytes, with src any valid address).",
}


def _error(program: Program, kernel: str, text: str, code: int, stderr: str, args, entry, names,
           param_buffer, limit: float) -> Exception:
    f = _fields(text)
    kind = f.get("kind")
    line = int(f["line"]) if f.get("line", "").isdigit() else _source_line(program, f.get("pc"))
    at = _at(program, line)
    fix = f"Fix: {f['fix']}." if kind in ("deadlock", "divergence") and f.get("fix") else _FIXES.get(kind, "")
    if kind == "oob":
        return OutOfBoundsError(f"{_oob_message(program, kernel, f, args, entry, names, param_buffer)}{at}\n{fix}")
    if kind in ("divergence", "deadlock", "shuffle_source"):
        who = f"in block ({f['block']}), thread ({f['thread']}): " if "thread" in f else ""
        return BarrierError(f"{kernel}: {who}{f.get('detail', kind)}.{at}\n{fix}")
    if kind == "timeout":
        return KernelTimeoutError(
            f"{kernel} ran past the time limit of {limit:g} s and was stopped; {_who(f)}was running"
            f"{' at' if at else ''}{at or ' (line unknown)'}\nFix: look for a loop that never ends; for a "
            f"launch that really is that long, use a smaller size or raise TBT_TIMEOUT (seconds).")
    if kind == "stack_overflow":
        return KernelCrashError(f"{kernel}: {_who(f)}overflowed its {int(f['limit']) // 1024} KiB stack.{at}\n{fix}")
    if kind == "crash":
        sig = int(f.get("signal", 0))
        name = signal.Signals(sig).name if sig in signal.valid_signals() else f"signal {sig}"
        detail = f.get("detail") or (f"address {f['addr']}" if "addr" in f else "")
        assertion = "".join(ln + "\n" for ln in stderr.splitlines() if "Assertion" in ln or "assert" in ln)
        what = "failed an assert" if sig == signal.SIGABRT and assertion else f"crashed ({name}{', ' + detail if detail else ''})"
        return KernelCrashError(f"{kernel}: {_who(f)}{what}.{at}\n{assertion}{fix}".rstrip())
    if kind == "async_copy":  # on a GPU: a misaligned or illegal address, or a trap in <cuda_pipeline.h>
        return KernelCrashError(f"{kernel}: {_who(f)}{f.get('detail')}.{at}\n{_FIXES['async_copy']}")
    if kind == "wmma":
        return KernelCrashError(f"{kernel}: {_who(f)}{f.get('detail')}.{at}\n{_FIXES['wmma']}")
    if kind == "barrier":   # a named barrier's id or count: a hang or a barrier that completes too early on a GPU
        return BarrierError(f"{kernel}: {_who(f)}{f.get('detail')}.{at}\nFix: {f.get('fix')}.")
    if kind in ("wgmma", "cvta", "mbarrier", "tma", "cluster"):  # undefined on a GPU: wrong results, a hang, an illegal instruction
        return KernelCrashError(f"{kernel}: {_who(f)}{f.get('detail')}.{at}\nFix: {f.get('fix')}.")
    if kind == "too_much_shared":
        return LaunchConfigError(f"{kernel}: {f.get('detail')}.{at}\nFix: smaller tiles.")
    if kind == "no_shadow":
        return ShadowUnavailable(text)
    if kind == "unsupported":
        return UnsupportedFeatureError(f"{kernel}: {f.get('detail')}.{at}")
    tail = "\n".join(stderr.strip().splitlines()[-10:])
    return KernelRuntimeError(
        f"{kernel}: the emulator failed unexpectedly (exit status {code}); {text or 'no report'}\n{tail}\n"
        f"This is a bug of the course, not of your kernel: please report it with the kernel file.")

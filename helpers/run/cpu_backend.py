"""The CPU backend: kernels run on the emulator, arrays are NumPy arrays. A kernel is built only
once NVRTC has compiled it as for a GPU (build()): the emulator runs what a GPU compiler accepts."""

from __future__ import annotations

import contextlib
import contextvars
import re

import numpy as np

from helpers import emulator
from helpers.core.device import host_description
from helpers.core.device import DeviceInfo
from helpers.emulator.launcher import ShadowUnavailable
from helpers.emulator.tensor_map import TensorMapArg
from helpers.core.errors import KernelArgumentError, KernelCompileError
from helpers.core.kernel_source import KernelSource
from helpers.run.toolchain import check_gpu_compiles

NAME = "cpu"
xp = np
# Shared-memory limits enforced as on a Hopper GPU, so that a launch the GPU would refuse
# is refused here too.
MAX_STATIC_SHARED = 48 * 1024
MAX_SHARED_PER_BLOCK = 227 * 1024


def banner() -> str:
    return (f"Backend: CPU emulator (no CUDA GPU in use) on {host_description()}; kernels from "
            f"kernels/*.cu run unchanged, compiled by {emulator.find_compiler().version}. "
            f"Results are real; emulator timings are not GPU timings.")


def device_info() -> DeviceInfo:
    return DeviceInfo(backend=NAME, name=host_description(), compiler=emulator.find_compiler().version,
                      shared_per_block_kib=MAX_SHARED_PER_BLOCK / 1024)


# Which build compile() makes, per thread: the emulator's optimized build, or its trace build (unoptimized, every
# access checked by a call into the runtime: the same checks and results, compiled in a fraction of the time and
# run slower), for callers that run only small problems (the tile explorer: see quick_builds).
_BUILD = contextvars.ContextVar("tbt_emulator_build", default="inline")


@contextlib.contextmanager
def quick_builds():
    """Within it (on this thread), kernels are compiled as the emulator's trace builds, which tracing the same
    kernel needs anyway: one build per kernel instead of two, at a fraction of the optimized build's compile
    time. Right for small problems only (an unoptimized build runs several times slower)."""
    token = _BUILD.set("trace")
    try:
        yield
    finally:
        _BUILD.reset(token)


def build_kind() -> str:
    """The build compile() makes on this thread ("inline": optimized; "trace": see quick_builds)."""
    return _BUILD.get()


def compile(source: KernelSource, name_expressions: tuple[str, ...]):
    return build(source, name_expressions, checks=_BUILD.get())


def build(source: KernelSource, name_expressions: tuple[str, ...], checks: str = "inline"):
    """The emulator's program for these instantiations, built only once NVRTC has compiled them for
    a GPU (helpers.core.arch.DEFAULT_ARCH; sm_90a for wgmma): the emulator runs exactly what a GPU
    compiler accepts, and where NVRTC refuses, its message is the one the learner sees."""
    nvrtc = check_gpu_compiles(source, name_expressions)
    if checks == "trace" and len(name_expressions) == 1:
        ahead = _BUILT_AHEAD.get((source, tuple(source.local_headers().values()), name_expressions[0], nvrtc))
        if ahead is not None:
            return ahead
    try:   # built from what NVRTC compiled: its macros, the same branches of every #if (helpers/emulator/same_code.py)
        return emulator.build(source, name_expressions, checks=checks, nvrtc=nvrtc)
    except KernelCompileError as e:
        hint = _c_library_hint(str(e))
        if not hint:
            raise
        raise KernelCompileError(str(e) + hint) from None


# Trace builds made for several instantiations at once (build_ahead): (source, its headers' text, name expression,
# what NVRTC saw) -> the program that holds it among others.
_BUILT_AHEAD: dict = {}


def build_ahead(source: KernelSource, name_expressions: tuple[str, ...]) -> bool:
    """One trace build (see quick_builds) of several instantiations, which a later build(..., checks="trace") of
    any one of them returns (once NVRTC has passed that one): one compiler run for all instead of one each (the
    tile explorer's neighbouring settings). False, and nothing kept, when the compiler refuses any of them (each
    is then built alone, with its own message). The build takes what NVRTC saw of the first (its macros and the
    branches of every #if, which the preprocessor decides whatever the instantiation); a later build() returns it
    only where NVRTC saw the same of the one it asks for."""
    try:
        nvrtc = check_gpu_compiles(source, tuple(name_expressions[:1]))
        program = emulator.build(source, tuple(name_expressions), checks="trace", nvrtc=nvrtc)
    except KernelCompileError:
        return False
    headers = tuple(source.local_headers().values())
    for expr in name_expressions:
        _BUILT_AHEAD[(source, headers, expr, nvrtc)] = program
    return True


# g++'s words for a kernel's global name that the C library's headers (included by the emulator's
# cuda_emu.h, as NVRTC does not) declare as something else: `index`, `random`, `div`, `select`...
_CLASH = re.compile(r"error: (?:[‘'](?P<a>[^’'\n]*)[’'] redeclared as different kind of entity"
                    r"|(?:ambiguating new|conflicting) declaration(?: of)? [‘'](?P<b>[^’'\n]*)[’'])")


def _c_library_hint(message: str) -> str:
    m = _CLASH.search(message)
    if not m or "cuda_emu.h" not in message:
        return ""
    names = re.findall(r"[A-Za-z_]\w*", re.split(r"[(\[]", m.group("a") or m.group("b"))[0])
    if not names:
        return ""
    name = names[-1]
    return (f"\nNVRTC accepts this, but the CPU emulator compiles the kernel with this machine's C library, "
            f"which declares a global `{name}` of its own. Fix: give yours another name (e.g. `my_{name}`).")


def static_shared_bytes(program, name_expression: str) -> int:
    return 0  # known only as the kernel runs: the runtime enforces the limits as it allocates


def max_shared_per_block() -> int:
    return MAX_SHARED_PER_BLOCK


def launch(program, name_expression, grid, block, args, shared_mem: int) -> float:
    try:
        return emulator.launch(program, name_expression, grid, block, args, shared_mem)
    except ShadowUnavailable:  # this machine refused the inline checks' reservation
        slow = emulator.build(program.source, tuple(program.entries), checks="calls",
                              nvrtc=program.nvrtc)
        return emulator.launch(slow, name_expression, grid, block, args, shared_mem)


def launcher(program, name_expression, grid, block, shared_mem: int):
    """A call that takes the kernel's arguments and runs it on the emulator (which checks them as it copies
    them): the GPU backend's launcher, for the same code."""
    def launch_now(args) -> None:
        launch(program, name_expression, grid, block, args, shared_mem)
    return launch_now


def check_array(a, what: str) -> None:
    if not isinstance(a, np.ndarray):
        raise KernelArgumentError(f"{what} must be a NumPy array on the CPU backend, got {type(a).__name__}.")


def to_device(a: np.ndarray) -> np.ndarray:
    return np.array(a, copy=True, order="C")


def to_host(a) -> np.ndarray:
    return np.asarray(a)


def synchronize() -> None:
    pass


# ---- TMA tensor maps (stage 12): the emulator's own, naming the array --------------------------------
def address(a) -> int:
    return a.__array_interface__["data"][0]


def tensor_map(array, box, pitch_floats: int) -> TensorMapArg:
    """The emulator's tensor map of a row-major float32 array (see gpu_backend.tensor_map)."""
    return TensorMapArg(array, box.rows, box.cols, pitch_floats, box.box_rows, box.box_cols, box.tf32, box.store)

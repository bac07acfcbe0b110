"""The CPU backend: kernels run on the emulator, arrays are NumPy arrays."""

from __future__ import annotations

import numpy as np

from helpers import emulator
from helpers.core.device import host_description
from helpers.core.device import DeviceInfo
from helpers.emulator.launcher import ShadowUnavailable
from helpers.core.errors import KernelArgumentError
from helpers.core.kernel_source import KernelSource

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


def compile(source: KernelSource, name_expressions: tuple[str, ...]):
    return emulator.build(source, name_expressions)


def static_shared_bytes(program, name_expression: str) -> int:
    return 0  # known only as the kernel runs: the runtime enforces the limits as it allocates


def max_shared_per_block() -> int:
    return MAX_SHARED_PER_BLOCK


def launch(program, name_expression, grid, block, args, shared_mem: int) -> float:
    try:
        return emulator.launch(program, name_expression, grid, block, args, shared_mem)
    except ShadowUnavailable:  # this machine refused the inline checks' reservation
        slow = emulator.build(program.source, tuple(program.entries), checks="calls")
        return emulator.launch(slow, name_expression, grid, block, args, shared_mem)


def check_array(a, what: str) -> None:
    if not isinstance(a, np.ndarray):
        raise KernelArgumentError(f"{what} must be a NumPy array on the CPU backend, got {type(a).__name__}.")


def to_device(a: np.ndarray) -> np.ndarray:
    return np.array(a, copy=True, order="C")


def to_host(a) -> np.ndarray:
    return np.asarray(a)


def synchronize() -> None:
    pass

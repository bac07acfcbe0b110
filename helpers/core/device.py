"""What a device can do: the numbers the course compares kernels against."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

# FP32 lanes (CUDA cores) per SM by compute capability; the peak is SMs x lanes x 2 x clock.
FP32_LANES_PER_SM = {(6, 0): 64, (6, 1): 128, (6, 2): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
                     (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


def fp32_lanes_per_sm(major: int, minor: int) -> int:
    return FP32_LANES_PER_SM.get((major, minor), 128 if major >= 8 else 64)


@dataclass(frozen=True)
class DeviceInfo:
    backend: str                 # "gpu" or "cpu"
    name: str
    compute_capability: str | None = None
    sm_count: int | None = None
    clock_ghz: float | None = None
    fp32_lanes_per_sm: int | None = None
    memory_bandwidth_tbs: float | None = None   # from memory clock and bus width (datasheet-like)
    memory_gib: float | None = None
    l2_mib: float | None = None
    shared_per_block_kib: float | None = None   # with the opt-in for large dynamic shared memory
    shared_per_sm_kib: float | None = None
    registers_per_sm: int | None = None
    driver: str | None = None
    runtime: str | None = None
    cupy: str | None = None
    compiler: str | None = None

    @property
    def fp32_peak_tflops(self) -> float | None:
        if None in (self.sm_count, self.fp32_lanes_per_sm, self.clock_ghz):
            return None
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_ghz / 1000

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs for a device card; only what is known."""
        peak = self.fp32_peak_tflops
        items = [
            ("Backend", "CUDA GPU through CuPy" if self.backend == "gpu" else "CPU emulator"),
            ("Device", self.name),
            ("Compute capability", self.compute_capability),
            ("SMs", self.sm_count),
            ("SM clock", f"{self.clock_ghz:.2f} GHz" if self.clock_ghz else None),
            ("FP32 lanes per SM", self.fp32_lanes_per_sm),
            ("FP32 peak (SMs x lanes x 2 x clock)", f"{peak:.1f} TFLOP/s" if peak else None),
            ("Memory bandwidth (clock x bus width)",
             f"{self.memory_bandwidth_tbs:.2f} TB/s" if self.memory_bandwidth_tbs else None),
            ("Memory", f"{self.memory_gib:.0f} GiB" if self.memory_gib else None),
            ("L2 cache", f"{self.l2_mib:.0f} MiB" if self.l2_mib else None),
            ("Shared memory per block (max)", f"{self.shared_per_block_kib:.0f} KiB" if self.shared_per_block_kib else None),
            ("Shared memory per SM", f"{self.shared_per_sm_kib:.0f} KiB" if self.shared_per_sm_kib else None),
            ("Registers per SM", self.registers_per_sm),
            ("Driver / runtime", f"{self.driver} / {self.runtime}" if self.driver else None),
            ("CuPy", self.cupy),
            ("C++ compiler", self.compiler),
        ]
        return [(k, str(v)) for k, v in items if v is not None]

    def card(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def host_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def host_memory_available() -> int | None:
    """Bytes this process can still allocate without swapping: /proc/meminfo's MemAvailable (else
    the free pages), within a cgroup's memory limit (a container's); None where neither is known."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            available = min(available, max(0, limit - usage))
    return available

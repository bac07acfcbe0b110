"""What each GPU architecture gives a block: per-SM limits from NVIDIA's compute-capability
tables, and the occupancy they allow (the rules of CUDA's occupancy calculator).
"""

from __future__ import annotations
import re
from dataclasses import dataclass

DEFAULT_ARCH = "sm_90"
WARP_SIZE = 32
FLOAT_BYTES = 4
BANKS = 32          # shared memory: 32 banks of 4-byte words on every architecture since sm_50
BANK_BYTES = 4
SECTOR_BYTES = 32   # the unit in which L1 and L2 move global memory


# ---- the architectures ------------------------------------------------------------------------
@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability (CUDA C++ Programming Guide, compute capabilities)."""
    name: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int               # the largest shared-memory carveout, bytes
    max_shared_per_block: int        # with the opt-in for more than 48 KiB, bytes
    reserved_shared_per_block: int   # the driver's own shared memory in every block
    shared_unit: int                 # shared memory is allocated to a block in these units
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_unit: int = 256         # registers are allocated to a warp in these units
    sub_partitions: int = 4          # register files (and schedulers) per SM
    gpus: str = ""

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP_SIZE


KIB = 1024
# Source: NVIDIA, CUDA C++ Programming Guide, release 12.9, "Compute Capabilities", table "Technical
# Specifications per Compute Capability" (resident threads, blocks, shared memory per SM and per block,
# 64 K registers per SM and per block, 255 per thread) and the sections of each compute capability
# (the shared-memory carveouts; 1 KiB of every block's shared memory reserved for the system from 8.0 on).
# Cross-checked value by value against NVIDIA's own table in CCCL, libcudacxx/include/cuda/__device/
# arch_traits.h (arch_traits<arch_id::sm_XX>): they agree for every architecture here.
# These are facts of the compute capability; `gpus` names boards of each, for messages.
ARCHS: dict[str, ArchLimits] = {a.name: a for a in (
    ArchLimits("sm_70", 2048, 32, 96 * KIB, 96 * KIB, 0, 256, gpus="V100"),
    ArchLimits("sm_75", 1024, 16, 64 * KIB, 64 * KIB, 0, 256, gpus="T4, RTX 20xx, GTX 16xx"),
    ArchLimits("sm_80", 2048, 32, 164 * KIB, 163 * KIB, 1 * KIB, 128, gpus="A100, A30"),
    ArchLimits("sm_86", 1536, 16, 100 * KIB, 99 * KIB, 1 * KIB, 128, gpus="RTX 30xx, A10, A40, RTX A6000"),
    ArchLimits("sm_87", 1536, 16, 164 * KIB, 163 * KIB, 1 * KIB, 128, gpus="Jetson AGX Orin, Orin NX, Orin Nano"),
    ArchLimits("sm_89", 1536, 24, 100 * KIB, 99 * KIB, 1 * KIB, 128, gpus="RTX 40xx, L4, L40, L40S"),
    ArchLimits("sm_90", 2048, 32, 228 * KIB, 227 * KIB, 1 * KIB, 128, gpus="H100, H200, GH200"),
    ArchLimits("sm_100", 2048, 32, 228 * KIB, 227 * KIB, 1 * KIB, 128, gpus="B200, GB200"),
    ArchLimits("sm_120", 1536, 24, 100 * KIB, 99 * KIB, 1 * KIB, 128, gpus="RTX 50xx, RTX PRO 6000 Blackwell"),
)}
# The architectures the course compiles and checks every kernel for (NVRTC + ptxas 12.9 from NVIDIA's
# pip wheels; tests/measure/test_every_architecture.py). Its GPU measurements are from sm_90 (H100, H200).
COURSE_ARCHS: tuple[str, ...] = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120")
MEASURED_ON = "sm_90"


def arch_name(arch: str) -> str:
    """'sm_90', 'compute_90', '9.0' or '90' -> 'sm_90'."""
    a = str(arch).strip().lower().replace("compute_", "sm_")
    if re.fullmatch(r"\d+\.\d", a):
        a = "sm_" + a.replace(".", "")
    elif re.fullmatch(r"\d+", a):
        a = "sm_" + a
    if not re.fullmatch(r"sm_\d+[a-z]?", a):
        raise ValueError(f"an architecture looks like sm_90 (or 9.0), not {arch!r}.")
    return a


def arch_limits(arch: str) -> ArchLimits:
    a = re.sub(r"(?<=\d)[a-z]$", "", arch_name(arch))  # sm_90a: sm_90's limits
    if a not in ARCHS:
        raise KeyError(f"no occupancy table for {arch!r}; the course knows {', '.join(ARCHS)}.")
    return ARCHS[a]


def known_arch(arch: str) -> bool:
    try:
        arch_limits(arch)
        return True
    except KeyError:
        return False


def _and(items) -> str:
    items = list(items)
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + " and " + items[-1]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


# ---- occupancy -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Occupancy:
    """How many blocks of one kernel fit on one SM, and what stops more."""
    arch: str
    threads_per_block: int
    registers_per_thread: int
    shared_bytes_per_block: int         # static + dynamic, as the kernel asks
    registers_allocated_per_block: int  # after rounding to the allocation unit
    shared_allocated_per_block: int     # with the driver's reserve, rounded to the unit
    limits: tuple[tuple[str, int], ...]  # (resource, blocks it allows)
    max_warps: int

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // WARP_SIZE)

    @property
    def active_blocks(self) -> int:
        return min(b for _, b in self.limits)

    @property
    def active_warps(self) -> int:
        return self.active_blocks * self.warps_per_block

    @property
    def occupancy(self) -> float:
        """Active warps / the SM's warp slots (0 to 1)."""
        return self.active_warps / self.max_warps

    @property
    def limited_by(self) -> tuple[str, ...]:
        """Every resource that allows no more blocks than the active ones (ties: all of them)."""
        return tuple(r for r, b in self.limits if b == self.active_blocks)

    def describe(self) -> str:
        if self.active_blocks == 0:
            return (f"{self.arch}: the block does not fit on an SM (limited by {_and(self.limited_by)}); "
                    f"the launch would fail.")
        return (f"{self.arch}: {self.active_blocks} block{'s' if self.active_blocks > 1 else ''} of "
                f"{self.warps_per_block} warps = {self.active_warps} of {self.max_warps} warps "
                f"({100 * self.occupancy:.0f}% occupancy), limited by {_and(self.limited_by)}")


def occupancy(arch: str, threads_per_block: int, registers_per_thread: int,
              static_shared_bytes: int = 0, dynamic_shared_bytes: int = 0) -> Occupancy:
    """Theoretical occupancy of a kernel on one SM of `arch`, as CUDA's occupancy calculator
    computes it with the default shared-memory carveout."""
    a = arch_limits(arch)
    for what, v in (("threads_per_block", threads_per_block), ("registers_per_thread", registers_per_thread),
                    ("static_shared_bytes", static_shared_bytes), ("dynamic_shared_bytes", dynamic_shared_bytes)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{what} must be a whole number >= 0, got {v!r}.")
    if not 1 <= threads_per_block <= 1024:
        raise ValueError(f"a block has 1 to 1024 threads, not {threads_per_block}.")
    if registers_per_thread > a.max_registers_per_thread:
        raise ValueError(f"{registers_per_thread} registers per thread: {a.name} allows at most "
                         f"{a.max_registers_per_thread}.")
    warps = -(-threads_per_block // WARP_SIZE)

    # warp slots and block slots
    by_warps = a.max_warps_per_sm // warps
    by_blocks = a.max_blocks_per_sm

    # registers: per warp, rounded to the unit; each sub-partition holds whole warps
    regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, a.register_unit)
    regs_per_block = regs_per_warp * warps
    # the hardware's launch check assumes the block's warps spread evenly over the sub-partitions
    regs_checked = regs_per_warp * _round_up(warps, a.sub_partitions)
    if regs_per_warp == 0:
        by_regs = by_blocks
    elif max(regs_per_block, regs_checked) > a.max_registers_per_block:
        by_regs = 0
    else:
        warps_per_sub = (a.registers_per_sm // a.sub_partitions) // regs_per_warp
        by_regs = warps_per_sub * a.sub_partitions // warps

    # shared memory: the kernel's own plus the driver's reserve, rounded to the unit
    smem = static_shared_bytes + dynamic_shared_bytes
    smem_alloc = _round_up(smem + a.reserved_shared_per_block, a.shared_unit)
    if smem > a.max_shared_per_block:
        by_smem = 0
    elif smem_alloc == 0:
        by_smem = by_blocks
    else:
        by_smem = a.shared_per_sm // smem_alloc

    return Occupancy(a.name, threads_per_block, registers_per_thread, smem, regs_per_block, smem_alloc,
                     (("warps", by_warps), ("blocks", by_blocks), ("registers", by_regs),
                      ("shared memory", by_smem)), a.max_warps_per_sm)


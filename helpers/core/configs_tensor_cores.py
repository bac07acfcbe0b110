"""The configuration of stage 10's 10_mma_sync: 10_tensor_cores' template parameters, rules and launch geometry,
less its staging tiles of C in shared memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from helpers.core.configs import KernelConfig, TensorCoreConfig


@dataclass(frozen=True)
class MmaSyncConfig(KernelConfig):
    """TensorCoreConfig's block, warp and K tiles, STAGES and ROUND, for mma.sync m16n8k8 with the fragment layout
    explicit: each lane loads its fragment elements itself and writes its results straight to C, so the shared
    memory is the padded tiles alone (stage 10)."""
    BM: int = 128
    BN: int = 128
    BK: int = 32
    WM: int = 64
    WN: int = 64
    STAGES: int = 3
    ROUND: int = 1
    SHARED_FORMULA: ClassVar[str] = "STAGES x (BM x (BK + 4) + BK x (BN + 8)) x 4: padded tiles"

    # TensorCoreConfig's own methods, but not its subclass: a TensorCoreConfig asks for the staging tiles, and
    # the tools that take a kernel's configuration (resources, intensity) refuse another kernel's type.
    warps = TensorCoreConfig.warps
    threads = TensorCoreConfig.threads
    validate = TensorCoreConfig.validate
    template_args = TensorCoreConfig.template_args
    block = TensorCoreConfig.block
    grid = TensorCoreConfig.grid

    def shared_bytes(self) -> int:
        return 4 * self.STAGES * (self.BM * (self.BK + 4) + self.BK * (self.BN + 8))

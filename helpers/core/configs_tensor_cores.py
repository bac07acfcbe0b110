"""The configurations of stage 10's warp-level tensor-core kernels: 10_tensor_cores (wmma) and 10_mma_sync share
their template parameters, rules and launch geometry (WarpFragmentTiles) and differ in their shared memory: wmma
stages its results through a tile per warp, mma.sync writes them from registers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from helpers.core.configs import KernelConfig, ceil_div


@dataclass(frozen=True)
class WarpFragmentTiles(KernelConfig):
    """A BM x BN block tile split into WM x WN warp tiles of tensor-core fragments; STAGES tiles in shared memory
    filled by asynchronous copies; ROUND = 1 rounds the inputs to TF32 in the fragments, 2 in shared memory, 0
    lets the tensor cores drop the low bits. Not a kernel's configuration itself: each kernel's is a subclass,
    and the tools refuse one kernel's configuration for another."""
    BM: int = 128
    BN: int = 128
    BK: int = 32
    WM: int = 64
    WN: int = 64
    STAGES: int = 3
    ROUND: int = 1

    def warps(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN)

    def threads(self) -> int:
        return 32 * self.warps()

    def _tile_floats(self) -> int:
        """The padded tiles of A and B in shared memory, all stages."""
        return self.STAGES * (self.BM * (self.BK + 4) + self.BK * (self.BN + 8))

    def validate(self) -> None:
        BM, BN, BK, WM, WN = self.BM, self.BN, self.BK, self.WM, self.WN
        self._rule(WM >= 16 and WN >= 16 and WM % 16 == 0 and WN % 16 == 0,
                   f"WM = {WM} and WN = {WN} must be multiples of 16 (a warp tile is whole 16 x 16 fragments).")
        self._rule(BM % WM == 0 and BN % WN == 0, f"BM = {BM} and BN = {BN} must be multiples of WM = {WM} and "
                                                  f"WN = {WN} (the block tile splits into whole warp tiles).")
        self._rule(BK >= 8 and BK % 8 == 0, f"BK = {BK} must be a multiple of 8 (one TF32 mma_sync takes 8 steps of K).")
        self._rule(self.STAGES >= 2, f"STAGES = {self.STAGES}: one stage is computed on while the next ones load, "
                                     "so at least 2.")
        self._rule(self.ROUND in (0, 1, 2), f"ROUND = {self.ROUND} must be 0 (no rounding), 1 (in the fragments) "
                                            "or 2 (in shared memory).")
        threads = self.threads()
        self._rule(threads <= 1024, f"(BM/WM) x (BN/WN) = {self.warps()} warps, {threads} threads; a block holds "
                                    "at most 1024.")
        for name, floats in (("A", BM * BK), ("B", BK * BN)):
            self._rule(floats // 4 % threads == 0 and floats % 4 == 0,
                       f"the {name} tile ({floats} floats, {floats // 4} runs of 4) must be a whole number of "
                       f"passes of the {threads} threads.")

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.WM, self.WN, self.STAGES, self.ROUND)

    def block(self):
        return (self.threads(), 1, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), 1)


@dataclass(frozen=True)
class TensorCoreConfig(WarpFragmentTiles):
    """10_tensor_cores (wmma): each warp tile is (WM/16) x (WN/16) 16 x 16 accumulator fragments, stored through a
    16 x 20 staging tile per warp in shared memory."""
    SHARED_FORMULA: ClassVar[str] = ("(STAGES x (BM x (BK + 4) + BK x (BN + 8)) + warps x 16 x 20) x 4: "
                                     "padded tiles, one 16 x 16 staging tile per warp")

    def shared_bytes(self) -> int:
        return 4 * (self._tile_floats() + self.warps() * 16 * 20)


@dataclass(frozen=True)
class MmaSyncConfig(WarpFragmentTiles):
    """10_mma_sync (mma.sync m16n8k8) with the fragment layout explicit: each lane loads its fragment elements
    itself and writes its results straight to C, so the shared memory is the padded tiles alone."""
    SHARED_FORMULA: ClassVar[str] = "STAGES x (BM x (BK + 4) + BK x (BN + 8)) x 4: padded tiles"

    def shared_bytes(self) -> int:
        return 4 * self._tile_floats()

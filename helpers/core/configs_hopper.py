"""Configurations of the Hopper kernels that take TMA tensor maps instead of pointers to A and B (stage 12)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from helpers.core.configs import KernelConfig, ceil_div

MAX_DYNAMIC_SHARED = 227 * 1024  # what a block may opt in to on sm_90


@dataclass(frozen=True)
class TensorMapBox:
    """One operand as a TMA tensor map sees it: a rows x cols row-major array of floats, copied box_rows x
    box_cols at a time in the 128-byte swizzle; tf32: the map's elements are TF32, so the copy engine rounds
    each float to the nearest TF32 as it copies; store: the kernel writes the array through the map (TMA stores)."""
    rows: int
    cols: int
    box_rows: int
    box_cols: int
    tf32: bool = False
    store: bool = False


@dataclass(frozen=True)
class WarpSpecializedConfig(KernelConfig):
    """A BM x (64 x CONSUMERS) tile per block and per turn: warpgroup 0 copies tiles of A and B with TMA into a
    ring of STAGES stages, warpgroups 1 .. CONSUMERS multiply them with wgmma. ROUND = 1 gives the kernel
    tensor maps of TF32 elements, which the copy engine rounds to nearest as it copies (0: FP32 elements, whose
    low bits the tensor cores drop). PERSISTENT = 1 launches one block per SM, each walking tiles; 0 one block
    per tile. Neither is a template argument: the kernel is the same.

    The steps past the stage's kernel (notebook 12, "beyond"), each a template argument, 0 / 1 the stage's kernel
    unchanged: EPILOGUE = 1 writes C through shared memory with TMA stores; PINGPONG = 1 gives each consumer
    warpgroup a tile of its own (BM x 64), the two taking turns, so that one's epilogue runs under the other's
    products; CLUSTER = 2 launches clusters of two blocks that share A's tile by TMA multicast. They appear in the
    label and the template arguments only when taken, so the stage's kernel keeps its name and measurements.

    With PINGPONG = 1 a tile is BM x 64 (BN = 64), a stage (BM + 64) x 32 x 4 bytes: at BM = 256 five stages fit
    (201 KiB) where the cooperative kernel's 48 KiB stages fit four, so PINGPONG_STAGES (5) is the ping-pong
    kernel's ring (the default STAGES, 4, is the cooperative one's). A block takes two tiles at a time, so
    PERSISTENT = 0 launches a block per two tiles.

    EPILOGUE = 1: each consumer warpgroup writes its results, EPI_ROWS rows x 64 columns at a time, into one of two
    staging buffers in shared memory, and one of its threads stores each with two TMA stores through a tensor map
    of C (output_map). A map needs C's rows 16-byte aligned: where N % 4 != 0 or C does not start 16-byte aligned,
    the host launches the register epilogue instead (for_output), with the same result."""
    BM: int = 256
    CONSUMERS: int = 2
    STAGES: int = 4
    ROUND: int = 1
    PERSISTENT: int = 1
    EPILOGUE: int = 0
    PINGPONG: int = 0
    CLUSTER: int = 1
    BK: ClassVar[int] = 32  # one 128-byte swizzled row of a box
    EPI_ROWS: ClassVar[int] = 32  # rows of C a warpgroup stages per TMA store (EPILOGUE = 1): two 32 x 32 boxes
    TENSOR_MAPS: ClassVar[bool] = True
    SHARED_FORMULA: ClassVar[str] = ("STAGES x (BM + BN) x 32 x 4 (BN = 64 x CONSUMERS, or 64 with PINGPONG = 1), "
                                     "+ 1 KiB to align the first stage; EPILOGUE = 1 adds 2 staging buffers of 32 x 64 x 4 "
                                     "per consumer")
    PINGPONG_STAGES: ClassVar[int] = 5  # the most stages of BM = 256 that fit with PINGPONG = 1 (see above)

    @property
    def BN(self) -> int:
        """Columns of C per tile: every consumer's 64, or with PINGPONG = 1 the 64 of the one consumer that takes it."""
        return 64 if self.PINGPONG else 64 * self.CONSUMERS

    @property
    def turns(self) -> int:
        """Tiles a block works on at once: one (its consumers share it), or two with PINGPONG = 1."""
        return 2 if self.PINGPONG else 1

    def threads(self) -> int:
        return (self.CONSUMERS + 1) * 128

    def shared_bytes(self) -> int:
        staging = 2 * self.CONSUMERS * self.EPI_ROWS * 64 * 4 if self.EPILOGUE == 1 else 0
        return self.STAGES * (self.BM + self.BN) * self.BK * 4 + staging + 1024

    def static_shared_bytes(self) -> int:
        # the full and empty mbarriers, 8 bytes each; ptxas places the dynamic array, declared __align__(128), at
        # the next multiple of 128 after them, and counts that much as static
        # (+ the two turn barriers of PINGPONG = 1)
        return -(-(2 * self.STAGES + 2 * self.PINGPONG) * 8 // 128) * 128

    def validate(self) -> None:
        self._rule(self.BM in (128, 256), f"BM = {self.BM} must be 128 or 256 (wgmma's N; a TMA box has at most "
                                          "256 rows).")
        self._rule(self.CONSUMERS in (1, 2), f"CONSUMERS = {self.CONSUMERS} must be 1 or 2 multiplying warpgroups.")
        self._rule(self.STAGES >= 2, f"STAGES = {self.STAGES}: one stage is multiplied while the next loads, so at "
                                     "least 2.")
        self._rule(self.ROUND in (0, 1), f"ROUND = {self.ROUND} must be 0 (the tensor cores drop the low bits) or "
                                         "1 (the copy engine rounds to the nearest TF32).")
        self._rule(self.PERSISTENT in (0, 1), f"PERSISTENT = {self.PERSISTENT} must be 0 (a block per tile) or 1 "
                                              "(a block per SM, walking tiles).")
        self._rule(self.EPILOGUE in (0, 1), f"EPILOGUE = {self.EPILOGUE} must be 0 (C stored from registers) or 1 "
                                            "(through shared memory, with TMA stores).")
        self._rule(self.PINGPONG in (0, 1), f"PINGPONG = {self.PINGPONG} must be 0 (the consumers share each tile) or "
                                            "1 (each consumer takes a tile of its own, in turns).")
        self._rule(self.PINGPONG == 0 or self.CONSUMERS == 2,
                   f"PINGPONG = 1 with CONSUMERS = {self.CONSUMERS}: ping-pong needs two consumer warpgroups to take "
                   "turns (one multiplies while the other writes its tile): CONSUMERS = 2, or PINGPONG = 0.")
        self._rule(self.CLUSTER in (1, 2), f"CLUSTER = {self.CLUSTER} must be 1 (no cluster) or 2 (clusters of two "
                                           "blocks sharing A's tile).")
        self._rule(self.CLUSTER == 1 or self.PINGPONG == 0,
                   f"CLUSTER = {self.CLUSTER} with PINGPONG = 1: clusters are built for the cooperative consumers only "
                   "(ping-pong's turns ran slower on an H100: notebook 12, section 9); PINGPONG = 0, or CLUSTER = 1.")
        self._rule(self.EPILOGUE == 0 or (self.PINGPONG == 0 and self.CLUSTER == 1),
                   f"EPILOGUE = 1 with PINGPONG = {self.PINGPONG}, CLUSTER = {self.CLUSTER}: the TMA-store epilogue is "
                   "built for the stage's cooperative consumers without clusters only; EPILOGUE = 0 there.")
        self._rule(self.shared_bytes() <= MAX_DYNAMIC_SHARED,
                   f"{self.STAGES} stages of {(self.BM + self.BN) * self.BK * 4 // 1024} KiB need "
                   f"{self.shared_bytes() / 1024:.0f} KiB of shared memory; a block has at most 227: fewer STAGES.")

    STEPS: ClassVar[dict[str, int]] = {"EPILOGUE": 0, "PINGPONG": 0, "CLUSTER": 1}  # the fields past the stage, untaken

    def steps_taken(self) -> bool:
        return any(getattr(self, name) != untaken for name, untaken in self.STEPS.items())

    def label(self) -> str:
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                         if f.name not in self.STEPS or getattr(self, f.name) != self.STEPS[f.name])

    def template_args(self):
        steps = (self.EPILOGUE, self.PINGPONG, self.CLUSTER) if self.steps_taken() else ()
        return (self.BM, self.CONSUMERS, self.STAGES) + steps

    def kernel_name(self, kernel: str) -> str:
        return f"{kernel}_cluster" if self.CLUSTER > 1 else kernel  # the entry declared __cluster_dims__

    def block(self):
        return (self.threads(), 1, 1)

    def tiles(self, M: int, N: int) -> int:
        return ceil_div(M, self.BM) * ceil_div(N, self.BN)

    def units(self, M: int, N: int) -> int:
        """What the kernel walks: CLUSTER neighbouring tiles of a tile row each (one per block of a cluster)."""
        return ceil_div(M, self.BM) * ceil_div(ceil_div(N, self.BN), self.CLUSTER)

    def grid(self, M, N):
        return (ceil_div(self.units(M, N) * self.CLUSTER, self.turns), 1, 1)

    def launch_grid(self, M: int, N: int, sm_count: int | None) -> tuple[int, int, int]:
        if self.PERSISTENT and sm_count:  # whole clusters: a GPU launches no part of one
            return (min(self.units(M, N), sm_count // self.CLUSTER) * self.CLUSTER, 1, 1)
        return self.grid(M, N)

    def tensor_maps(self, M: int, N: int, K: int) -> tuple[TensorMapBox, TensorMapBox]:
        """A (M x K) in boxes of BM rows x 32, B (K x N) in boxes of 32 x 32."""
        tf32 = self.ROUND == 1  # with clusters, each block copies (and multicasts) BM / CLUSTER rows of A's tile
        return TensorMapBox(M, K, self.BM // self.CLUSTER, self.BK, tf32), TensorMapBox(K, N, self.BK, 32, tf32)

    def output_map(self, M: int, N: int) -> TensorMapBox | None:
        """With EPILOGUE = 1, C (M x N, FP32) in boxes of EPI_ROWS x 32 that the kernel stores: the map passed after
        C. None for the register epilogue."""
        return TensorMapBox(M, N, self.EPI_ROWS, 32, store=True) if self.EPILOGUE == 1 else None

    def for_output(self, N: int, address: int) -> "WarpSpecializedConfig":
        """The configuration to launch for a C of N columns at `address`: this one, or with EPILOGUE = 1 where no
        tensor map can describe C (rows not 16-byte aligned: N % 4 != 0; C not starting 16-byte aligned, a view),
        the register epilogue (EPILOGUE = 0), which gives the same result."""
        if self.EPILOGUE == 1 and (N % 4 or address % 16):
            return dataclasses.replace(self, EPILOGUE=0)
        return self

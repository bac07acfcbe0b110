"""Kernel configurations: one frozen dataclass per kernel family. Each renders its template
arguments, computes its launch geometry and shared memory, and raises ValueError naming the
broken tile rule before anything compiles.
"""

from __future__ import annotations
import dataclasses
from dataclasses import dataclass
from typing import ClassVar


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ---- configurations ----------------------------------------------------------------------
@dataclass(frozen=True)
class KernelConfig:
    """Base of every configuration: template arguments, launch geometry, constraints."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"{type(self).__name__}.{f.name} must be a whole number, got {v!r}.")
        self.validate()

    def validate(self) -> None:
        """Raises ValueError naming the first rule the configuration breaks."""

    def template_args(self) -> tuple[int, ...]:
        return ()

    def kernel_name(self, kernel: str) -> str:
        """The __global__ function that runs this configuration: the variant's kernel, unless a configuration needs
        another entry of the same file (12_warp_specialized's clusters)."""
        return kernel

    def block(self) -> tuple[int, int, int]:
        raise NotImplementedError

    def grid(self, M: int, N: int) -> tuple[int, int, int]:
        raise NotImplementedError

    def shared_bytes(self) -> int:
        """Dynamic shared memory per block, in bytes."""
        return 0

    def static_shared_bytes(self) -> int:
        """The __shared__ arrays' bytes per block, as the kernel declares them."""
        return 0

    def threads(self) -> int:
        x, y, z = self.block()
        return x * y * z

    def check_shape(self, M: int, N: int, K: int) -> None:
        """Raises ValueError when the kernel cannot take this shape (none: bounds-checked)."""

    def workspace_floats(self, M: int, N: int, sm_count: int | None = None) -> int | None:
        """None: the kernel has the course's signature. A number: it takes one more argument after C, a
        float workspace of that many floats (0: not used; a one-float array is passed, and no second kernel
        runs). sm_count: the SMs of the GPU (a persistent kernel's grid, and so its workspace, depends on it)."""
        return None

    def finish(self, M: int, N: int, K: int, sm_count: int | None) -> tuple[str, tuple, tuple, tuple]:
        """The kernel that finishes C from a used workspace: (its name expression, grid, block, its arguments
        before alpha); it takes (..., alpha, workspace, beta, C) after them."""
        raise NotImplementedError(f"{type(self).__name__} has no workspace to finish")

    # True: the kernel takes TMA tensor maps of A and B (tensor_maps()) in place of their pointers.
    TENSOR_MAPS: ClassVar[bool] = False

    def launch_grid(self, M: int, N: int, sm_count: int | None) -> tuple[int, int, int]:
        """The grid launched on a GPU of sm_count SMs (a persistent kernel's depends on it)."""
        return self.grid(M, N)

    def label(self) -> str:
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))

    def _rule(self, ok: bool, message: str) -> None:
        if not ok:
            raise ValueError(f"{type(self).__name__}({self.label()}): {message}")


@dataclass(frozen=True)
class NaiveConfig(KernelConfig):
    """One thread per element of C; threadIdx.x runs along the rows of C (down a column)."""
    block_x: int = 32
    block_y: int = 32

    def validate(self) -> None:
        self._rule(self.block_x >= 1 and self.block_y >= 1, "block_x and block_y must be at least 1.")
        self._rule(self.block_x * self.block_y <= 1024,
                   f"a block holds at most 1024 threads, and block_x x block_y = {self.block_x * self.block_y}.")

    def block(self):
        return (self.block_x, self.block_y, 1)

    def grid(self, M, N):
        return (ceil_div(M, self.block_x), ceil_div(N, self.block_y), 1)


@dataclass(frozen=True)
class CoalescedConfig(NaiveConfig):
    """One thread per element of C; threadIdx.x runs along the columns of C (along a row)."""

    def grid(self, M, N):
        return (ceil_div(N, self.block_x), ceil_div(M, self.block_y), 1)


@dataclass(frozen=True)
class TileConfig(KernelConfig):
    """A square TILE x TILE block computing a TILE x TILE tile of C through shared memory."""
    tile: int = 32

    def validate(self) -> None:
        self._rule(self.tile >= 1, "tile must be at least 1.")
        self._rule(self.tile * self.tile <= 1024,
                   f"the block is tile x tile = {self.tile * self.tile} threads; a block holds at most 1024.")

    def template_args(self):
        return (self.tile,)

    def static_shared_bytes(self) -> int:
        return 2 * self.tile * self.tile * 4  # As and Bs

    def block(self):
        return (self.tile, self.tile, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.tile), ceil_div(M, self.tile), 1)


def _thread_tile_rules(config: KernelConfig, TN: int) -> None:
    """The rules of stages 04 and 05 (TN = 1 for 04's column of TM results)."""
    BM, BN, BK, TM = config.BM, config.BN, config.BK, config.TM
    config._rule(min(BM, BN, BK, TM, TN) >= 1, "every tile size must be at least 1.")
    config._rule(BM % TM == 0, f"BM = {BM} must be a multiple of TM = {TM} (a column of the block tile "
                               "splits into whole runs of TM rows).")
    config._rule(BN % TN == 0, f"BN = {BN} must be a multiple of TN = {TN} (a row of the block tile "
                               "splits into whole runs of TN columns).")
    threads = config.threads()
    rule = "BM*BN/TM" if TN == 1 else "BM*BN/(TM*TN)"
    config._rule(threads <= 1024, f"the block has {rule} = {threads} threads; a block holds at most 1024.")
    config._rule(BM * BK % threads == 0, f"the {threads} threads copy the BM x BK = {BM * BK} elements of "
                                         "A's tile in whole passes, so BM*BK must be a multiple of the threads.")
    config._rule(BK * BN % threads == 0, f"the {threads} threads copy the BK x BN = {BK * BN} elements of "
                                         "B's tile in whole passes, so BK*BN must be a multiple of the threads.")
    formula = getattr(config, "SHARED_FORMULA", "(BM + BN) x BK x 4")
    config._rule(config.static_shared_bytes() <= 48 * 1024,
                 f"the tiles take {formula} = {config.static_shared_bytes()} bytes of static shared "
                 "memory; a block may have at most 48 KiB (49152 bytes).")


@dataclass(frozen=True)
class ThreadTile1DConfig(KernelConfig):
    """A BM x BN block tile of C through BM x BK and BK x BN tiles in shared memory; each of the
    BM*BN/TM threads computes TM results down a column."""
    BM: int = 64   # default: the fastest of tools/tune_04_05.py on an H200
    BN: int = 64   # (results/stages_04_05_h200_2026-11-22.json)
    BK: int = 16
    TM: int = 16

    def threads(self) -> int:
        return self.BM * self.BN // self.TM

    def static_shared_bytes(self) -> int:
        return (self.BM + self.BN) * self.BK * 4

    def validate(self) -> None:
        _thread_tile_rules(self, 1)

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.TM)

    def block(self):
        return (self.threads(), 1, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), 1)


@dataclass(frozen=True)
class ThreadTile2DConfig(KernelConfig):
    """A BM x BN block tile of C through BM x BK and BK x BN tiles in shared memory; each of the
    BM*BN/(TM*TN) threads computes a TM x TN tile."""
    BM: int = 128  # default: the fastest of tools/tune_04_05.py on an H200
    BN: int = 128  # (results/stages_04_05_h200_2026-11-22.json)
    BK: int = 16
    TM: int = 16
    TN: int = 4

    def threads(self) -> int:
        return self.BM * self.BN // (self.TM * self.TN)

    def static_shared_bytes(self) -> int:
        return (self.BM + self.BN) * self.BK * 4

    def validate(self) -> None:
        _thread_tile_rules(self, self.TN)

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.TM, self.TN)

    def block(self):
        return (self.threads(), 1, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), 1)


@dataclass(frozen=True)
class PaddedTile2DConfig(ThreadTile2DConfig):
    """05's configuration with PAD unused floats after each row of As (stage 06's padding)."""
    BM: int = 128  # default: the 8 x 8 thread tile, where 05's shared loads conflict
    BN: int = 128
    BK: int = 16
    TM: int = 8
    TN: int = 8
    PAD: int = 1
    SHARED_FORMULA: ClassVar[str] = "(BM x (BK + PAD) + BK x BN) x 4"

    def static_shared_bytes(self) -> int:
        return (self.BM * (self.BK + self.PAD) + self.BK * self.BN) * 4

    def validate(self) -> None:
        self._rule(self.PAD >= 0, f"PAD = {self.PAD}: a row of As can be padded by 0 or more floats.")
        _thread_tile_rules(self, self.TN)

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.TM, self.TN, self.PAD)


def _vector_rules(config: KernelConfig, a_run: int = 4) -> None:
    """The rules of the float4 stages (07 on): a thread's results in runs of 4 rows and columns,
    B's tile copied in runs of 4 floats, A's in runs of `a_run` (1 for 09's asynchronous copies)."""
    BM, BN, BK, TM, TN = config.BM, config.BN, config.BK, config.TM, config.TN
    config._rule(min(BM, BN, BK, TM, TN) >= 1, "every tile size must be at least 1.")
    config._rule(TM % 4 == 0 and TN % 4 == 0, f"TM = {TM} and TN = {TN} must be multiples of 4 (a thread's rows "
                                              "and columns come in runs of 4, read with one 16-byte load).")
    config._rule(BK % a_run == 0, f"BK = {BK} must be a multiple of {a_run} (rows of A's tile are copied in runs "
                                  f"of {a_run}).")
    config._rule(BM % TM == 0 and BN % TN == 0, f"BM = {BM} and BN = {BN} must be multiples of TM = {TM} and "
                                                f"TN = {TN} (the block tile splits into whole thread tiles).")
    threads = config.threads()
    config._rule(threads <= 1024, f"the block has BM*BN/(TM*TN) = {threads} threads; a block holds at most 1024.")
    config._rule(BM * BK // a_run % threads == 0,
                 f"the {threads} threads copy A's tile in runs of {a_run} floats in whole passes, so "
                 f"BM*BK/{a_run} = {BM * BK // a_run} must be a multiple of the threads.")
    config._rule(BK * BN // 4 % threads == 0, f"the {threads} threads copy B's tile in runs of 4 floats in whole "
                                              f"passes, so BK*BN/4 = {BK * BN // 4} must be a multiple of the threads.")
    config._rule(config.static_shared_bytes() <= 48 * 1024,
                 f"the tiles take {config.static_shared_bytes()} bytes of static shared memory "
                 f"({config.SHARED_FORMULA}); a block may have at most 48 KiB (49152 bytes).")


@dataclass(frozen=True)
class VectorizedConfig(ThreadTile2DConfig):
    """05's configuration for the float4 kernel of stage 07: a thread's TM x TN results are runs
    of 4 rows and 4 columns spread over the block tile."""
    BM: int = 128  # default: the fastest on an H200 (results/stages_06_09_h200_2026-11-22/)
    BN: int = 128
    BK: int = 8
    TM: int = 8
    TN: int = 8
    SHARED_FORMULA: ClassVar[str] = "(BM + 4 + BN) x BK x 4: A's rows padded by 4"

    def static_shared_bytes(self) -> int:
        return (self.BM + 4 + self.BN) * self.BK * 4

    def validate(self) -> None:
        _vector_rules(self)


@dataclass(frozen=True)
class WarpTileConfig(KernelConfig):
    """A BM x BN block tile split into WM x WN warp tiles, each into 32 thread tiles of TM x TN
    (in runs of 4); float4 copies, A transposed in shared memory (stage 08)."""
    BM: int = 128  # default: the fastest on an H200 (results/stages_06_09_h200_2026-11-22/)
    BN: int = 128
    BK: int = 16
    WM: int = 32
    WN: int = 64
    TM: int = 8
    TN: int = 8
    SHARED_FORMULA: ClassVar[str] = "(BM + 4 + BN) x BK x 4: A's rows padded by 4"

    def threads(self) -> int:
        return self.BM * self.BN // (self.TM * self.TN)

    def static_shared_bytes(self) -> int:
        return (self.BM + 4 + self.BN) * self.BK * 4

    def validate(self) -> None:
        self._warp_rules()
        _vector_rules(self)

    def _warp_rules(self) -> None:
        BM, BN, WM, WN, TM, TN = self.BM, self.BN, self.WM, self.WN, self.TM, self.TN
        self._rule(min(WM, WN) >= 1, "every tile size must be at least 1.")
        self._rule(BM % WM == 0 and BN % WN == 0, f"BM = {BM} and BN = {BN} must be multiples of WM = {WM} and "
                                                  f"WN = {WN} (the block tile splits into whole warp tiles).")
        self._rule(WM % max(TM, 1) == 0 and WN % max(TN, 1) == 0,
                   f"WM = {WM} and WN = {WN} must be multiples of TM = {TM} and TN = {TN} (a warp tile splits "
                   "into whole thread tiles).")
        lanes = (WM // max(TM, 1), WN // max(TN, 1))
        self._rule(lanes[0] * lanes[1] == 32, f"a warp tile holds (WM/TM) x (WN/TN) = {lanes[0]} x {lanes[1]} thread "
                                              "tiles; a warp has 32 threads, so the product must be 32.")
        self._rule(lanes[0] % 2 == 0, f"WM/TM = {lanes[0]} must be even (lanes pair up in rows of the warp tile).")

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.WM, self.WN, self.TM, self.TN)

    def block(self):
        return (self.threads(), 1, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), 1)


@dataclass(frozen=True)
class DoubleBufferConfig(WarpTileConfig):
    """08's configuration with two shared buffers; MIN_BLOCKS is the blocks per SM the compiler
    must leave registers for (__launch_bounds__)."""
    BM: int = 128  # default: the fastest on an H200 (results/stages_06_09_h200_2026-11-22/)
    BN: int = 128
    BK: int = 8
    WM: int = 32
    WN: int = 64
    TM: int = 8
    TN: int = 8
    MIN_BLOCKS: int = 2
    SHARED_FORMULA: ClassVar[str] = "2 x (BM + 4 + BN) x BK x 4: two buffers, A's rows padded by 4"

    def static_shared_bytes(self) -> int:
        return 2 * (self.BM + 4 + self.BN) * self.BK * 4

    def validate(self) -> None:
        self._rule(self.MIN_BLOCKS >= 1, f"MIN_BLOCKS = {self.MIN_BLOCKS}: at least one block fits on an SM.")
        super().validate()

    def template_args(self):
        return super().template_args() + (self.MIN_BLOCKS,)


@dataclass(frozen=True)
class SplitKConfig(DoubleBufferConfig):
    """09's configuration with K split among SPLITS slices (grid z): each block multiplies one slice's
    tiles; with SPLITS > 1 the blocks write raw sums to a SPLITS x M x N workspace and a second kernel
    adds the slices in order (stage 11). SPLITS is a launch setting, not a template parameter."""
    SPLITS: int = 1
    MAX_SPLITS: ClassVar[int] = 64
    REDUCE_KERNEL: ClassVar[str] = "reduce_split_k"
    REDUCE_THREADS: ClassVar[int] = 256

    def validate(self) -> None:
        self._rule(1 <= self.SPLITS <= self.MAX_SPLITS, f"SPLITS = {self.SPLITS}: from 1 (no split) to "
                                                        f"{self.MAX_SPLITS} slices of K.")
        super().validate()

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), self.SPLITS)

    def workspace_floats(self, M: int, N: int, sm_count: int | None = None) -> int | None:
        return self.SPLITS * M * N if self.SPLITS > 1 else 0

    def finish(self, M: int, N: int, K: int, sm_count: int | None) -> tuple[str, tuple, tuple, tuple]:
        """reduce_split_k: one thread per element of C, adding the SPLITS slices in order."""
        return (self.REDUCE_KERNEL, (ceil_div(M * N, self.REDUCE_THREADS), 1, 1), (self.REDUCE_THREADS, 1, 1),
                (M, N, self.SPLITS))

    def tile(self) -> DoubleBufferConfig:
        """The same tiles without the split: the configuration of 09_double_buffering."""
        return DoubleBufferConfig(*(getattr(self, f.name) for f in dataclasses.fields(DoubleBufferConfig)))


@dataclass(frozen=True)
class AsyncCopyConfig(DoubleBufferConfig):
    """09_double_buffering's configuration with STAGES shared buffers filled by asynchronous
    copies; A is copied a float at a time into rows of BM + 4 floats (the 4 avoid conflicts)."""
    BM: int = 128  # default: the fastest on an H200 (results/stages_06_09_h200_2026-11-22/)
    BN: int = 256
    BK: int = 8
    WM: int = 64
    WN: int = 64
    TM: int = 8
    TN: int = 16
    STAGES: int = 2
    MIN_BLOCKS: int = 1
    PAD: ClassVar[int] = 4  # a constant of the kernel, not a template parameter
    SHARED_FORMULA: ClassVar[str] = "STAGES x (BM + 4 + BN) x BK x 4"

    def static_shared_bytes(self) -> int:
        return self.STAGES * (self.BM + self.PAD + self.BN) * self.BK * 4

    def validate(self) -> None:
        self._rule(self.STAGES >= 2, f"STAGES = {self.STAGES}: one stage is computed on while the next ones "
                                     "load, so at least 2.")
        self._rule(self.BK % 2 == 0, f"BK = {self.BK} must be even (steps k and k+1 alternate tile after tile).")
        self._rule(self.MIN_BLOCKS >= 1, f"MIN_BLOCKS = {self.MIN_BLOCKS}: at least one block fits on an SM.")
        self._warp_rules()
        _vector_rules(self, a_run=1)

    def template_args(self):
        return (self.BM, self.BN, self.BK, self.WM, self.WN, self.TM, self.TN, self.STAGES, self.MIN_BLOCKS)


@dataclass(frozen=True)
class WgmmaConfig(KernelConfig):
    """A BM x BN block tile, one warpgroup (4 warps) per 64 columns of C, each computing its
    64 x BM tile of C^T with Hopper's asynchronous wgmma (TF32, m64 x BM x k8) on BK = 32 tiles:
    A's in wgmma's 128-byte swizzle, B's in padded rows; STAGES tiles in shared memory filled by
    asynchronous copies; ROUND = 1 rounds the inputs to the nearest TF32 (B in its fragments, A in
    shared memory a tile ahead), 0 lets the tensor cores drop the low bits (stage 10, sm_90a)."""
    BM: int = 256  # default: the fastest on an H100 (results/stage_10_h100_2026-11-24/)
    BN: int = 128
    STAGES: int = 4
    ROUND: int = 0
    BK: ClassVar[int] = 32  # one 128-byte swizzled row of A's tile per row of C
    SHARED_FORMULA: ClassVar[str] = ("STAGES x (BM x 32 + 32 x (BN + 8)) x 4, each stage rounded up to 1 KiB, "
                                     "+ 1 KiB to align the first: swizzled A tiles, padded B tiles")

    def threads(self) -> int:
        return self.BN // 64 * 128

    def stage_bytes(self) -> int:
        return ceil_div(4 * (self.BM * self.BK + self.BK * (self.BN + 8)), 1024) * 1024

    def shared_bytes(self) -> int:
        return self.STAGES * self.stage_bytes() + 1024

    def validate(self) -> None:
        BM, BN = self.BM, self.BN
        self._rule(BM in (64, 128, 256), f"BM = {BM} must be 64, 128 or 256 (wgmma's N; kernels/wgmma.cuh spells "
                                         "out these three).")
        self._rule(BN in (64, 128, 192, 256), f"BN = {BN} must be 64, 128, 192 or 256: 64 columns of C per "
                                              "warpgroup, 1 to 4 warpgroups.")
        self._rule(self.STAGES >= 3, f"STAGES = {self.STAGES}: one tile is used, one is still read by the tensor "
                                     "cores and one loads, so at least 3.")
        self._rule(self.ROUND in (0, 1), f"ROUND = {self.ROUND} must be 0 (the tensor cores drop the low bits) or 1 "
                                         "(round to the nearest TF32).")
        threads = self.threads()
        for name, floats in (("A", BM * self.BK), ("B", self.BK * BN)):
            self._rule(floats // 4 % threads == 0, f"the {name} tile ({floats // 4} runs of 4 floats) must be a "
                                                   f"whole number of passes of the {threads} threads.")

    def template_args(self):
        return (self.BM, self.BN, self.STAGES, self.ROUND)

    def block(self):
        return (self.threads(), 1, 1)

    def grid(self, M, N):
        return (ceil_div(N, self.BN), ceil_div(M, self.BM), 1)

"""The stage registry: the only list of the course's stages and their kernels.

Every stage has one two-digit id shared by its notebook, its kernel files and its figures.
A stage's kernels are Variants; each variant has a frozen configuration type that checks its
tile constraints (raising ValueError that names the broken rule) before anything compiles,
and computes the launch geometry. Tests, the ladder, the sliders and the README iterate this.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
NOTEBOOKS = ROOT / "notebooks"


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
    config._rule(config.static_shared_bytes() <= 48 * 1024,
                 f"the tiles take (BM + BN) x BK x 4 = {config.static_shared_bytes()} bytes of static shared "
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


# ---- stages and their kernels --------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """One kernel of a stage: kernels/<name>.cu, its __global__ function and configuration."""
    name: str
    kernel: str
    summary: str
    config_type: type
    default: KernelConfig
    alternatives: tuple[KernelConfig, ...] = ()  # other valid configurations the tests also verify

    @property
    def stage_id(self) -> str:
        return self.name[:2]

    @property
    def path(self) -> Path:
        return KERNELS / f"{self.name}.cu"

    def config(self, **changes) -> KernelConfig:
        return dataclasses.replace(self.default, **changes) if changes else self.default

    def name_expression(self, config: KernelConfig | None = None) -> str:
        args = (config or self.default).template_args()
        return f"{self.kernel}<{', '.join(map(str, args))}>" if args else self.kernel


@dataclass(frozen=True)
class Stage:
    id: str
    slug: str
    title: str
    technique: str
    variants: tuple[Variant, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"

    @property
    def built(self) -> bool:
        """Whether the stage's notebook exists yet (the course is built stage by stage)."""
        return self.notebook.exists()


STAGES: tuple[Stage, ...] = (
    Stage("00", "setup", "Setup", "Backends, the device card, how the course works"),
    Stage("01", "cpu_loop_blocking", "CPU loop blocking", "Loop order, register and cache blocking on the CPU"),
    Stage("02", "naive", "Naive kernels and coalescing", "One thread per element; coalesced global access", (
        Variant("02_naive", "sgemm_naive", "one thread per element, threadIdx.x along rows (uncoalesced)",
                NaiveConfig, NaiveConfig(), (NaiveConfig(32, 8), NaiveConfig(7, 5), NaiveConfig(1, 64))),
        Variant("02_naive_coalesced", "sgemm_naive_coalesced",
                "one thread per element, threadIdx.x along columns (coalesced)", CoalescedConfig,
                CoalescedConfig(), (CoalescedConfig(32, 8), CoalescedConfig(7, 5), CoalescedConfig(1, 64))),
    )),
    Stage("03", "smem_tiling", "Shared-memory tiling", "Tiles of A and B staged in shared memory", (
        Variant("03_smem_tiling", "sgemm_smem_tiling", "TILE x TILE tiles of A and B in shared memory",
                TileConfig, TileConfig(), (TileConfig(8), TileConfig(16), TileConfig(5))),
    )),
    Stage("04", "1d_thread_tiling", "1D thread tiling", "Each thread computes a column of TM results", (
        Variant("04_1d_thread_tiling", "sgemm_1d_thread_tiling",
                "BM x BN block tile, BK-deep shared tiles, TM results per thread down a column",
                ThreadTile1DConfig, ThreadTile1DConfig(),
                (ThreadTile1DConfig(64, 64, 8, 8), ThreadTile1DConfig(16, 16, 4, 4),
                 ThreadTile1DConfig(12, 12, 4, 3), ThreadTile1DConfig(64, 64, 16, 4))),
    )),
    Stage("05", "2d_thread_tiling", "2D thread tiling", "Each thread computes a TM x TN tile", (
        Variant("05_2d_thread_tiling", "sgemm_2d_thread_tiling",
                "BM x BN block tile, BK-deep shared tiles, a TM x TN tile of results per thread",
                ThreadTile2DConfig, ThreadTile2DConfig(),
                (ThreadTile2DConfig(128, 128, 8, 8, 8), ThreadTile2DConfig(16, 16, 4, 2, 2),
                 ThreadTile2DConfig(12, 12, 4, 3, 3), ThreadTile2DConfig(64, 32, 8, 8, 4))),
    )),
    Stage("06", "bank_conflicts", "Bank conflicts", "Measuring and removing shared-memory bank conflicts"),
    Stage("07", "vectorized_access", "Vectorized access", "float4 loads and stores"),
    Stage("08", "warp_tiling", "Warp tiling", "A warp tile between the block and the thread tile"),
    Stage("09", "double_buffering", "Double buffering", "Prefetching the next tile; cp.async pipelines"),
    Stage("10", "tensor_cores", "Tensor cores (TF32)", "wmma fragments on the tensor cores"),
    Stage("11", "autotuning", "Autotuning and the final ladder", "Searching tile sizes; every stage compared"),
)


def stage(stage_id: str) -> Stage:
    for s in STAGES:
        if s.id == stage_id:
            return s
    raise KeyError(f"no stage {stage_id!r}; stages are {', '.join(s.id for s in STAGES)}")


def variants() -> tuple[Variant, ...]:
    return tuple(v for s in STAGES for v in s.variants)


@functools.lru_cache(maxsize=None)
def variant(name: str) -> Variant:
    for v in variants():
        if v.name == name:
            return v
    raise KeyError(f"no kernel variant {name!r}; registered: {', '.join(v.name for v in variants())}")

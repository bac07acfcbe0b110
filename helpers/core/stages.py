"""The stage registry: the only list of the course's stages and their kernels.

Every stage has one two-digit id shared by its notebook, its kernel files and its figures.
A stage's kernels are Variants; each variant has a frozen configuration type that checks its
tile constraints (raising ValueError that names the broken rule) before anything compiles,
and computes the launch geometry. A variant's default is the configuration measured on Hopper GPUs
(sm_90: H200, H100); `arch_defaults` holds another for a GPU architecture where that one cannot launch, and
`default_for(arch)` picks. Tests, the ladder, the sliders and the README iterate this.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from helpers.core.arch import ARCHS, arch_name
from helpers.core.configs import KernelConfig
from helpers.core.configs_hopper import WarpSpecializedConfig
from helpers.core.configs_stream_k import StreamKConfig
from helpers.core.configs_tensor_cores import MmaSyncConfig, TensorCoreConfig
from helpers.core.configs import AsyncCopyConfig, CoalescedConfig, DoubleBufferConfig, NaiveConfig, PaddedTile2DConfig, SplitKConfig, ThreadTile1DConfig, ThreadTile2DConfig, TileConfig, VectorizedConfig, WarpTileConfig, WgmmaConfig
from helpers.core.paths import KERNELS, NOTEBOOKS


# ---- stages and their kernels --------------------------------------------------------------
def arch_refusal(gpu_arch: str | None, name: str, compute_capability: str) -> str | None:
    """Why a kernel that needs `gpu_arch` (None: any GPU; "sm_80": 8.0 and later; "sm_90a": 9.0 exactly) cannot
    run on a GPU of that compute capability, or None: the GPUs that can, and that the emulator runs it anywhere."""
    if gpu_arch is None:
        return None
    need = gpu_arch.removeprefix("sm_")
    here = _base_arch(compute_capability).removeprefix("sm_")
    exact = need.endswith("a")
    if (here == need.rstrip("a")) if exact else int(here) >= int(need):
        return None
    cc = int(need.rstrip("a"))
    wants = f"an sm_{need} GPU (compute capability {cc // 10}.{cc % 10}{' exactly' if exact else ' or later'})"
    able = [a for a in ARCHS.values() if (a.name == f"sm_{cc}" if exact else int(a.name[3:]) >= cc)]
    gpus = "; ".join(f"{a.name}: {a.gpus}" for a in able)
    return (f"{name} needs {wants}; this is sm_{here}. GPUs that run it: {gpus}. The CPU emulator runs "
            f"it on any machine (TBT_BACKEND=cpu), and its committed GPU results are in results/.")


@dataclass(frozen=True)
class Variant:
    """One kernel of a stage: kernels/<name>.cu, its __global__ function and configuration."""
    name: str
    kernel: str
    summary: str
    config_type: type
    default: KernelConfig
    alternatives: tuple[KernelConfig, ...] = ()  # other valid configurations the tests also verify
    precision: str = "fp32"  # "tf32": tensor cores, compared with cuBLAS in TF32 and verified to TF32's accuracy
    # The GPUs it compiles for: None (every GPU), "sm_80" (compute capability 8.0 and later) or
    # "sm_90a" (9.0 only: instructions of that architecture alone). The emulator runs them all.
    gpu_arch: str | None = None
    # The kernel this one is built from ("What changed from <parent>" in its file's header): its diff
    # against the parent's file is the stage's lesson. None for the first kernel of the course.
    parent: str | None = None
    # Where `default` (measured on sm_90) cannot serve a GPU: {"sm_86": its configuration there}.
    # Each entry says in a comment how it was chosen. default_for(arch) looks here first.
    arch_defaults: dict[str, KernelConfig] = field(default_factory=dict, hash=False)
    # Why ptxas spills registers at a default configuration, on the architectures where it does (None:
    # no default may spill). tests/measure/test_every_architecture.py holds every spill to this.
    spill_note: str | None = None

    def default_for(self, arch: str | None) -> KernelConfig:
        """The configuration a GPU of `arch` ("sm_86", "8.6") runs by default: the registered one for
        that architecture where there is one, else `default`."""
        if arch is None:
            return self.default
        return self.arch_defaults.get(_base_arch(arch), self.default)

    def unsupported_on(self, compute_capability: str) -> str | None:
        """Why this kernel cannot run on a GPU of that compute capability ("8.6", or "sm_86"), or None:
        the GPUs that can, and that the CPU emulator runs it anywhere."""
        return arch_refusal(self.gpu_arch, self.name, compute_capability)

    @property
    def parent_variant(self) -> "Variant | None":
        """The registered kernel this one is built from, or None."""
        return variant(self.parent) if self.parent else None

    @property
    def stage_id(self) -> str:
        return self.name[:2]

    @property
    def path(self) -> Path:
        return KERNELS / f"{self.name}.cu"

    def config(self, **changes) -> KernelConfig:
        return dataclasses.replace(self.default, **changes) if changes else self.default

    def name_expression(self, config: KernelConfig | None = None) -> str:
        config = config or self.default
        args, kernel = config.template_args(), config.kernel_name(self.kernel)
        return f"{kernel}<{', '.join(map(str, args))}>" if args else kernel


def _base_arch(arch: str) -> str:
    """'8.6', 'sm_86' or 'sm_90a' -> 'sm_86' / 'sm_90': the architecture whose limits and defaults apply."""
    return re.sub(r"(?<=\d)[a-z]$", "", arch_name(arch))


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


# 10_tensor_cores where a block gets 99 KiB of shared memory (sm_86, sm_89, sm_120): the default's three
# 128 x 32 stages of A and B take 110 KiB and cannot launch there. Chosen with ptxas 12.9 (no GPU), among
# configurations of BM = BN = 128, ROUND = 1 and STAGES 2-4 with halved BK or warp tiles, as one that fits on
# all three with no spill and registers well below 255: BK = 16 and 64 x 32 warp tiles (8 warps), 67,072 B of
# shared memory, 192 registers on sm_86/sm_89 and 128 on sm_120 (one block per SM). Not yet timed on such a GPU.
_TC_99_KIB = TensorCoreConfig(128, 128, 16, 64, 32, 3)

# Stage 07's steps are verified in the same configurations.
_VECTORIZED_OTHERS = (VectorizedConfig(128, 128, 16, 8, 8), VectorizedConfig(32, 32, 8, 4, 4),
                      VectorizedConfig(64, 128, 16, 8, 4))
# 09's two steps share their configurations (the second keeps the first's tiles and registers budget).
_DOUBLE_BUFFER_OTHERS = (DoubleBufferConfig(128, 256, 8, 64, 64, 8, 16, MIN_BLOCKS=1),
                         DoubleBufferConfig(32, 64, 8, 32, 64, 8, 8, MIN_BLOCKS=1))

# Every stage in course order. (Not named STAGES: that is a pipelined kernel's number of shared buffers.)
REGISTRY: tuple[Stage, ...] = (
    Stage("00", "setup", "Setup", "Backends, the device card, how the course works"),
    Stage("01", "cpu_loop_blocking", "CPU loop blocking", "Loop order, register and cache blocking on the CPU"),
    Stage("02", "naive", "Naive kernels and coalescing", "One thread per element; coalesced global access", (
        Variant("02_naive", "sgemm_naive", "one thread per element, threadIdx.x along rows (uncoalesced)",
                NaiveConfig, NaiveConfig(), (NaiveConfig(32, 8), NaiveConfig(7, 5), NaiveConfig(1, 64))),
        Variant("02_naive_coalesced", "sgemm_naive_coalesced",
                "one thread per element, threadIdx.x along columns (coalesced)", CoalescedConfig,
                CoalescedConfig(), (CoalescedConfig(32, 8), CoalescedConfig(7, 5), CoalescedConfig(1, 64)), parent="02_naive"),
    )),
    Stage("03", "smem_tiling", "Shared-memory tiling", "Tiles of A and B staged in shared memory", (
        Variant("03_smem_tiling", "sgemm_smem_tiling", "TILE x TILE tiles of A and B in shared memory",
                TileConfig, TileConfig(), (TileConfig(8), TileConfig(16), TileConfig(5)), parent="02_naive_coalesced"),
    )),
    Stage("04", "1d_thread_tiling", "1D thread tiling", "Each thread computes a column of TM results", (
        Variant("04_1d_thread_tiling", "sgemm_1d_thread_tiling",
                "BM x BN block tile, BK-deep shared tiles, TM results per thread down a column",
                ThreadTile1DConfig, ThreadTile1DConfig(),
                (ThreadTile1DConfig(64, 64, 8, 8), ThreadTile1DConfig(16, 16, 4, 4),
                 ThreadTile1DConfig(12, 12, 4, 3), ThreadTile1DConfig(64, 64, 16, 4)), parent="03_smem_tiling"),
    )),
    Stage("05", "2d_thread_tiling", "2D thread tiling", "Each thread computes a TM x TN tile", (
        Variant("05_2d_thread_tiling", "sgemm_2d_thread_tiling",
                "BM x BN block tile, BK-deep shared tiles, a TM x TN tile of results per thread",
                ThreadTile2DConfig, ThreadTile2DConfig(),
                (ThreadTile2DConfig(128, 128, 8, 8, 8), ThreadTile2DConfig(16, 16, 4, 2, 2),
                 ThreadTile2DConfig(12, 12, 4, 3, 3), ThreadTile2DConfig(64, 32, 8, 8, 4)), parent="04_1d_thread_tiling"),
    )),
    Stage("06", "bank_conflicts", "Bank conflicts", "Measuring and removing shared-memory bank conflicts", (
        Variant("06_padded", "sgemm_padded", "05 with PAD unused floats after each row of As",
                PaddedTile2DConfig, PaddedTile2DConfig(),
                (PaddedTile2DConfig(128, 128, 8, 8, 8), PaddedTile2DConfig(128, 128, 16, 16, 4),
                 PaddedTile2DConfig(128, 128, 8, 8, 8, 4), PaddedTile2DConfig(12, 12, 4, 3, 3, 1)), parent="05_2d_thread_tiling"),
        Variant("06_transposed_a", "sgemm_transposed_a", "05 with A's tile stored transposed in shared memory",
                ThreadTile2DConfig, ThreadTile2DConfig(128, 128, 16, 8, 8),
                (ThreadTile2DConfig(128, 128, 8, 8, 8), ThreadTile2DConfig(128, 128, 16, 16, 4),
                 ThreadTile2DConfig(12, 12, 4, 3, 3)), parent="05_2d_thread_tiling"),
        Variant("06_swizzled", "sgemm_swizzled", "05 with an XOR swizzle of As's columns",
                ThreadTile2DConfig, ThreadTile2DConfig(128, 128, 16, 8, 8),
                (ThreadTile2DConfig(128, 128, 8, 8, 8), ThreadTile2DConfig(128, 128, 16, 16, 4),
                 ThreadTile2DConfig(12, 12, 4, 3, 3)), parent="05_2d_thread_tiling",
                spill_note=("the XOR swizzle's index math on top of 05's 8 x 8 thread tile at BK = 16: ptxas 12.9 "
                            "for sm_90 allots 128 registers and keeps a few bytes in local memory (measured on the "
                            "H200 too; notebook 06 shows it); the other architectures fit in 128 registers.")),
    )),
    # Three steps, one idea each: each kernel's diff against its parent is that idea.
    Stage("07", "vectorized_access", "Vectorized access", "float4 loads and stores", (
        Variant("07_float4_copies", "sgemm_float4_copies",
                "06_transposed_a with 16-byte global loads (runs of 4, all issued before the stores) and stores of C",
                VectorizedConfig, VectorizedConfig(), _VECTORIZED_OTHERS, parent="06_transposed_a"),
        Variant("07_runs_of_four", "sgemm_runs_of_four",
                "07_float4_copies with thread tiles in runs of 4, read from shared memory 16 bytes at a time "
                "without bank conflicts",
                VectorizedConfig, VectorizedConfig(), _VECTORIZED_OTHERS, parent="07_float4_copies"),
        Variant("07_vectorized", "sgemm_vectorized",
                "07_runs_of_four with interior tiles copied by a loop of bare 16-byte loads, no bounds tests",
                VectorizedConfig, VectorizedConfig(), _VECTORIZED_OTHERS, parent="07_runs_of_four"),
    )),
    Stage("08", "warp_tiling", "Warp tiling", "A warp tile between the block and the thread tile", (
        Variant("08_warp_tiling", "sgemm_warp_tiling", "07 with each warp owning a WM x WN tile of the block's",
                WarpTileConfig, WarpTileConfig(),
                (WarpTileConfig(128, 128, 8, 32, 64, 8, 8), WarpTileConfig(128, 128, 8, 64, 32, 8, 8),
                 WarpTileConfig(32, 64, 8, 32, 64, 8, 8)), parent="07_vectorized"),
    )),
    # Step 1 is the bare idea (two shared buffers); step 2 adds the register-level prefetch; then cp.async.
    Stage("09", "double_buffering", "Double buffering", "Prefetching the next tile; cp.async pipelines", (
        Variant("09_two_buffers", "sgemm_two_buffers",
                "08 with two shared buffers: the next tiles' global loads are in flight during the math",
                DoubleBufferConfig, DoubleBufferConfig(), _DOUBLE_BUFFER_OTHERS, parent="08_warp_tiling",
                spill_note=("the tiles in flight beside 08's registers under the 128-register cap of MIN_BLOCKS = 2: "
                            "ptxas 12.9 keeps 16 to 20 B in local memory on sm_100 and sm_120; sm_75 to sm_90 fit "
                            "(sm_90 only with constant buffer indices, as the kernel's header says). Timed only on "
                            "an H200 (sm_90).")),
        Variant("09_double_buffering", "sgemm_double_buffering",
                "09_two_buffers with each step's shared loads issued a step ahead, into a second set of registers",
                DoubleBufferConfig, DoubleBufferConfig(), _DOUBLE_BUFFER_OTHERS, parent="09_two_buffers"),
        Variant("09_async_copy", "sgemm_async_copy",
                "09_double_buffering with STAGES buffers filled by asynchronous copies (sm_80+)",
                AsyncCopyConfig, AsyncCopyConfig(),
                (AsyncCopyConfig(128, 128, 8, 32, 64, 8, 8, STAGES=3, MIN_BLOCKS=2),
                 AsyncCopyConfig(128, 128, 8, 32, 64, 8, 8, STAGES=4, MIN_BLOCKS=2),
                 AsyncCopyConfig(32, 64, 8, 32, 64, 8, 8, STAGES=2, MIN_BLOCKS=1)), parent="09_double_buffering"),
    )),
    Stage("10", "tensor_cores", "Tensor cores (TF32)", "wmma fragments, mma.sync, wgmma on the tensor cores", (
        Variant("10_tensor_cores", "sgemm_tensor_cores",
                "09_async_copy with each warp's tile as 16 x 16 wmma fragments, TF32 multiply-adds on tensor cores",
                TensorCoreConfig, TensorCoreConfig(),
                (TensorCoreConfig(ROUND=0), TensorCoreConfig(ROUND=2), TensorCoreConfig(64, 64, 16, 32, 32, 2),
                 TensorCoreConfig(32, 32, 16, 16, 16, 2), TensorCoreConfig(128, 256, 32, 64, 64, 3)),
                precision="tf32", gpu_arch="sm_80", parent="09_async_copy",
                arch_defaults={"sm_86": _TC_99_KIB, "sm_89": _TC_99_KIB, "sm_120": _TC_99_KIB},
                spill_note=("with 64 x 64 warp tiles, 16 accumulator fragments take 128 registers and a step's A and B "
                            "fragments more: ptxas 12.9 reaches the 255-register limit on sm_80, sm_87 and sm_90 and "
                            "keeps a few bytes in local memory (4 to 8 B stored; notebook 10 shows it); sm_100 "
                            "fits in registers. The default stays the configuration measured on the H200 (results/).")),
        # 10_tensor_cores' configurations (its 99 KiB one too: 56,832 B here, without the staging tiles).
        Variant("10_mma_sync", "sgemm_mma_sync",
                "10_tensor_cores with the warp's mma.sync m16n8k8 in PTX's documented fragment layout: each lane "
                "loads its own fragment elements (no bank conflicts) and writes its results straight to C",
                MmaSyncConfig, MmaSyncConfig(),
                (MmaSyncConfig(ROUND=0), MmaSyncConfig(ROUND=2), MmaSyncConfig(64, 64, 16, 32, 32, 2),
                 MmaSyncConfig(32, 32, 16, 16, 16, 2), MmaSyncConfig(128, 256, 32, 64, 64, 3)),
                precision="tf32", gpu_arch="sm_80", parent="10_tensor_cores",
                arch_defaults={a: MmaSyncConfig(**dataclasses.asdict(_TC_99_KIB)) for a in ("sm_86", "sm_89", "sm_120")},
                spill_note=("as in 10_tensor_cores, the 64 x 64 warp tile's accumulators take 128 registers and a step's "
                            "A and B fragments more: ptxas 12.9 allots 255 registers (the limit) on sm_80, sm_87 and sm_90 "
                            "(168 on sm_100) and on sm_90 alone keeps 4 B in local memory (4 B stored, 8 B loaded). The "
                            "default stays 10_tensor_cores', so that the two kernels differ by the one idea.")),
        Variant("10_wgmma", "sgemm_wgmma",
                "10_mma_sync on Hopper's asynchronous warpgroup MMA: 64 x BM x 8 products per warpgroup, "
                "A's tile read by the tensor cores straight from shared memory (sm_90a)",
                WgmmaConfig, WgmmaConfig(),
                (WgmmaConfig(ROUND=1), WgmmaConfig(128, 128, 4), WgmmaConfig(64, 64, 3), WgmmaConfig(256, 128, 3)),
                precision="tf32", gpu_arch="sm_90a", parent="10_mma_sync"),
    )),
    Stage("11", "autotuning", "Autotuning, shape-aware dispatch and the final ladder",
          "Searching tile sizes; a kernel per shape, split-K and stream-K; every stage compared", (
        Variant("11_split_k", "sgemm_split_k",
                "09_double_buffering with K split among SPLITS slices (grid z) and the slices added in a fixed order",
                SplitKConfig, SplitKConfig(),
                (SplitKConfig(SPLITS=2), SplitKConfig(SPLITS=3), SplitKConfig(32, 64, 8, 32, 64, 8, 8, 1, SPLITS=7),
                 SplitKConfig(128, 256, 8, 64, 64, 8, 16, 1, SPLITS=4)), parent="09_double_buffering",
                spill_note=("the slice's first tile lives through the loop beside 09's registers: under the 128-register "
                            "cap of MIN_BLOCKS = 2, ptxas 12.9 keeps 4 to 12 B in local memory on sm_75, sm_80, sm_86, "
                            "sm_87, sm_89 and sm_120; sm_90 and sm_100 fit. Timed only on an H200 (sm_90); the dispatcher "
                            "runs it only for SPLITS > 1 (09_double_buffering otherwise).")),
        # helpers.sgemm(..., precision="tf32") on Hopper: stage 12's kernel with its last tiles shared out by
        # stream-K, for the shapes whose tiles leave SMs idle (few tiles, long K). Taught in notebook 11.
        Variant("11_stream_k", "sgemm_stream_k",
                "12_warp_specialized with the last wave's k-tiles shared out evenly among one block per SM "
                "(stream-K), parts of tiles added in a fixed order by a second kernel (sm_90a)",
                StreamKConfig, StreamKConfig(),
                (StreamKConfig(SK_WAVES=0), StreamKConfig(SK_WAVES=2), StreamKConfig(128, 1, 3),
                 StreamKConfig(128, 2, 2, ROUND=0)),
                precision="tf32", gpu_arch="sm_90a", parent="12_warp_specialized"),
    )),
    Stage("12", "hopper", "Hopper the way cuBLAS does it",
          "TMA copies, mbarrier pipelines, warp specialization, persistent tiles, TF32 rounded to nearest", (
        Variant("12_warp_specialized", "sgemm_warp_specialized",
                "10_wgmma fed by TMA: one thread copies whole tiles, mbarriers order copies and products, a producer "
                "warpgroup and consumer warpgroups, persistent blocks walking tiles, TF32 rounded to nearest (sm_90a)",
                WarpSpecializedConfig, WarpSpecializedConfig(),
                (WarpSpecializedConfig(ROUND=0), WarpSpecializedConfig(PERSISTENT=0),
                 WarpSpecializedConfig(128, 1, 3), WarpSpecializedConfig(128, 2, 2, ROUND=0)),
                precision="tf32", gpu_arch="sm_90a", parent="10_wgmma"),
    )),
)


def stage(stage_id: str) -> Stage:
    for s in REGISTRY:
        if s.id == stage_id:
            return s
    raise KeyError(f"no stage {stage_id!r}; stages are {', '.join(s.id for s in REGISTRY)}")


def variants() -> tuple[Variant, ...]:
    return tuple(v for s in REGISTRY for v in s.variants)


@functools.lru_cache(maxsize=None)
def variant(name: str) -> Variant:
    for v in variants():
        if v.name == name:
            return v
    raise KeyError(f"no kernel variant {name!r}; registered: {', '.join(v.name for v in variants())}")


def resolve(name_or_variant) -> Variant:
    """A registered Variant, given it or its name: the one place names are looked up."""
    return name_or_variant if isinstance(name_or_variant, Variant) else variant(str(name_or_variant))

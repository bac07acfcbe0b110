"""Arithmetic-intensity models of the course's kernels: FLOPs per byte, at several levels.

Every registered kernel variant has a model here (MODELS, keyed by the variant's name; the
tests fail for a variant without one). A model takes the variant's configuration and the
problem's M, N, K and counts, exactly and from the kernel's index code, four quantities:

  flops          2 M N K: the useful multiply-adds (the alpha/beta epilogue is not counted, nor
                 multiply-adds with the zeros that pad edge tiles).
  ideal bytes    each matrix crosses DRAM once: 4 (MK + KN + 2MN). A and B are read, C is read
                 (for beta) and written. No kernel can move less; the 'compulsory' bound.
  dram bytes     the block model: each block reads its panel of A (its rows, all of K) and its
                 panel of B (its columns, all of K) from DRAM once, and reads and writes its C
                 tile once; no reuse between blocks (as if L2 kept nothing from one block for
                 the next). For a block tile BM x BN of C that is
                     4 (MK ceil(N/BN) + KN ceil(M/BM) + 2MN)   bytes.
                 This is the intensity the roofline plots for a kernel.
  request bytes  what the threads' global load and store instructions ask for, every request
                 counted as if no cache existed (bytes, not 32-byte sectors: a model of what
                 the code requests, not of what the memory system moves).
  smem bytes     bytes all threads load from shared memory (stores are not counted); None for
                 kernels that use none.

Bytes are 4 per float; all counts are exact for any M, N, K, including edge blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from helpers.core.arch import FLOAT_BYTES
from helpers.core import stages
from helpers.core.configs import KernelConfig, ceil_div
from helpers.run import backend

LEVELS = ("dram", "ideal", "requests", "smem")


@dataclass(frozen=True)
class Intensity:
    """FLOPs and bytes of one kernel configuration on one problem; intensities in FLOP/byte."""
    variant: str
    config: str
    M: int
    N: int
    K: int
    flops: int
    ideal_bytes: int
    dram_bytes: int
    request_bytes: int
    smem_bytes: int | None

    @property
    def ideal(self) -> float:
        return self.flops / self.ideal_bytes

    @property
    def dram(self) -> float:
        return self.flops / self.dram_bytes

    @property
    def requests(self) -> float:
        return self.flops / self.request_bytes

    @property
    def smem(self) -> float | None:
        return None if self.smem_bytes is None else self.flops / self.smem_bytes

    def level(self, name: str) -> float | None:
        if name not in LEVELS:
            raise ValueError(f"no intensity level {name!r}; levels are {', '.join(LEVELS)}.")
        return getattr(self, name)

    def rows(self) -> list[tuple[str, str]]:
        """(level, 'x FLOP/B (bytes)') pairs for a table."""
        out = []
        for lv, b in (("ideal", self.ideal_bytes), ("dram", self.dram_bytes),
                      ("requests", self.request_bytes), ("smem", self.smem_bytes)):
            out.append((lv, "none" if b is None else f"{self.level(lv):.4g} FLOP/B ({b:,} bytes)"))
        return out


def _flops(M: int, N: int, K: int) -> int:
    return 2 * M * N * K


def _ideal_bytes(M: int, N: int, K: int) -> int:
    return FLOAT_BYTES * (M * K + K * N + 2 * M * N)


def panel_bytes(M: int, N: int, K: int, BM: int, BN: int) -> int:
    """Block model: every BM x BN block tile of C reads its A panel (its rows x K) and B panel
    (K x its columns) once and reads and writes its C tile once. Edge blocks read only the rows
    and columns that exist, so the sum over a column of blocks is exactly M K for A."""
    return FLOAT_BYTES * (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM) + 2 * M * N)


def _check(M: int, N: int, K: int) -> None:
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}.")


# ---- the models, one per variant --------------------------------------------------------------
def _one_thread_per_element(name: str, BM: int, BN: int, config: KernelConfig, M: int, N: int, K: int) -> Intensity:
    """Stage 02: each in-bounds thread loads a row of A and a column of B (2K loads of 4 bytes),
    reads and writes its element of C; no shared memory."""
    return Intensity(name, config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K),
                     panel_bytes(M, N, K, BM, BN), FLOAT_BYTES * M * N * (2 * K + 2), None)


def naive(config, M: int, N: int, K: int) -> Intensity:
    """02_naive: threadIdx.x runs along rows, so a block covers block_x rows x block_y columns of C."""
    return _one_thread_per_element("02_naive", config.block_x, config.block_y, config, M, N, K)


def naive_coalesced(config, M: int, N: int, K: int) -> Intensity:
    """02_naive_coalesced: threadIdx.x runs along columns, so a block covers block_y rows x block_x columns."""
    return _one_thread_per_element("02_naive_coalesced", config.block_y, config.block_x, config, M, N, K)


def smem_tiling(config, M: int, N: int, K: int) -> Intensity:
    """03_smem_tiling: a TILE x TILE block stages TILE x TILE tiles of A and B in shared memory.
    Global: each in-bounds element of the block's A and B panels is loaded once (padding is
    written as zeros, not loaded), so requests equal the block model. Shared: every thread of
    every block (out-of-range ones too) runs ceil(K/T) tiles of T steps, each step loading
    As[ty][k] and Bs[k][tx]: 2 loads of 4 bytes per multiply-add, 0.25 FLOP/B when T divides
    M, N and K."""
    T = config.tile
    panel = panel_bytes(M, N, K, T, T)
    threads = ceil_div(M, T) * T * ceil_div(N, T) * T
    smem = threads * ceil_div(K, T) * T * 2 * FLOAT_BYTES
    return Intensity("03_smem_tiling", config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K),
                     panel, panel, smem)


def _thread_tiling(name: str, config, TN: int, M: int, N: int, K: int) -> Intensity:
    """Stages 04 and 05: a BM x BN block tile through BM x BK and BK x BN shared tiles. Global: each
    in-bounds element of the block's A and B panels is loaded once (padding is written as zeros,
    not loaded) and each in-bounds element of C read and written once, so requests equal the
    block model. Shared: every thread of every block (idle ones at the edges too) runs ceil(K/BK)
    tiles of BK steps, each step loading TM values of A and TN of B for TM*TN multiply-adds."""
    BM, BN, BK, TM = config.BM, config.BN, config.BK, config.TM
    panel = panel_bytes(M, N, K, BM, BN)
    threads = ceil_div(M, BM) * ceil_div(N, BN) * config.threads()
    smem = threads * ceil_div(K, BK) * BK * (TM + TN) * FLOAT_BYTES
    return Intensity(name, config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K), panel, panel, smem)


def thread_tiling_1d(config, M: int, N: int, K: int) -> Intensity:
    """04_1d_thread_tiling: a step loads TM values of A and one of B for TM multiply-adds:
    TM/(TM+1) multiply-adds per shared load, TM/(2(TM+1)) FLOP/B when the tiles divide M, N, K."""
    return _thread_tiling("04_1d_thread_tiling", config, 1, M, N, K)


def thread_tiling_2d(config, M: int, N: int, K: int) -> Intensity:
    """05_2d_thread_tiling: a step loads TM values of A and TN of B for TM*TN multiply-adds:
    TM*TN/(TM+TN) multiply-adds per shared load, TM*TN/(2(TM+TN)) FLOP/B when the tiles divide."""
    return _thread_tiling("05_2d_thread_tiling", config, config.TN, M, N, K)


def _same_traffic_as_05(name: str) -> Callable[..., Intensity]:
    """Stages 06-09 rearrange how 05's bytes move (padding, transposition, 16-byte accesses, warp
    tiles, buffering) but not how many: the same panels per block, and per step TM values of A
    and TN of B from shared memory for TM*TN multiply-adds. A 16-byte access counts 16 bytes."""
    def model_(config, M: int, N: int, K: int) -> Intensity:
        return _thread_tiling(name, config, config.TN, M, N, K)
    model_.__name__ = f"model_{name}"
    model_.__doc__ = f"{name}: " + _same_traffic_as_05.__doc__.split(":", 1)[1].strip()
    return model_


def tensor_cores(config, M: int, N: int, K: int) -> Intensity:
    """10_tensor_cores: global traffic as in 05 (each block loads its panels once, reads and writes
    its C once). Shared: per step of 8 along K each warp loads WM/16 fragments of A (16 x 8) and
    WN/16 of B (8 x 16), 128 floats each, for (WM/16)(WN/16) mma_syncs of 16 x 16 x 8
    multiply-adds: 2 x WM x WN / (WM + WN) FMAs per float loaded. ROUND = 2 adds a read and a
    write of each tile element once per block (the rounding pass), and the epilogue a write and
    a read of each element of C through the staging tile."""
    BM, BN, BK, WM, WN = config.BM, config.BN, config.BK, config.WM, config.WN
    panel = panel_bytes(M, N, K, BM, BN)
    blocks = ceil_div(M, BM) * ceil_div(N, BN)
    tiles = ceil_div(K, BK)
    fragments = config.warps() * tiles * (BK // 8) * (WM // 16 + WN // 16) * 128
    rounding = tiles * 2 * (BM * BK + BK * BN) if config.ROUND == 2 else 0
    epilogue = 2 * BM * BN
    smem = blocks * (fragments + rounding + epilogue) * FLOAT_BYTES
    return Intensity("10_tensor_cores", config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K),
                     panel, panel, smem)


def mma_sync(config, M: int, N: int, K: int) -> Intensity:
    """10_mma_sync: 10_tensor_cores' traffic less its staging of C. Per step of 8 along K each lane loads its own
    elements of WM/16 fragments of A (16 x 8, 128 floats) and WN/8 of B (8 x 8, 64 floats): as many floats as
    wmma's fragments. ROUND = 2 adds the same rounding pass; the results go from registers to C."""
    r = tensor_cores(config, M, N, K)
    staging = ceil_div(M, config.BM) * ceil_div(N, config.BN) * 2 * config.BM * config.BN * FLOAT_BYTES
    return replace(r, variant="10_mma_sync", smem_bytes=r.smem_bytes - staging)


def wgmma(config, M: int, N: int, K: int) -> Intensity:
    """10_wgmma: global traffic as in 05 (each block copies its panels once, reads and writes its
    C once). Shared, per tile of 32 along K: each warpgroup's 4 wgmmas read A's whole BM x 32 tile
    (the tensor cores' reads, through the descriptor), and each thread loads its 16 floats of B's
    fragments, so B's BN x 32 tile once per block: 32 BN (1 + BM/64) floats for 2 x 32 BM BN
    FLOPs, 32 BM/(64 + BM) FLOP/B. ROUND = 1 adds a read and a write of each element of A's tile."""
    BM, BN, BK = config.BM, config.BN, config.BK
    panel = panel_bytes(M, N, K, BM, BN)
    blocks, tiles = ceil_div(M, BM) * ceil_div(N, BN), ceil_div(K, BK)
    per_tile = BN // 64 * BM * BK + BN * BK + (2 * BM * BK if config.ROUND == 1 else 0)
    return Intensity("10_wgmma", config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K),
                     panel, panel, blocks * tiles * per_tile * FLOAT_BYTES)


def warp_specialized(config, M: int, N: int, K: int) -> Intensity:
    """12_warp_specialized: 10_wgmma's traffic with ROUND = 0 (each block copies its panels once, its consumers'
    wgmmas read A's tile and load B's fragments once per tile of 32), whatever ROUND is: the copy engine rounds
    to TF32 on the way, with no read or write of shared memory more. A persistent block walks several tiles,
    each of which reads its panels as one block per tile would."""
    BM, BN, BK = config.BM, config.BN, config.BK
    panel = panel_bytes(M, N, K, BM, BN)
    blocks, tiles = ceil_div(M, BM) * ceil_div(N, BN), ceil_div(K, BK)
    per_tile = config.CONSUMERS * BM * BK + BN * BK
    return Intensity("12_warp_specialized", config.label(), M, N, K, _flops(M, N, K), _ideal_bytes(M, N, K),
                     panel, panel, blocks * tiles * per_tile * FLOAT_BYTES)


def stream_k(config, M: int, N: int, K: int) -> Intensity:
    """11_stream_k: 12_warp_specialized's traffic for its tiles (whole or in parts, each k-tile of a tile is
    copied once), and the workspace: each part of a shared tile written by its block and read back by
    fixup_stream_k (BM x BN floats each way), with one block per SM of the GPU in use (the emulator's 132)."""
    r = warp_specialized(config.tiles_config(), M, N, K)
    work = 2 * config.parts(M, N, K, backend.sm_count()) * config.BM * config.BN * FLOAT_BYTES
    return replace(r, variant="11_stream_k", config=config.label(), dram_bytes=r.dram_bytes + work,
                   request_bytes=r.request_bytes + work)


def split_k(config, M: int, N: int, K: int) -> Intensity:
    """11_split_k: 09's traffic (the slices partition K's tiles, so the panels and the shared loads add
    up to 09's), and with SPLITS = S > 1 the workspace: S x M x N floats written by the products and
    read back by the reduction, which reads and writes C as 09's blocks do."""
    r = _thread_tiling("11_split_k", config, config.TN, M, N, K)
    work = 2 * config.SPLITS * M * N * FLOAT_BYTES if config.SPLITS > 1 else 0
    return replace(r, dram_bytes=r.dram_bytes + work, request_bytes=r.request_bytes + work)


_STAGES_06_09 = ("06_padded", "06_transposed_a", "06_swizzled", "07_float4_copies", "07_runs_of_four",
                 "07_vectorized", "08_warp_tiling", "09_two_buffers", "09_double_buffering",
                 "09_async_copy")

# variant name -> model(config, M, N, K); every registered variant needs an entry
MODELS: dict[str, Callable[..., Intensity]] = {
    "02_naive": naive,
    "02_naive_coalesced": naive_coalesced,
    "03_smem_tiling": smem_tiling,
    "04_1d_thread_tiling": thread_tiling_1d,
    "05_2d_thread_tiling": thread_tiling_2d,
    **{name: _same_traffic_as_05(name) for name in _STAGES_06_09},
    "10_tensor_cores": tensor_cores,
    "10_mma_sync": mma_sync,
    "10_wgmma": wgmma,
    "11_split_k": split_k,
    "11_stream_k": stream_k,
    "12_warp_specialized": warp_specialized,
}

_IDEAL = "ideal (each matrix once): 2MNK / 4(MK + KN + 2MN)"
_REQUEST_NAIVE = "requests (no cache): 2MNK / 4MN(2K + 2), about 0.25 FLOP/B"
FORMULAS: dict[str, tuple[str, ...]] = {
    "02_naive": (
        "dram (each block reads its A and B panels once): 2MNK / 4(MK·⌈N/BN⌉ + KN·⌈M/BM⌉ + 2MN), "
        "block tile BM × BN = block_x × block_y (rows × columns)",
        _REQUEST_NAIVE, _IDEAL, "smem: none"),
    "02_naive_coalesced": (
        "dram (each block reads its A and B panels once): 2MNK / 4(MK·⌈N/BN⌉ + KN·⌈M/BM⌉ + 2MN), "
        "block tile BM × BN = block_y × block_x (rows × columns)",
        _REQUEST_NAIVE, _IDEAL, "smem: none"),
    "03_smem_tiling": (
        "dram (each block reads its A and B panels once): 2MNK / 4(MK·⌈N/T⌉ + KN·⌈M/T⌉ + 2MN), "
        "about T/4 FLOP/B for large K",
        "requests: the same as dram (each panel element is loaded once per block)", _IDEAL,
        "smem: 2 loads of 4 bytes per multiply-add (2T loads per T FMAs): 0.25 FLOP/B"),
    "04_1d_thread_tiling": (
        "dram (each block reads its A and B panels once): 2MNK / 4(MK·⌈N/BN⌉ + KN·⌈M/BM⌉ + 2MN), "
        "about 1/(2/BM + 2/BN) FLOP/B for large K",
        "requests: the same as dram (each panel element is loaded once per block)", _IDEAL,
        "smem: TM + 1 loads (TM of A, 1 of B) per TM FMAs: TM/(TM+1) FMAs per load, TM/(2(TM+1)) FLOP/B"),
    "05_2d_thread_tiling": (
        "dram (each block reads its A and B panels once): 2MNK / 4(MK·⌈N/BN⌉ + KN·⌈M/BM⌉ + 2MN), "
        "about 1/(2/BM + 2/BN) FLOP/B for large K",
        "requests: the same as dram (each panel element is loaded once per block)", _IDEAL,
        "smem: TM + TN loads per TM·TN FMAs (an outer product): TM·TN/(TM+TN) FMAs per load, "
        "TM·TN/(2(TM+TN)) FLOP/B"),
}
FORMULAS.update({name: FORMULAS["05_2d_thread_tiling"] for name in _STAGES_06_09})
FORMULAS["10_tensor_cores"] = FORMULAS["05_2d_thread_tiling"][:3] + (
    "smem: per 8 steps of K a warp loads WM/16 fragments of A and WN/16 of B (128 floats each) for "
    "(WM/16)·(WN/16) mma_syncs of 16·16·8 FMAs: 2·WM·WN/(WM+WN) FMAs per load, WM·WN/(WM+WN) FLOP/B "
    "(plus the staging of C, and with ROUND = 2 one read and write of each tile element)",)
FORMULAS["10_mma_sync"] = FORMULAS["05_2d_thread_tiling"][:3] + (
    "smem: per 8 steps of K each lane loads its elements of WM/16 fragments of A (128 floats each) and WN/8 of B "
    "(64 floats each) for (WM/16)·(WN/8) mma.syncs of 16·8·8 FMAs: 2·WM·WN/(WM+WN) FMAs per load, WM·WN/(WM+WN) "
    "FLOP/B (with ROUND = 2 one read and write of each tile element; no staging of C)",)
FORMULAS["11_split_k"] = FORMULAS["05_2d_thread_tiling"][:1] + (
    "dram with SPLITS = S > 1: 09's, plus the workspace: S·M·N floats written and read back (8·S·M·N bytes)",) + \
    FORMULAS["05_2d_thread_tiling"][1:]
FORMULAS["10_wgmma"] = FORMULAS["05_2d_thread_tiling"][:3] + (
    "smem: per 32 steps of K each of the BN/64 warpgroups' wgmmas read A's BM × 32 tile (tensor cores), "
    "and B's BN × 32 tile is loaded once into fragments: 32·BN·(1 + BM/64) floats per 64·BM·BN FLOPs, "
    "32·BM/(64 + BM) FLOP/B (with ROUND = 1 one more read and write of each element of A's tile)",)


FORMULAS["12_warp_specialized"] = FORMULAS["05_2d_thread_tiling"][:3] + (
    "smem: as 10_wgmma with ROUND = 0, whatever ROUND is (TMA rounds to TF32 as it copies): per 32 steps of K "
    "each consumer warpgroup's wgmmas read A's BM × 32 tile, and B's BN × 32 tile is loaded once into fragments",)


FORMULAS["11_stream_k"] = FORMULAS["05_2d_thread_tiling"][:1] + (
    "dram with tiles shared by stream-K: 12_warp_specialized's, plus each part of a shared tile written to the "
    "workspace and read back by fixup_stream_k (8·BM·BN bytes per part)",) + FORMULAS["12_warp_specialized"][1:]


def model(variant_name: str) -> Callable[..., Intensity]:
    if variant_name not in MODELS:
        raise KeyError(f"no intensity model for {variant_name!r}; add one to helpers/measure/intensity.py "
                       f"(models exist for {', '.join(MODELS)}).")
    return MODELS[variant_name]


def intensity(variant, M: int, N: int, K: int, config: KernelConfig | None = None) -> Intensity:
    """The model of a variant (a Variant or its name) at M, N, K; its default configuration unless given."""
    v = stages.resolve(variant)
    _check(M, N, K)
    config = config or v.default
    if not isinstance(config, v.config_type):
        raise TypeError(f"{v.name} takes a {v.config_type.__name__}, not a {type(config).__name__}.")
    return model(v.name)(config, M, N, K)


def formula(variant_name: str) -> str:
    """The model's formulas as short lines, for a notebook."""
    model(variant_name)
    return f"{variant_name}\n" + "\n".join(f"  {line}" for line in FORMULAS[variant_name])

"""Which kernel computes a product in TF32 (`helpers.sgemm(..., precision="tf32")`): the tensor cores' kernels the
GPU runs.

- Hopper (sm_90; the CPU emulator stands for it unless TBT_ARCH says otherwise): 11_stream_k, stage 12's kernel
  (TMA, warp specialization, TF32 rounded to nearest by the copy engine) with its last tiles shared out by
  stream-K. A model chooses, per shape, among TILE_SHAPES (256 x 128, 128 x 128 and 128 x 64 tiles) and their
  schedules: SK_WAVES = 0 walks every tile whole (12's schedule), 1 shares out the part-empty last wave, 2 that and
  one whole wave more; where every tile is shared and there are at most half as many tiles as SMs, SLICES = S
  launches S blocks per tile instead of one per SM (split-K by stream-K's code: the tiles that share rows of A or
  columns of B read them at the same time). Smaller tiles give a small product more blocks: 512^3 has 8 tiles of
  256 x 128 for 132 SMs, 32 of 128 x 64.
- Other GPUs with TF32 tensor cores (sm_80 and later): 10_mma_sync at the architecture's default. It has no
  split of K: on those GPUs a small C with a long K runs on few SMs (split-K in TF32 is built for Hopper only).
- GPUs without TF32 (before sm_80): the FP32 dispatcher's choice (helpers/run/dispatch.py), which is at least as
  accurate; its `why` says so.

10_wgmma is not among Hopper's choices: with ROUND = 0 its errors are 2.6 times cuBLAS TF32's (the library's
bound is 1.2), and with ROUND = 1 it rounds in the kernel, 22 % slower at 4096^3 (notebook 10); nothing measured
shows it ahead of stage 12's tiles at a shape.

The model (estimate_ms) is the call as `python -m helpers sweep` times it: the host's work and the first launch
(CALL_SECONDS), the busiest block's k-tiles at its tile's time each, a wave's epilogue per wave of whole tiles,
and where tiles are shared, the second kernel (FIXUP_SECONDS), the parts written and read back at DRAM speed and,
where stream-K's runs of the tiles that share operands do not line up, a fraction of the operands read again from
DRAM. Its constants are fitted (tools/fit_tf32_model.py, least squares on relative error) to the H100 sweep of
2026-11-27 (SWEEP_FILE), in which every TF32 call ran 256 x 128 tiles with SK_WAVES = 0 or 1: the other tiles'
times are scaled from that by their rates at 4096^3 on an H200 (RATES_FILE), and SLICES was not measured at all.
On another GPU the k-tiles scale by its FP32 peak and the bytes by its DRAM bandwidth.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from helpers.core import stages
from helpers.core.configs import KernelConfig, ceil_div
from helpers.core.configs_stream_k import StreamKConfig
from helpers.run import backend, dispatch

STREAM_K_VARIANT = "11_stream_k"
WARP_VARIANT = "10_mma_sync"
TILES = StreamKConfig()                       # 256 x 128 tiles, 4 stages, TF32 rounded by the copy engine
# The tiles the model chooses among, (BM, CONSUMERS): 256 x 128, 128 x 128, 128 x 64, 4 stages each; and their
# TFLOP/s at 4096^3 (12_warp_specialized, configs_timed of RATES_FILE), which scale a k-tile's time from 256 x 128's.
TILE_SHAPES = ((256, 2), (128, 2), (128, 1))
TILE_RATES_TFLOPS = {(256, 2): 397.04, (128, 2): 317.43, (128, 1): 185.93}
RATES_FILE = "results/stage_12_h200_2026-11-25/measure_12.json"
SWEEP_FILE = "results/library_sweep_h100_2026-11-27/sweep.json"
CALIBRATION_GPU, CALIBRATION_FP32_PEAK = "NVIDIA H100 80GB HBM3", 66.9
# Fitted to SWEEP_FILE by tools/fit_tf32_model.py (tests/run/test_tf32_model.py fits them again and compares):
CALL_SECONDS = 20.3e-6       # the call's host work and its first launch, inside the sweep's CUDA events
K_TILE_SECONDS = 0.699e-6    # one 256 x 128 k-tile (32 deep) on one SM
WAVE_SECONDS = 7.45e-6       # a wave of whole 256 x 128 tiles: its epilogue, twice with beta != 0 (C read)
FIXUP_SECONDS = 28.7e-6      # the second launch and its kernel's tail, where tiles are shared
REREAD_FRACTION = 0.0472      # of the operands' extra reads (every tile its own) that stream-K's runs take from DRAM
MIN_SLICE_K_TILES = 4        # a slice of K (SLICES) is at least 4 k-tiles deep
# The sweep measured 256 x 128 tiles with SK_WAVES = 0 and 1 only, and the model's times of those calls are off by
# 8 % (median, up to 27 %): another option is chosen only where it is estimated faster by more than this fraction.
UNMEASURED_MARGIN = 0.05


@dataclass(frozen=True)
class Tf32Choice:
    """How a product is computed in TF32: the kernel (variant), its configuration, and why. Same fields as
    dispatch.Choice where they apply (the operands are never padded: stage 12's tensor maps take any shape)."""
    variant: str
    kernel_config: KernelConfig
    source: str
    why: str
    estimate_ms: float | None = None
    pad: bool = False

    def label(self) -> str:
        cfg = self.kernel_config
        sk = ""
        if isinstance(cfg, StreamKConfig):
            sk = f", SK_WAVES={cfg.SK_WAVES}" + (f", SLICES={cfg.SLICES}" if cfg.SLICES else "")
        return f"{self.variant} TF32 {cfg.BM}x{cfg.BN} tile{sk}"


def rate_tflops(machine: dispatch.Machine, tile: tuple[int, int] = (256, 2)) -> float:
    """A tile's TFLOP/s inside its k-loop on `machine`: the fitted k-tile time, scaled by the FP32 peaks (and, for
    another tile, by the rates of RATES_FILE)."""
    bm, consumers = tile
    flops = 2.0 * bm * 64 * consumers * StreamKConfig.BK * machine.sm_count
    return flops / _k_tile_seconds(bm, consumers, machine) / 1e12


def _k_tile_seconds(bm: int, consumers: int, machine: dispatch.Machine) -> float:
    area = bm * 64 * consumers / (256 * 128)
    return (K_TILE_SECONDS * area * TILE_RATES_TFLOPS[(256, 2)] / TILE_RATES_TFLOPS[(bm, consumers)]
            * CALIBRATION_FP32_PEAK / machine.fp32_peak_tflops)


def terms(M: int, N: int, K: int, config: StreamKConfig, machine: dispatch.Machine,
          beta_nonzero: bool = False) -> dict[str, float]:
    """The model's terms for this shape and configuration, each to be multiplied by its constant: 'call' (1),
    'k_tiles' (the busiest block's k-tiles, in 256 x 128 k-tiles on the calibration GPU), 'waves' (waves of whole
    tiles, in 256 x 128 tiles' epilogues, twice with beta != 0), 'fixup' (1 where tiles are shared), 'reread' (the
    seconds, at DRAM speed, of the operands' extra reads under stream-K's runs); and 'bytes_seconds', the parts
    written and read back at DRAM speed, which has no constant."""
    ctas = config.launch_grid(M, N, machine.sm_count)[0]
    tiles, num_k = config.tiles(M, N), ceil_div(K, config.BK)
    sk = config.sk_tiles(M, N, ctas)
    dp_waves, run = ceil_div(tiles - sk, ctas), ceil_div(sk * num_k, ctas)
    area = config.BM * config.BN / (256 * 128)
    k_tile = _k_tile_seconds(config.BM, config.CONSUMERS, machine) / K_TILE_SECONDS
    out = {"call": 1.0, "k_tiles": (dp_waves * num_k + run) * k_tile, "waves": dp_waves * area * (1 + beta_nonzero),
           "fixup": 0.0, "reread": 0.0, "bytes_seconds": 0.0}
    if sk:
        dram = machine.dram_tbs * 1e12
        parts = config.parts(M, N, K, ctas)
        out["fixup"] = 1.0
        out["bytes_seconds"] = 4.0 * (2 * parts * config.BM * config.BN
                                      + (1 + beta_nonzero) * min(M * N, sk * config.BM * config.BN)) / dram
        if not config.SLICES:   # each shared tile reads its rows of A and columns of B; runs that do not line up
            tm, tn = ceil_div(M, config.BM), ceil_div(N, config.BN)     # read them at other times
            out["reread"] = 4.0 * (M * K * (tn - 1) + K * N * (tm - 1)) * sk / tiles / dram
    return out


CONSTANTS = {"call": "CALL_SECONDS", "k_tiles": "K_TILE_SECONDS", "waves": "WAVE_SECONDS", "fixup": "FIXUP_SECONDS",
             "reread": "REREAD_FRACTION"}


def estimate_ms(M: int, N: int, K: int, config: StreamKConfig, machine: dispatch.Machine,
                beta_nonzero: bool = False) -> float:
    """The model's time of the call with 11_stream_k at this configuration, in milliseconds (terms() times the
    fitted constants)."""
    t = terms(M, N, K, config, machine, beta_nonzero)
    return (t["bytes_seconds"] + sum(t[k] * globals()[name] for k, name in CONSTANTS.items())) * 1e3


def options(M: int, N: int, K: int, sm_count: int) -> list[StreamKConfig]:
    """The configurations the model weighs: each tile of TILE_SHAPES with SK_WAVES 0, 1 and 2, and where every tile
    is shared by at least two blocks (tiles <= SMs / 2), SLICES = SMs // tiles (each slice at least
    MIN_SLICE_K_TILES deep)."""
    out = []
    num_k = ceil_div(K, StreamKConfig.BK)
    for bm, consumers in TILE_SHAPES:
        base = dataclasses.replace(TILES, BM=bm, CONSUMERS=consumers)
        out += [dataclasses.replace(base, SK_WAVES=w) for w in (0, 1, 2)]
        slices = min(sm_count // base.tiles(M, N), num_k // MIN_SLICE_K_TILES)
        if slices >= 2:
            out.append(dataclasses.replace(base, SK_WAVES=1, SLICES=slices))
    return out


def measured_kind(config: StreamKConfig) -> bool:
    """Whether the calibration sweep ran options of this kind (256 x 128 tiles, one block per SM)."""
    return (config.BM, config.CONSUMERS, config.SLICES) == (TILES.BM, TILES.CONSUMERS, 0)


def model_choice(M: int, N: int, K: int, machine: dispatch.Machine, beta_nonzero: bool = False) -> Tf32Choice:
    """11_stream_k at the option of least estimated time (ties: the earlier option, larger tiles, fewer shared); an
    option of a kind the sweep never ran must beat the best of those it ran by UNMEASURED_MARGIN."""
    opts = options(M, N, K, machine.sm_count)
    times = [estimate_ms(M, N, K, c, machine, beta_nonzero) for c in opts]
    rank = lambda i: (round(times[i], 6), i)
    best = min((i for i in range(len(opts)) if measured_kind(opts[i])), key=rank)
    other = min((i for i in range(len(opts)) if not measured_kind(opts[i])), key=rank)
    if times[other] < times[best] * (1 - UNMEASURED_MARGIN):
        best = other
    cfg, sms = opts[best], machine.sm_count
    ctas = cfg.launch_grid(M, N, sms)[0]
    tiles, sk = cfg.tiles(M, N), cfg.sk_tiles(M, N, ctas)
    plural = lambda n, word: f"{n} {word}{'s' if n != 1 else ''}"
    tile = f"{cfg.BM}x{cfg.BN}"
    num_k = ceil_div(K, cfg.BK)
    if cfg.SLICES:
        how = (f"{plural(tiles, 'tile')} of {tile}, each cut into {cfg.SLICES} slices of K by {cfg.SLICES} blocks "
               f"({ctas} blocks of {sms} SMs, {plural(ceil_div(num_k, cfg.SLICES), 'k-tile')} each at most): split-K "
               f"by stream-K's code, parts added in a fixed order")
    elif sk:
        share = plural(ceil_div(sk * num_k, ctas), "k-tile")
        how = (f"{plural(tiles, 'tile')} of {tile}, {sk} of them shared out by stream-K among {ctas} blocks "
               f"({share} each at most), {tiles - sk} walked whole")
    else:
        how = (f"{plural(tiles, 'tile')} of {tile} walked whole by {plural(ctas, 'block')} "
               f"({math.ceil(tiles / ctas)} each at most)")
    return Tf32Choice(STREAM_K_VARIANT, cfg, "model", f"TF32 model for the {machine.name}: {how}", times[best])


def choose(M: int, N: int, K: int, table: dispatch.Table | None = None, beta_nonzero: bool = False):
    """The kernel for M x N x K in TF32 on the GPU in use (on the emulator: the GPU of TBT_ARCH, else sm_90's)."""
    arch = backend.arch()
    if arch == "sm_90":
        table = table or dispatch.current_table()
        machine = table.machine
        if backend.name() != "gpu":
            machine = dataclasses.replace(machine, sm_count=backend.EMULATED_SMS)
        return model_choice(M, N, K, machine, beta_nonzero)
    variant = stages.variant(WARP_VARIANT)
    if variant.unsupported_on(arch) is None:
        cfg = variant.default_for(arch)
        return Tf32Choice(WARP_VARIANT, cfg, "default", f"{arch} has TF32 tensor cores but not Hopper's wgmma and "
                          f"TMA: {WARP_VARIANT} at its default for {arch} ({cfg.label()})")
    choice = dispatch.choose(M, N, K, table, beta_nonzero)
    return dataclasses.replace(choice, why=f"{arch} has no TF32 tensor cores, so FP32 (as accurate or more): {choice.why}")

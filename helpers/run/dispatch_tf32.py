"""Which kernel computes a product in TF32 (`helpers.sgemm(..., precision="tf32")`): the tensor cores' kernels the
GPU runs.

- Hopper (sm_90; the CPU emulator stands for it unless TBT_ARCH says otherwise): 11_stream_k, stage 12's kernel
  (TMA, warp specialization, TF32 rounded to nearest by the copy engine) with its last tiles shared out by
  stream-K. A wave model chooses SK_WAVES per shape: 0 walks every 256 x 128 tile whole (12's schedule), 1 shares
  out the part-empty last wave, 2 that and one whole wave more. A block's time is its k-tiles at the tile's
  measured rate, plus an epilogue per tile or part and one launch; a shared tile adds the second kernel, which
  reads the parts back.
- Other GPUs with TF32 tensor cores (sm_80 and later): 10_mma_sync at the architecture's default. It has no
  split of K: on those GPUs a small C with a long K runs on few SMs (split-K in TF32 is built for Hopper only).
- GPUs without TF32 (before sm_80): the FP32 dispatcher's choice (helpers/run/dispatch.py), which is at least as
  accurate; its `why` says so.

The model's rates come from 12_warp_specialized's timings on an H200 (results/stage_12_h200_2026-11-25/
measure_12.json: 397 TFLOP/s at 4096^3 with the default tiles; the sweep's small and flat shapes fix the
constants below), scaled to another GPU by its FP32 peak (a Hopper board's TF32 peak is 7.4 times it).
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
RATE_TFLOPS, RATE_GPU, RATE_FP32_PEAK = 397.0, "NVIDIA H200", 66.91   # 12's default at 4096^3, and that GPU's FP32 peak
LAUNCH_SECONDS = 12e-6     # a launch, the pipeline's first copies and last products (512^3 .. 2048^3: 11.5-14 us)
EPILOGUE_SECONDS = 4e-6    # a tile's 128 KiB of C written (4096 x 4096 x 512, 8192 x 8192 x 512: 15.3 us a tile)
FIXUP_SECONDS = 5e-6       # the second kernel's launch and tail, besides its bytes


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
        sk = f", SK_WAVES={cfg.SK_WAVES}" if isinstance(cfg, StreamKConfig) else ""
        return f"{self.variant} TF32 {cfg.BM}x{cfg.BN} tile{sk}"


def rate_tflops(machine: dispatch.Machine) -> float:
    """11_stream_k's tiles' TFLOP/s on `machine`, scaled from the H200's by the FP32 peaks."""
    return RATE_TFLOPS * machine.fp32_peak_tflops / RATE_FP32_PEAK


def estimate_ms(M: int, N: int, K: int, config: StreamKConfig, machine: dispatch.Machine,
                beta_nonzero: bool = False) -> float:
    """The wave model's time of 11_stream_k at this configuration, in milliseconds: the busiest block's whole
    tiles and stream-K run at the tile's rate, an epilogue per tile or part (twice with beta != 0: C is read),
    one launch; with shared tiles, the second kernel reading back the parts the blocks wrote (StreamKConfig.parts)."""
    ctas = machine.sm_count
    tiles, num_k = config.tiles(M, N), ceil_div(K, config.BK)
    per_k_tile = 2.0 * config.BM * config.BN * config.BK / (rate_tflops(machine) * 1e12 / ctas)
    epilogue = EPILOGUE_SECONDS * (1 + beta_nonzero)
    sk = config.sk_tiles(M, N, ctas)
    seconds = LAUNCH_SECONDS + ceil_div(tiles - sk, ctas) * (num_k * per_k_tile + epilogue)
    if sk:
        run = ceil_div(sk * num_k, ctas)
        parts = config.parts(M, N, K, ctas)
        seconds += run * per_k_tile + 2 * epilogue + FIXUP_SECONDS
        seconds += 4.0 * (2 * parts * config.BM * config.BN + (1 + beta_nonzero) * min(M * N, sk * config.BM * config.BN)) \
            / (machine.dram_tbs * 1e12)
    return seconds * 1e3


def model_choice(M: int, N: int, K: int, machine: dispatch.Machine, beta_nonzero: bool = False) -> Tf32Choice:
    """11_stream_k with the SK_WAVES of least estimated time (ties: fewer waves shared)."""
    options = [dataclasses.replace(TILES, SK_WAVES=w) for w in (0, 1, 2)]
    times = [estimate_ms(M, N, K, c, machine, beta_nonzero) for c in options]
    best = min(range(len(options)), key=lambda i: (round(times[i], 6), i))
    cfg, ctas = options[best], machine.sm_count
    tiles, sk = cfg.tiles(M, N), cfg.sk_tiles(M, N, ctas)
    plural = lambda n, word: f"{n} {word}{'s' if n != 1 else ''}"
    tile = f"{cfg.BM}x{cfg.BN}"
    if sk:
        share = plural(ceil_div(sk * ceil_div(K, cfg.BK), ctas), "k-tile")
        how = (f"{plural(tiles, 'tile')} of {tile}, {sk} of them shared out by stream-K among {ctas} blocks "
               f"({share} each at most), {tiles - sk} walked whole")
    else:
        blocks = cfg.launch_grid(M, N, ctas)[0]
        how = (f"{plural(tiles, 'tile')} of {tile} walked whole by {plural(blocks, 'block')} "
               f"({math.ceil(tiles / blocks)} each at most)")
    return Tf32Choice(STREAM_K_VARIANT, cfg, "model", f"wave model for the {machine.name} (TF32): {how}", times[best])


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

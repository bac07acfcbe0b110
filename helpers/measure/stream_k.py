"""Stage 11's stream-K (kernels/11_stream_k.cu): the work each block is dealt, by the kernel's own rule, and the
work each block did, read from its trace on the emulator.

- schedule(M, N, K, config, ctas): per block, its whole tiles and its run of stream-K k-tiles, cut into pieces at
  tile boundaries, as the kernel's Pieces walk deals them (StreamKConfig.sk_tiles, the same rule as the kernel's
  stream_k_tiles()). Computed, not measured.
- traced_k_tiles(M, N, K, config, blocks): the k-tiles each traced block's producer copied, counted in the
  kernel's own trace (its TMA copies, helpers/measure/hopper.py's pipeline events). Measured on the emulator.
"""

from __future__ import annotations

import pandas as pd

from helpers.core import stages
from helpers.core.configs import ceil_div
from helpers.core.configs_stream_k import StreamKConfig
from helpers.measure import hopper
from helpers.measure import trace as trace_mod
from helpers.run import backend

VARIANT = "11_stream_k"


def pieces(M: int, N: int, K: int, config: StreamKConfig, ctas: int, block: int) -> list[tuple[int, int, int]]:
    """(tile, first k-tile, end k-tile) of each piece of `block`'s work, in order: the kernel's Pieces walk."""
    tiles, num_k = config.tiles(M, N), ceil_div(K, config.BK)
    sk = config.sk_tiles(M, N, ctas)
    dp = tiles - sk
    out = [(t, 0, num_k) for t in range(block, dp, ctas)]
    total = sk * num_k
    i, end = total * block // ctas, total * (block + 1) // ctas
    while i < end:
        s = i // num_k
        k0, k1 = i - s * num_k, min(num_k, end - s * num_k)
        out.append((dp + s, k0, k1))
        i = s * num_k + k1
    return out


def schedule(M: int, N: int, K: int, config: StreamKConfig | None = None, ctas: int | None = None) -> pd.DataFrame:
    """A row per block of `ctas` (the SMs; a block past the kernel's grid has no work): its whole tiles, its parts of
    shared tiles (tile: k-tiles first..last), its k-tiles in all."""
    config = config or stages.variant(VARIANT).default
    ctas = ctas or backend.sm_count()
    num_k = ceil_div(K, config.BK)
    rows = []
    launched = config.launch_grid(M, N, ctas)[0]
    for b in range(ctas):
        mine = pieces(M, N, K, config, launched, b) if b < launched else []
        whole = [t for t, k0, k1 in mine if (k0, k1) == (0, num_k)]
        parts = [f"{t}: {k0}..{k1 - 1}" for t, k0, k1 in mine if (k0, k1) != (0, num_k)]
        rows.append({"block": b, "whole tiles": len(whole), "parts of tiles": ", ".join(parts) or "-",
                     "k-tiles": sum(k1 - k0 for _, k0, k1 in mine)})
    return pd.DataFrame(rows).set_index("block")


def traced_k_tiles(M: int, N: int, K: int, config: StreamKConfig | None = None, blocks=(0, 1)) -> dict[int, int]:
    """The k-tiles each of `blocks` copied (its producer's TMA copies), from one trace of the kernel on the emulator
    (fresh random data of M x N x K; a block with no copy did no work)."""
    config = config or stages.variant(VARIANT).default
    launched = config.launch_grid(M, N, backend.EMULATED_SMS)[0]   # a block past the grid did nothing
    tr = trace_mod.capture_variant(stages.variant(VARIANT), config, M, N, K, blocks=tuple(b for b in blocks if b < launched))
    copied = set() if tr.events is None else {int(b) for b in tr.events["block"]}
    return {b: len(hopper.pipeline_events(tr, config.STAGES, block=b).per_k_tile()) if b in copied else 0
            for b in blocks}

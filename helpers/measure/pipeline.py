"""Load/compute overlap of a tiled kernel, read from an emulator trace of the kernel file.

Between two barriers of a block (a barrier interval: trace records carry it as `epoch`), which
k-tiles does the block compute on, and which are on their way from global memory?
- computed: the tiles whose values its threads read from shared memory in the interval (a read
  of a shared word is matched with the tile last stored there in an earlier interval);
- loading: the tiles whose global loads were issued in the interval, into registers (08, 09's
  double buffering) or by an asynchronous copy straight into shared memory (09_async_copy);
- in flight: asynchronous copies issued in an earlier interval that had not landed when this one
  began (the trace records such a copy again in every interval it spans).
A tile is identified by the k of the global elements loaded for it: column // BK of A, row // BK
of B. Nothing here repeats the kernel's indexing: edit the kernel and the schedule follows.

The emulator runs asynchronous copies synchronously when they are waited for, so this is the
kernel's *schedule*, what its barriers and waits allow to overlap, not a timing: on a GPU the
loads of an interval overlap its math only as far as the warps find work while they travel.

    s = pipeline.kernel_schedule(stages.variant("09_async_copy"), tiles=6)
    print(s.table())
    pipeline_plots.plot_schedules([s])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.measure import accesses, memory
from helpers.core import configs
from helpers.core.arch import FLOAT_BYTES
from helpers.core import stages
from helpers.measure.trace import Trace


@dataclass(frozen=True)
class Interval:
    index: int                    # barriers the block has passed before it (every index from 0 is there)
    computed: tuple[int, ...]     # k-tiles read from shared memory in it
    loading: tuple[int, ...]      # k-tiles whose global loads (or async copies) were issued in it
    in_flight: tuple[int, ...]    # k-tiles whose async copies, issued earlier, had not landed at its start

    @property
    def busy_loading(self) -> tuple[int, ...]:
        """Every tile on its way in this interval: issued here or still in flight."""
        return tuple(sorted(set(self.loading) | set(self.in_flight)))


@dataclass(frozen=True)
class Schedule:
    """Per barrier interval of one traced block: the tiles computed on and those loading."""
    variant: str
    kernel: str                   # the name expression traced
    problem: tuple[int, int, int]  # M, N, K
    BK: int
    block: int
    asynchronous: bool            # whether the loads are asynchronous copies (global -> shared)
    intervals: tuple[Interval, ...]

    @property
    def tiles(self) -> int:
        return -(-self.problem[2] // self.BK)

    @property
    def overlapped(self) -> int:
        """Intervals in which the block computes on a tile while others are loading."""
        return sum(1 for i in self.intervals if i.computed and i.busy_loading)

    @property
    def depth(self) -> int:
        """The most tiles loading in one interval while a tile is computed on (0: no overlap)."""
        return max((len(i.busy_loading) for i in self.intervals if i.computed), default=0)

    def title(self) -> str:
        M, N, K = self.problem
        return (f"{self.kernel}, block {self.block} of {M} x {N} x {K} ({self.tiles} k-tiles), "
                f"from an emulator trace")

    def table(self) -> str:
        """Plain text, one row per barrier interval (the same on every machine)."""
        fmt = lambda tiles: " ".join(map(str, tiles)) or "-"   # noqa: E731
        kind = "async copies issued" if self.asynchronous else "global loads issued"
        out = [self.title() + ":",
               f"{'interval':>8}  {'computes':<9} {kind:<20} {'copies in flight from before':<28}"]
        for i in self.intervals:
            out.append(f"{i.index:>8}  {fmt(i.computed):<9} {fmt(i.loading):<20} {fmt(i.in_flight):<28}".rstrip())
        out.append(f"{self.overlapped} of {len(self.intervals)} intervals compute while tiles load; at most "
                   f"{self.depth} tile{'s' * (self.depth != 1)} loading while one is computed on.")
        return "\n".join(out)


def _buffer(tr: Trace, name: str) -> int:
    ids = [b for b, n in tr.buffers.items() if n == name]
    if not ids:
        raise KeyError(f"the kernel has no array parameter {name!r} (it has {', '.join(tr.buffers.values())})")
    return ids[0]


def schedule(tr: Trace, M: int, N: int, K: int, BK: int, variant: str = "", block: int | None = None) -> Schedule:
    """The schedule of block `block` (default: the first traced) of a trace of a kernel with the
    course's signature on an M x N x K problem, with k-tiles BK deep."""
    if tr.dropped:
        raise ValueError(f"the trace dropped {tr.dropped} accesses (past its capacity): trace a smaller problem.")
    block = tr.blocks[0] if block is None else block
    r = tr.records[tr.records["block"] == block]
    df = pd.DataFrame({k: r[k] for k in ("thread", "epoch", "seq", "pc", "space", "buffer", "offset", "size",
                                         "op", "repeat")}).astype({"seq": np.int64, "epoch": np.int64,
                                                                   "offset": np.int64, "pc": np.uint64})
    a, b = _buffer(tr, "A"), _buffer(tr, "B")
    g = df[(df.space == 0) & (df.op == 0) & df.buffer.isin((a, b))].copy()
    element = g.offset // np.where(g.buffer == a, tr.itemsize[a], tr.itemsize[b])
    g["tile"] = np.where(g.buffer == a, element % K // BK, element // N // BK)
    shared = df[df.space > 0]
    stores = shared[(shared.op == 1) & (shared.repeat == 0)]
    asynchronous = memory.async_copy_pcs(r).size > 0      # one instruction reads global and writes shared
    # the tile a store writes: that of the same thread's latest global load of A or B before it
    stores = pd.merge_asof(stores.sort_values("seq"), g[["thread", "seq", "tile"]].sort_values("seq"),
                           on="seq", by="thread", direction="backward").dropna(subset=["tile"])
    repeats = shared[(shared.op == 1) & (shared.repeat == 1)]
    repeats = pd.merge_asof(repeats.sort_values("seq"), stores[["thread", "offset", "seq", "tile"]].sort_values("seq"),
                            on="seq", by=["thread", "offset"], direction="backward")
    # a shared read sees the tile last stored at its first word in an earlier interval
    words = stores.loc[stores.index.repeat(np.maximum(1, stores["size"] // FLOAT_BYTES))].copy()
    words["word"] = words.offset // FLOAT_BYTES + words.groupby(level=0).cumcount()
    loads = shared[shared.op == 0].copy()
    loads["word"] = loads.offset // FLOAT_BYTES
    loads = pd.merge_asof(loads.sort_values("epoch"), words[["word", "epoch", "tile"]].sort_values("epoch"),
                          on="epoch", by="word", direction="backward", allow_exact_matches=False)
    tiles_of = lambda frame, e: tuple(sorted(int(t) for t in frame.loc[frame.epoch == e, "tile"].dropna().unique()))  # noqa: E731
    # every interval from the first to the last barrier's, those in which the block touches no memory included:
    # B barriers make B + 1 intervals
    intervals = tuple(Interval(e, tiles_of(loads, e), tiles_of(g, e), tiles_of(repeats, e))
                      for e in range(int(df.epoch.max()) + 1 if len(df) else 0))
    return Schedule(variant, tr.kernel, (M, N, K), BK, block, asynchronous, intervals)


def kernel_schedule(variant, config: configs.KernelConfig | None = None, tiles: int = 6) -> Schedule:
    """Traces block 0 of a registered kernel (a Variant or its name) on a problem one block tile
    wide and `tiles` k-tiles deep, and returns its schedule."""
    v = stages.resolve(variant)
    config = config or v.default
    if tiles < 1:
        raise ValueError(f"tiles = {tiles}: trace at least one k-tile.")
    M, N, K = config.BM, config.BN, tiles * config.BK
    return schedule(accesses.kernel_trace(v, config, M, N, K), M, N, K, config.BK, v.name)



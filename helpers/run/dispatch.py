"""Shape-aware dispatch: which kernel and configuration compute C = alpha A B + beta C for a given shape.

One configuration tuned at 4096^3 is not the best everywhere. A 128 x 128 tile gives a 1000 x 1000 product
64 blocks, half an H200's 132 SMs idle; a shape one past a multiple of the tile adds a whole row of blocks;
a long K with a small C leaves the SMs waiting on few, long blocks. The dispatcher chooses, per shape:

1. a measured table of this GPU (results/dispatch_<gpu>_<date>.json, written on the GPU by
   `python -m helpers dispatch-table`) where it holds the shape;
2. else the **wave model**: for each tile of CANDIDATES and each split of K into S slices, blocks =
   tiles of C x S; they run in waves of (SMs x blocks per SM); the time is waves x one block's time
   (its share of the tile's measured rate, with K / S of the depth), plus, with S > 1, the workspace's
   traffic at DRAM speed and one more launch. The least time wins.

The tiles' rates come from the table's calibration rows (each candidate timed at a large square on that
GPU). On the CPU emulator, or on a GPU with no table of its own, the model uses the newest committed table
and says which GPU it describes. Every choice is a configuration of 11_split_k, whose SPLITS = 1 is
09_double_buffering's kernel. (TF32's choices: helpers/run/dispatch_tf32.py.)

Tables are read once per process and again only when results/ or a table file changes (their stamps,
helpers/core/file_stamps.py): a choice costs no file read after the first.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path

from helpers.core import file_stamps, results_files
from helpers.core.configs import SplitKConfig, ceil_div
from helpers.core.errors import CourseError
from helpers.core.paths import RESULTS_DIR, rel
from helpers.run import backend

SPLIT_VARIANT = "11_split_k"           # SPLITS > 1
WHOLE_VARIANT = "09_double_buffering"  # SPLITS = 1: the same tiles without the slices' bookkeeping (faster by ~3 %)
# The tiles the dispatcher chooses among: 09's two registered configurations, and for shapes with few tiles
# of C two smaller ones of 128 threads that share an SM four at a time: 128 x 64 keeps 8 x 8 thread tiles (the
# same shared-memory intensity as 128 x 128), 64 x 64 has 4 x 8. (64 x 128 would spill in 11_split_k under
# the 128-register cap; ptxas 12.9, sm_90. None of these spills in either kernel.)
CANDIDATES: dict[str, SplitKConfig] = {
    "128x256": SplitKConfig(128, 256, 8, 64, 64, 8, 16, MIN_BLOCKS=1),
    "128x128": SplitKConfig(128, 128, 8, 32, 64, 8, 8, MIN_BLOCKS=2),
    "128x64": SplitKConfig(128, 64, 8, 64, 32, 8, 8, MIN_BLOCKS=4),
    "64x64": SplitKConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=4),
}
SPLITS = tuple(range(1, 33))
MIN_SLICE_TILES = 8      # a slice of K is at least 8 tiles deep (shallower ones spend more on setup than math)
# Two constants of the wave model, fitted (least squares on log time) to the 189 timings of
# results/dispatch_h200_2026-11-25.json: an SM holding r < MIN_BLOCKS blocks runs each faster, at
# (r / MIN_BLOCKS) ** PARTIAL_EXPONENT of its full rate per block; a split costs LAUNCH_SECONDS besides
# its traffic (the second launch, and the gap between the two kernels).
PARTIAL_EXPONENT = 0.4
LAUNCH_SECONDS = 12e-6
# Padding: the kernel's checked 4-byte loads where rows are misaligned cost UNALIGNED_FACTOR of its time
# (4095^3 on the H200: 3.41 ms unpadded against 3.03 ms padded, copies aside; results/dispatch_h200_2026-11-25.json);
# each copy into or out of a padded array costs COPY_SECONDS (a launch and its tail, an estimate) besides its
# bytes at DRAM speed. For small products the copies cost more than the checks.
UNALIGNED_FACTOR = 1.12
COPY_SECONDS = 8e-6
TABLE_GLOB = "dispatch_*.json"


class DispatchTableError(CourseError, ValueError):
    """A dispatch table in results/ that cannot be read."""


@dataclass(frozen=True)
class Machine:
    """What the wave model needs of a GPU."""
    name: str
    sm_count: int
    dram_tbs: float                      # DRAM bandwidth, 10^12 bytes per second
    fp32_peak_tflops: float
    rates: dict[str, float]              # TFLOP/s of each candidate tile at a large square: 09's kernel
    split_rates: dict[str, float]        # the same with 11_split_k's kernel (SPLITS = 1), which splits run

    def scaled_to(self, name: str, sm_count: int, dram_tbs: float, fp32_peak_tflops: float) -> "Machine":
        """Another GPU, its tiles' rates assumed the same fractions of its FP32 peak as on this one."""
        scale = fp32_peak_tflops / self.fp32_peak_tflops
        return Machine(name, sm_count, dram_tbs, fp32_peak_tflops, {k: v * scale for k, v in self.rates.items()},
                       {k: v * scale for k, v in self.split_rates.items()})


@dataclass(frozen=True)
class Choice:
    """How one shape is computed: the tiles and split (SPLITS = 1: 09_double_buffering's kernel, else
    11_split_k's), whether the operands are first copied into padded ones (N and K rounded up to multiples
    of 4, so that every interior access is 16 bytes), and why."""
    config: SplitKConfig
    pad: bool
    source: str                          # "table" or "model"
    why: str
    estimate_ms: float | None = None

    @property
    def tile(self) -> str:
        return f"{self.config.BM}x{self.config.BN}"

    @property
    def variant(self) -> str:
        return SPLIT_VARIANT if self.config.SPLITS > 1 else WHOLE_VARIANT

    @property
    def kernel_config(self):
        """The configuration of `variant`'s kernel."""
        return self.config if self.config.SPLITS > 1 else self.config.tile()

    def label(self) -> str:
        split = f", SPLITS={self.config.SPLITS}" if self.config.SPLITS > 1 else ""
        return f"{self.variant} {self.tile} tile{split}{', padded' if self.pad else ''}"


@dataclass
class Table:
    """A GPU's dispatch table: its machine description and its measured best per shape. deps: the stamps of
    the files it was chosen from (results/ and the tables read), so that a cached choice knows when it is stale."""
    path: Path
    machine: Machine
    shapes: dict[tuple[int, int, int], dict] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    deps: tuple = ()

    def lookup(self, M: int, N: int, K: int) -> Choice | None:
        row = self.shapes.get((M, N, K))
        if row is None:
            return None
        return Choice(dataclasses.replace(CANDIDATES[row["tile"]], SPLITS=row["splits"]), row["pad"], "table",
                      f"measured fastest at {M}x{N}x{K} on the {self.machine.name} ({rel(self.path)})",
                      row["median_ms"])


def needs_padding(N: int, K: int) -> bool:
    """Whether rows of A (K floats) or of B and C (N floats) start off a 16-byte boundary: the kernel then
    reads them 4 bytes at a time, checked, everywhere (slower by about a tenth), unless they are padded."""
    return N % 4 != 0 or K % 4 != 0


def estimate_ms(M: int, N: int, K: int, tile: str, splits: int, machine: Machine, beta_nonzero: bool = False) -> float:
    """The wave model's time for one tile and split, in milliseconds. Blocks go round the SMs: the busiest SM
    runs ceil(blocks / SMs) of them, MIN_BLOCKS at a time at the tile's measured rate, and a last group of
    r < MIN_BLOCKS faster each (PARTIAL_EXPONENT). A split adds its workspace's traffic and LAUNCH_SECONDS."""
    cfg = CANDIDATES[tile]
    rate = (machine.rates if splits == 1 else machine.split_rates)[tile] * 1e12 / machine.sm_count  # per SM
    blocks = ceil_div(M, cfg.BM) * ceil_div(N, cfg.BN) * splits
    depth = ceil_div(ceil_div(K, cfg.BK), splits) * cfg.BK
    work = 2.0 * cfg.BM * cfg.BN * depth                         # FLOP of one block
    full, rest = divmod(ceil_div(blocks, machine.sm_count), cfg.MIN_BLOCKS)
    seconds = (full * cfg.MIN_BLOCKS * work + (rest * work / (rest / cfg.MIN_BLOCKS) ** PARTIAL_EXPONENT
                                               if rest else 0.0)) / rate
    if splits > 1:  # the slices written and read back, C written (and read, with beta != 0), one launch
        seconds += 4.0 * M * N * (2 * splits + 1 + beta_nonzero) / (machine.dram_tbs * 1e12) + LAUNCH_SECONDS
    return seconds * 1e3


def ranked(M: int, N: int, K: int, machine: Machine, beta_nonzero: bool = False) -> list[tuple[float, str, int]]:
    """(estimated ms, tile, splits) for every candidate the model considers, fastest first."""
    out = []
    for tile, cfg in CANDIDATES.items():
        if tile in machine.rates and tile in machine.split_rates:
            out += [(estimate_ms(M, N, K, tile, s, machine, beta_nonzero), tile, s) for s in SPLITS
                    if s == 1 or ceil_div(K, cfg.BK) >= s * MIN_SLICE_TILES]
    return sorted(out)


def padding_ms(M: int, N: int, K: int, machine: Machine, beta_nonzero: bool = False) -> float:
    """What padding costs a call, in ms: each operand copied into a padded one (A where K % 4, B where either,
    C where N % 4 and beta != 0) and the result copied out where N % 4, read and written at DRAM speed."""
    copies = [M * K] * (K % 4 != 0) + [K * N] * needs_padding(N, K) + [M * N] * (N % 4 != 0) * (1 + beta_nonzero)
    return (len(copies) * COPY_SECONDS + 8.0 * sum(copies) / (machine.dram_tbs * 1e12)) * 1e3


def model_choice(M: int, N: int, K: int, machine: Machine, beta_nonzero: bool = False) -> Choice:
    """The wave model's choice among CANDIDATES and SPLITS, and, where N or K is not a multiple of 4, whether
    padding costs less than the checked loads (UNALIGNED_FACTOR, padding_ms)."""
    t, tile, s = ranked(M, N, K, machine, beta_nonzero)[0]
    pad = needs_padding(N, K)
    if pad:
        padded = t + padding_ms(M, N, K, machine, beta_nonzero)
        pad = padded < t * UNALIGNED_FACTOR
        t = padded if pad else t * UNALIGNED_FACTOR
    cfg = CANDIDATES[tile]
    blocks = ceil_div(M, cfg.BM) * ceil_div(N, cfg.BN)
    per_sm = ceil_div(blocks * s, machine.sm_count)
    plural = lambda n, word: f"{n} {word}{'s' if n != 1 else ''}"
    why = (f"wave model for the {machine.name}: {plural(blocks, 'tile')} of {tile}"
           f"{f' x {s} slices of K' if s > 1 else ''} = {plural(blocks * s, 'block')}, at most {per_sm} per SM, "
           f"{cfg.MIN_BLOCKS} at a time")
    return Choice(dataclasses.replace(cfg, SPLITS=s), pad, "model", why + (", padded" if pad else ""), t)


def choose(M: int, N: int, K: int, table: Table | None = None, beta_nonzero: bool = False) -> Choice:
    """The configuration for M x N x K: the table's where it measured the shape, else the wave model's."""
    table = table or current_table()
    return table.lookup(M, N, K) or model_choice(M, N, K, table.machine, beta_nonzero)


# ---- tables ------------------------------------------------------------------------------------
def read_table(path: Path | str) -> Table:
    """A dispatch table written by measure.dispatch_table.record; a damaged one is named with what is wrong.
    Read again only once the file changed."""
    key = file_stamps.absolute(path)
    now = file_stamps.stamp(key)
    hit = _tables.get(key)
    if hit is not None and now is not None and hit[0] == now:
        return hit[1]
    table = _read_table(Path(path))
    table.deps = ((key, now),)
    with _lock:
        _tables[key] = (now, table)
    return table


def _read_table(path: Path) -> Table:
    data = results_files.read_json(path)
    machine = results_files.require(path, data, "machine", dict)
    rates, split_rates = (results_files.require(path, machine, k, dict, "machine") for k in ("rates", "split_rates"))
    for key, r in (("rates", rates), ("split_rates", split_rates)):
        if set(r) - set(CANDIDATES) or not r or not all(isinstance(v, (int, float)) and v > 0 for v in r.values()):
            raise DispatchTableError(f"{rel(path)}: machine.{key} must give a positive TFLOP/s for tiles among "
                                     f"{', '.join(CANDIDATES)}; it has {r!r}. Fix: write it again with "
                                     f"`python -m helpers dispatch-table` on the GPU, or delete it.")
    m = Machine(str(results_files.require(path, machine, "gpu", str, "machine")),
                int(results_files.require(path, machine, "sm_count", int, "machine")),
                float(results_files.require(path, machine, "dram_tbs", (int, float), "machine")),
                float(results_files.require(path, machine, "fp32_peak_tflops", (int, float), "machine")),
                {k: float(v) for k, v in rates.items()}, {k: float(v) for k, v in split_rates.items()})
    shapes = {}
    for row in results_files.require(path, data, "shapes", list):
        try:
            key = (int(row["M"]), int(row["N"]), int(row["K"]))
            best = row["best"]
            if best["tile"] not in CANDIDATES or int(best["splits"]) not in SPLITS:
                raise ValueError(f"unknown tile or split {best!r}")
            shapes[key] = {"tile": best["tile"], "splits": int(best["splits"]), "pad": bool(best["pad"]),
                           "median_ms": float(best["median_ms"])}
        except (KeyError, TypeError, ValueError) as e:
            raise DispatchTableError(f"{rel(path)}: a row of 'shapes' cannot be read ({e}): {row!r}. Fix: write it "
                                     f"again with `python -m helpers dispatch-table` on the GPU.") from None
    return Table(path, m, shapes, data.get("provenance", {}))


def committed_tables(directory: Path | str = RESULTS_DIR) -> list[Path]:
    """The dispatch tables in results/, oldest first (their names end in the date)."""
    return sorted(Path(directory).glob(TABLE_GLOB), key=lambda p: (p.stem.rsplit("_", 1)[-1], p.name))


def table_for(gpu_name: str | None, directory: Path | str = RESULTS_DIR) -> Table:
    """The newest table measured on a GPU of that name, else the newest of any GPU. Its deps: the folder and
    every table read (a new, removed or edited table makes a cached choice stale)."""
    paths = committed_tables(directory)
    if not paths:
        raise DispatchTableError(f"no dispatch table in {rel(Path(directory))} ({TABLE_GLOB}). Fix: on a GPU, run "
                                 f"`python -m helpers dispatch-table`.")
    tables = [read_table(p) for p in paths]
    own = [t for t in tables if gpu_name and t.machine.name == gpu_name]
    chosen = (own or tables)[-1]
    folder = file_stamps.absolute(directory)
    deps = ((folder, file_stamps.stamp(folder)),) + tuple(d for t in tables for d in t.deps)
    return dataclasses.replace(chosen, deps=deps)


def current_table() -> Table:
    """The table for the GPU in use. A GPU with no table of its own gets the newest committed one's
    measured shapes dropped and its rates scaled to this GPU's SMs, FP32 peak and DRAM bandwidth; the
    CPU emulator gets the newest committed table as it is (it chooses as for that GPU). Cached for the
    process until results/ or a table in it changes."""
    gpu = backend.name() == "gpu"
    d = backend.current().device_info() if gpu else None
    key = (RESULTS_DIR, d.name if gpu else None)
    hit = _current.get(key)
    if hit is not None and file_stamps.unchanged(hit.deps):
        return hit
    table = table_for(d.name if gpu else None)
    if gpu and table.machine.name != d.name:
        machine = table.machine.scaled_to(d.name, d.sm_count, d.memory_bandwidth_tbs, d.fp32_peak_tflops)
        table = Table(table.path, machine, {}, table.provenance, table.deps)
    with _lock:
        _current[key] = table
    return table


def forget_tables() -> None:
    """Drops the tables read so far (the next choice reads results/ again)."""
    with _lock:
        _tables.clear()
        _current.clear()


# read_table's tables by absolute path with their files' stamps; current_table's by (results/, GPU)
_tables: dict[str, tuple[tuple, Table]] = {}
_current: dict[tuple, Table] = {}
_lock = threading.Lock()

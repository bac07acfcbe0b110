"""Memory traces of the learner's own kernel, recorded by the CPU emulator.

The emulator builds the kernel unoptimized with a call before every load and store (so every
access the source writes is there, in source order), runs only a few
sample blocks of the grid, and records, for each shared and global access of their threads in
program order: thread, barrier epoch, warp-collective epoch, code address (-> source line),
memory space, buffer, byte offset, width and kind (load, store, atomic). On a GPU machine the
trace still comes from the emulator running on the CPU: the addresses are the kernel's own.

    t = trace.capture_variant(stages.variant("03_smem_tiling"), M=128, N=128, K=128)
    t.records            # NumPy structured array, one row per access (see FIELDS)
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

import numpy as np

from helpers import emulator
from helpers.run import backend, cpu_backend, gemm
from helpers.measure import verify
from helpers.emulator.launcher import RawTrace
from helpers.core.kernel_source import KernelSource
from helpers.run.kernel_loader import launch_dims
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant

SPACES = ("global", "shared", "dynamic shared")
OPS = ("load", "store", "atomic")
EVENTS = {3: "race: first access", 4: "race: second access", 5: "copy issued", 6: "arrive", 7: "wait passed"}
ACCESS_KINDS = ("load", "store", "copy engine write", "tensor core read", "copy engine read")
WARP = 32


@dataclass
class Trace:
    """Every shared and global access of the sampled blocks of one launch."""
    kernel: str
    source: KernelSource
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks: tuple[int, ...]                 # the sampled blocks (linear indices)
    records: np.ndarray                     # fields below, in each thread's program order
    buffers: dict[int, str]                 # buffer index -> the kernel parameter's name
    itemsize: dict[int, int]                # buffer index -> bytes per element
    shared_variables: list = field(default_factory=list)  # SharedVariable: name, offset, size, line
    dropped: int = 0                        # accesses past the trace's capacity (not kept)
    # In `records`, repeat = 1 marks an in-flight cp.async's store recorded again, 2 a TMA copy's read of global
    # memory or a TMA store's write of it (op 1; the copy engine's, not a warp's request: memory.requests leaves
    # both out).
    # Records that are not a thread's access (op >= 3, EVENTS): a race the runtime's clocks found (the two
    # accesses, `repeat` their ACCESS_KINDS), and a TMA copy issued, a barrier arrival or a wait passed (`offset`
    # the copy's destination or the barrier's address in shared memory, `repeat` the phase's parity).
    events: np.ndarray | None = None
    shared_mem: int = 0                     # the launch's dynamic shared memory (bytes), to launch it again

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def line_text(self, line: int) -> str:
        return self.source.line(line)

    def of_space(self, space: str) -> np.ndarray:
        return self.records[self.records["space"] == SPACES.index(space)]


# Fields of Trace.records: those written by the runtime, plus warp, lane and source line.
FIELDS = ("block", "thread", "warp", "lane", "epoch", "warp_epoch", "seq", "pc", "line", "space",
          "buffer", "offset", "size", "op", "repeat")


def sample_blocks(grid: tuple[int, int, int], count: int = 3) -> tuple[int, ...]:
    """The first block, one from the middle and the last (an edge block where tiles are partial)."""
    n = grid[0] * grid[1] * grid[2]
    picks = [0, (grid[1] // 2) * grid[0] + grid[0] // 2, n - 1][:count]
    return tuple(sorted({min(p, n - 1) for p in picks}))


def _lines(program: emulator.Program, pcs: np.ndarray) -> dict[int, int]:
    """Code address -> line of the kernel file, through addr2line's inline chains."""
    unique = [int(p) for p in np.unique(pcs)]
    if not unique:
        return {}
    out = subprocess.run(["addr2line", "-i", "-a", "-e", str(program.executable),
                          *[hex(p - 1) for p in unique]], capture_output=True, text=True, check=True).stdout
    lines: dict[int, int] = {}
    current = None
    for text in out.splitlines():
        if text.startswith("0x"):
            current = int(text, 16) + 1
            lines.setdefault(current, 0)
            continue
        path, _, num = text.rpartition(":")
        num = num.split(" ")[0]
        if current is not None and lines[current] == 0 and path == str(program.source.path) and num.isdigit():
            lines[current] = int(num)
    return lines


def _expand(raw: RawTrace, program: emulator.Program) -> np.ndarray:
    r = raw.records
    out = np.empty(r.size, dtype=[  # every field is written below
                                  ("block", "<u4"), ("thread", "<u2"), ("warp", "<u2"), ("lane", "u1"),
                                  ("epoch", "<u4"), ("warp_epoch", "<u4"), ("seq", "<u4"), ("pc", "<u8"),
                                  ("line", "<i4"), ("space", "u1"), ("buffer", "i1"), ("offset", "<i8"),
                                  ("size", "u1"), ("op", "u1"), ("repeat", "u1")])
    for name in ("block", "thread", "epoch", "warp_epoch", "seq", "pc", "space", "buffer", "offset", "size", "op",
                 "repeat"):
        out[name] = r[name]
    out["warp"] = r["thread"] // WARP
    out["lane"] = r["thread"] % WARP
    pcs, at = np.unique(r["pc"], return_inverse=True)
    lines = _lines(program, pcs)
    out["line"] = np.array([lines.get(int(p), 0) for p in pcs], dtype=np.int64)[at.ravel()] if pcs.size else 0
    # events and race records where the runtime knew the call's line carry it in the offset's high 32 bits
    known = (r["op"] >= min(EVENTS)) & ((r["offset"] >> 32) > 0)
    out["line"][known] = r["offset"][known] >> 32
    out["offset"][known] = r["offset"][known] & 0xFFFFFFFF
    return out


def capture(path, name_expression: str, grid, block, args, blocks=None, shared_mem: int = 0,
            capacity: int = 4_000_000) -> Trace:
    """Traces `blocks` (default: sample_blocks) of a launch of `name_expression` from `path`.
    `args` as for a launch on the CPU backend; the arrays are not modified."""
    source = KernelSource.read(path)
    source.require_kernel(name_expression)
    grid, block = launch_dims(grid, "grid"), launch_dims(block, "block")
    program = cpu_backend.build(source, (name_expression,), checks="trace")
    blocks = tuple(sample_blocks(grid) if blocks is None else blocks)
    raw = emulator.trace(program, name_expression, grid, block, args, blocks, shared_mem, capacity)
    names = source.parameter_names(name_expression)
    entry = program.entries[name_expression]
    buffers, itemsize = {}, {}
    for i, b in enumerate(raw.param_buffer):
        if b is not None and b not in buffers:
            buffers[b] = names[i] if i < len(names) else f"argument {i}"
            itemsize[b] = entry.params[i].pointee_size or args[i].itemsize
    records = _expand(raw, program)
    is_event = records["op"] >= min(EVENTS)
    accesses, events = (records[~is_event], records[is_event]) if is_event.any() else (records, records[:0].copy())
    return Trace(name_expression, source, grid, block, blocks, accesses, buffers, itemsize, raw.shared, raw.dropped,
                 events, int(shared_mem))


def capture_variant(variant: Variant, config: KernelConfig | None = None, M: int = 128, N: int = 128,
                    K: int = 128, blocks=None) -> Trace:
    """Traces a registered kernel on fresh random data of shape M x N x K."""
    config = config or variant.default
    s = verify.Shape("trace", M, N, K)
    verify.check_inputs(s, reference=False, what="tracing it")
    config.check_shape(M, N, K)
    A, B, C = verify.random_operands(s, np.random.default_rng())
    config = gemm.launch_config(config, N, C, cpu_backend)   # 12's TMA-store epilogue where C allows it
    # split-K: the kernel of the products, writing its slices to the workspace; a persistent kernel: one block per
    # SM of the GPU the emulator stands for
    grid = config.launch_grid(M, N, backend.EMULATED_SMS)
    return capture(variant.path, variant.name_expression(config), grid, config.block(),
                   gemm.kernel_args(config, M, N, K, s.alpha, A, B, s.beta, C, bk=cpu_backend), blocks,
                   config.shared_bytes())



"""One-line edits of the course's Hopper kernels that break a PTX rule, and what the emulator says of each.

A GPU answers such a kernel with wrong results only sometimes, or a hang; the emulator must name the cause. examine()
runs an edited copy of 10_wgmma or 12_warp_specialized (written to a temporary folder beside copies of the headers):
first on a few shapes, where a broken rule stops the kernel with a diagnosis naming its line; then, if it ran to
the end, one traced block through the race check (memory.races), which sees what only the clocks of a traced block
see (generic stores read by the tensor cores without a fence, the tensor cores' reads against later writes). A wrong
result that neither explains is reported as such: it tells a learner nothing.

MUTATIONS holds the edits the course documents (notebooks 10 and 12, tests/emulator/test_hopper_mutations.py); any
other edit goes through examine() the same way.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.core import stages
from helpers.core.configs import KernelConfig
from helpers.core.errors import CourseError
from helpers.measure import memory, verify
from helpers.measure import trace as trace_mod
from helpers.run import backend, cpu_backend, gemm
from helpers.run.kernel_loader import load_kernel


@dataclass(frozen=True)
class Mutation:
    """Replace `old` (exactly once in the kernel file) by `new`: what a learner might write, and the rule it breaks."""
    kernel: str           # the variant: "10_wgmma", "12_warp_specialized" or "11_stream_k"
    rule: str             # the PTX rule it breaks, in a few words
    old: str
    new: str
    config: dict | None = None  # template and host choices, over the variant's small configuration


def _ws(consumers: int = 1, epilogue: int = 0, **over) -> dict:
    return {"BM": 128, "CONSUMERS": consumers, "STAGES": 3, **({"EPILOGUE": epilogue} if epilogue else {}), **over}


PINGPONG = _ws(2, PINGPONG=1)  # 12's ping-pong consumers: the traced block 0 walks two tiles, one per consumer


MUTATIONS: dict[str, Mutation] = {f"{m.kernel}: {m.rule}": m for m in (
    Mutation("10_wgmma", "fence.proxy.async before the tensor cores read the copies (ROUND = 0)",
             "    fence_proxy_async_shared();         // the copies (and roundings) are visible to the tensor cores\n",
             "\n"),
    Mutation("10_wgmma", "fence.proxy.async before the tensor cores read the roundings (ROUND = 1)",
             "    fence_proxy_async_shared();         // the copies (and roundings) are visible to the tensor cores\n",
             "\n", {"ROUND": 1}),
    Mutation("10_wgmma", "wgmma.fence before the products read the fragments",
             "    wgmma_fence();  // the fragments are written before the tensor cores read them\n", "\n"),
    Mutation("10_wgmma", "a stage refilled only after the products reading it completed",
             "    wgmma_wait_group<1>();              // this warpgroup's products of tile t-2 have completed",
             "    wgmma_wait_group<2>();"),
    Mutation("12_warp_specialized", "wgmma.fence before the products read the fragments",
             "      wgmma_fence();\n", "\n"),
    Mutation("12_warp_specialized", "expect_tx announces the bytes the copies deliver (4 KiB short)",
             "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);", "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES - 4096);"),
    Mutation("12_warp_specialized", "expect_tx announces the bytes the copies deliver (4 KiB long)",
             "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);", "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES + 4096);"),
    Mutation("12_warp_specialized", "mbarrier_init visible to every thread before use (__syncthreads)",
             "    fence_mbarrier_init();\n  }\n  if constexpr (CLUSTER == 1) __syncthreads();\n",
             "    fence_mbarrier_init();\n  }\n  if constexpr (CLUSTER == 1) {}\n"),
    Mutation("12_warp_specialized", "mbarrier_init visible to the copy engine before use (fence_mbarrier_init)",
             "    fence_mbarrier_init();\n  }\n", "\n  }\n"),
    Mutation("12_warp_specialized", "setmaxnreg within the block's registers (inc<248>)",
             "setmaxnreg_inc<232>();", "setmaxnreg_inc<248>();", _ws(2)),
    Mutation("12_warp_specialized", "a stage given back only after the products reading it completed",
             "      wgmma_wait_group<1>();  // the products of the k-tile before have completed",
             "      wgmma_wait_group<2>();"),
    Mutation("12_warp_specialized", "a warp's lanes done with a stage before lane 0 gives it back (__syncwarp)",
             "      __syncwarp();           // and so have every lane's loads of its fragments: lane 0 speaks for the warp\n",
             "\n"),
    # ping-pong: consumer 1's first k-tile is a whole tile ahead of consumer 0's in the ring; unordered, its parity
    # wait passes on the stage's round before (the traced block has 5 k-tiles a tile, 3 stages)
    Mutation("12_warp_specialized", "ping-pong consumers wait for their turn before their products",
             "      if (j > 0) mbarrier_wait(&turn[c], (j - 1) / 2 & 1);  // the other consumer has issued tile j-1's "
             "products\n", "\n", PINGPONG),
    Mutation("12_warp_specialized", "ping-pong empty barriers count one consumer's warps",
             "mbarrier_init(&empty[s], 4 * READERS * CLUSTER);",
             "mbarrier_init(&empty[s], 4 * CONSUMERS * CLUSTER);", PINGPONG),
    # CLUSTER = 2: two blocks share A's tile, each multicasting half of it into both (distributed shared memory)
    Mutation("12_warp_specialized", "a block exits only after its peer's last multicast and arrival (cluster_sync)",
             "  auto leave = [] { if constexpr (CLUSTER > 1) cluster_sync(); };", "  auto leave = [] {};",
             {"CLUSTER": 2}),
    Mutation("12_warp_specialized", "a peer's barriers used only after a cluster barrier follows their init",
             "  else cluster_sync();  // every block's", "  else __syncthreads();  // every block's", {"CLUSTER": 2}),
    Mutation("12_warp_specialized", "a stage multicast into only once both blocks' consumers gave it back",
             "mbarrier_init(&empty[s], 4 * READERS * CLUSTER);", "mbarrier_init(&empty[s], 4 * READERS);",
             {"CLUSTER": 2}),
    Mutation("12_warp_specialized", "expect_tx counts the peer's multicast half of A too",
             "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);",
             "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES - 4 * A_FLOATS / CLUSTER);", {"CLUSTER": 2}),
    # EPILOGUE = 1: C through shared-memory staging buffers, stored by TMA
    Mutation("12_warp_specialized", "fence.proxy.async before a TMA store reads the staging buffer (EPILOGUE = 1)",
             "          fence_proxy_async_shared();               // the writes are visible to the copy engine (async "
             "proxy)\n", "\n", _ws(epilogue=1)),
    Mutation("12_warp_specialized", "a barrier between the staging writes and the TMA store (EPILOGUE = 1)",
             "          named_barrier_sync(STORE_BARRIER + c, 128);  // the warpgroup's writes are in, and the other "
             "buffer free\n", "\n", _ws(epilogue=1)),
    Mutation("12_warp_specialized", "a staging buffer rewritten only after its TMA store read it (EPILOGUE = 1)",
             "          if (issuer) tma_store_wait_read<0>();     // the last store has read the other buffer: it may "
             "be rewritten\n", "\n", _ws(epilogue=1)),
    Mutation("12_warp_specialized", "the TMA stores waited for before the block ends (EPILOGUE = 1)",
             "    if (tid % 128 == 0) tma_store_wait<0>();", "", _ws(epilogue=1)),
    # 11_stream_k is 12's kernel with the stream-K walk: the same rule, broken the same way, with parts of tiles shared
    Mutation("11_stream_k", "a warp's lanes done with a stage before lane 0 gives it back (__syncwarp)",
             "      __syncwarp();           // and so have every lane's loads of its fragments: lane 0 speaks for the warp\n",
             "\n"),
)}

# Shapes each edit runs on before the trace: every tile partial somewhere, several rounds of the ring, and a long K.
# (With EPILOGUE = 1, N = 193 takes the register epilogue, C's rows not being 16-byte aligned: "long K" and the traced
# launch store through TMA.)
SHAPES = (verify.Shape("odd", 257, 193, 139), verify.Shape("long K", 300, 200, 1000))
# The traced launch (block 0): five k-tiles, every stage refilled; for 12, more tiles than the 132 blocks of the
# persistent grid, so that block 0 walks two tiles and refills its ring across them; for 11 (SK_WAVES = 1), block 0
# walks tile 0 whole (12 k-tiles), then its stream-K run, one k-tile of tile 132, a part written to the workspace.
RACE_SIZE = {"10_wgmma": (256, 128, 160), "12_warp_specialized": (128 * 12, 64 * 12, 160),
             "11_stream_k": (128 * 12, 64 * 12, 384)}


@dataclass(frozen=True)
class Finding:
    """What the emulator said of a kernel: 'stopped' (a diagnosis: the error's first lines), 'race' (the race
    check's first race), 'wrong result only' (no cause named: a failure of the emulator's), or 'passed'."""
    how: str
    message: str

    @property
    def caught_with_a_cause(self) -> bool:
        return self.how in ("stopped", "race")


def small_config(kernel: str, **over) -> KernelConfig:
    v = stages.variant(kernel)
    base = _ws() if kernel in ("12_warp_specialized", "11_stream_k") else {"BM": 64, "BN": 64, "STAGES": 3}
    return v.config(**{**base, **over})


@contextlib.contextmanager
def edited_kernel(kernel: str, edits: tuple[tuple[str, str], ...] = ()):
    """The kernel file with each (old, new) of `edits` applied in turn (old must occur exactly once), in a temporary
    folder beside copies of the course's headers; without edits, the kernel as it is."""
    v = stages.variant(kernel)
    text = v.path.read_text()
    for old, new in edits:
        if text.count(old) != 1:
            raise ValueError(f"{v.path.name} holds {old.strip()!r} {text.count(old)} times, not once: update the edit")
        text = text.replace(old, new)
    folder = Path(tempfile.mkdtemp(prefix="tbt_edited_"))
    try:
        for header in v.path.parent.glob("*.cuh"):
            shutil.copy(header, folder / header.name)
        path = folder / v.path.name
        path.write_text(text)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _first_lines(e: Exception, n: int = 3) -> str:
    return "\n".join(str(e).splitlines()[:n])


def _run(path: Path, kernel: str, config: KernelConfig, s: verify.Shape, rng) -> verify.Check:
    A, B, C0 = verify.random_operands(s, rng)
    C = C0.copy()
    config = gemm.launch_config(config, s.N, C, cpu_backend)   # 12's TMA-store epilogue where C allows it
    args = gemm.kernel_args(config, s.M, s.N, s.K, s.alpha, A, B, s.beta, C, bk=cpu_backend)
    name = stages.variant(kernel).name_expression(config)
    load_kernel(path, name)(config.launch_grid(s.M, s.N, backend.EMULATED_SMS), config.block(), args,
                            config.shared_bytes())
    if config.workspace_floats(s.M, s.N, backend.EMULATED_SMS):   # 11_stream_k's fix-up adds the shared tiles' parts
        finish, grid, block, ints = config.finish(s.M, s.N, s.K, backend.EMULATED_SMS)
        load_kernel(path, finish)(grid, block, (*(np.int32(i) for i in ints), np.float32(s.alpha), args[-1],
                                                np.float32(s.beta), C), 0)
    return verify.compare(C, C0, *verify.reference(A, B, C0, s.alpha, s.beta, "tf32"), s)


def examine(kernel: str, edits: tuple[tuple[str, str], ...] = (), config: KernelConfig | None = None,
            shapes: tuple[verify.Shape, ...] = SHAPES, race_size: tuple[int, int, int] | None = None,
            seed: int = 0) -> Finding:
    """Runs the kernel with `edits` (edited_kernel) on the emulator (shapes, then the race check of block 0 of a
    race_size launch) and says what the emulator found."""
    v = stages.variant(kernel)
    config = config or small_config(kernel)
    race_size = race_size or RACE_SIZE[kernel]
    rng = np.random.default_rng(seed)
    with edited_kernel(kernel, edits) as path:
        wrong = None
        for s in shapes:
            try:
                check = _run(path, kernel, config, s, rng)
            except CourseError as e:
                return Finding("stopped", _first_lines(e))
            if not check.ok and wrong is None:
                wrong = check
        M, N, K = race_size
        s = verify.Shape("race", M, N, K)
        A, B, C = verify.random_operands(s, rng)
        config = gemm.launch_config(config, N, C, cpu_backend)
        try:
            tr = trace_mod.capture(path, v.name_expression(config), config.launch_grid(M, N, backend.EMULATED_SMS),
                                   config.block(), gemm.kernel_args(config, M, N, K, s.alpha, A, B, s.beta, C,
                                                                    bk=cpu_backend), blocks=(0,),
                                   shared_mem=config.shared_bytes())
        except CourseError as e:
            return Finding("stopped", _first_lines(e))
        found = memory.races(tr)
        if found:
            return Finding("race", str(found[0]))
        if wrong is not None:
            return Finding("wrong result only", wrong.details().splitlines()[0])
        return Finding("passed", "right on every shape, no race in the traced block")


def examine_mutation(m: Mutation, seed: int = 0, **kw) -> Finding:
    return examine(m.kernel, ((m.old, m.new),), small_config(m.kernel, **(m.config or {})), seed=seed, **kw)

"""Exercise 12: stage 12's producer/consumer ring of mbarriers, fed by TMA, without stage 12's wgmma (the
consumers multiply with plain FMAs, so that the exercise is the ring). A block of 160 threads computes a 32 x 32
tile of C: warp 0's thread 0 copies a 32 x 32 box of A and one of B per k-tile into a ring of 3 stages with TMA
(kernels/tma.cuh), warps 1-4 multiply. Each stage has a full and an empty mbarrier.

The emulator judges the ring (helpers/emulator/runtime/runtime_tma.cpp): a wait for a phase that never completes
stops the kernel with the waits named (a wrong parity, a missing arrival, a wrong count), a read of a stage
before its copy landed or a copy over a stage still being read is a race its clocks find. The lesson, from the
events of block 0 (helpers.measure.hopper.pipeline_events): one thread issues every copy and reads nothing of
the stages, every stage of the ring is used, the producer runs ahead of the consumers (copies of later k-tiles
issued before the consumers have given back earlier ones), and no __syncthreads inside the loops."""

from __future__ import annotations

import numpy as np

from helpers.core.configs_hopper import TensorMapBox
from helpers.course.write_it.exercise import Call, Exercise, Launch, Lesson
from helpers.measure import hopper
from helpers.measure.trace import OPS, Trace
from helpers.run import tensor_maps
from helpers.run.gemm import launch_args

BM = BN = BK = 32
STAGES = 3
THREADS = 160
SHARED = STAGES * (BM * BK + BK * BN) * 4 + 1024     # the stages, and 1 KiB to align the first to 1024 bytes
SIGNATURE = (("int", "M"), ("int", "N"), ("int", "K"), ("float", "alpha"), ("const __grid_constant__ TensorMap", "tmA"),
             ("const __grid_constant__ TensorMap", "tmB"), ("float", "beta"), ("float*", "C"))


class _Boxes:
    """The tensor maps' boxes: 32 x 32 of A (rows of C, steps of k) and of B (steps of k, columns of C)."""

    @staticmethod
    def tensor_maps(M: int, N: int, K: int) -> tuple[TensorMapBox, TensorMapBox]:
        return TensorMapBox(M, K, BM, BK), TensorMapBox(K, N, BK, BN)


def calls(ex: Exercise, M: int, N: int, K: int, alpha, A, B, beta, C, bk) -> list[Call]:
    mapA, mapB, keep = tensor_maps.operand_maps(_Boxes(), M, N, K, A, B, bk)
    return [Call("sgemm_tma_ring", ex.launch.grid(M, N, K), ex.launch.block,
                 launch_args(M, N, K, alpha, mapA, mapB, beta, C), SHARED, keep)]


def ring(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """The ring as block 0 ran it on the emulator (see the module)."""
    try:
        e = hopper.pipeline_events(tr, STAGES).events
    except ValueError as err:
        return Lesson(False, (), f"{err}: no TMA copy, no mbarrier", None,
                      "the producer copies with copy_stage (TMA) and both sides wait on mbarriers.")
    k_tiles = -(-K // BK)
    copies = e[e["event"] == "copy issued"]
    issuers = sorted({int(t) for t in copies["thread"]})
    stages_used = sorted({int(s) for s in copies["stage"] if s >= 0})
    # the producer's lead: k-tiles it has copied, minus the ones it has got back, when it copies one. A stage comes
    # back when the producer's wait on its empty barrier passes after it has copied into that stage (whatever the
    # consumers' way of arriving, one per thread or one per warp, and whether the producer skips its first lap's
    # waits or passes them on a fresh barrier's parity)
    waits = e[(e["event"] == "wait passed") & (e["barrier"] == "empty") & e["thread"].isin(issuers)]
    first_copy = copies.groupby("stage")["order"].min()
    back_at = [int(o) for o, st in zip(waits["order"], waits["stage"]) if st in first_copy and o > first_copy[st]]
    issued_at = sorted(int(g["order"].min()) for _, g in copies.groupby(["stage", "round"]))
    lead = max((sum(1 for t in issued_at if t <= at) - sum(1 for t in back_at if t <= at) for at in issued_at),
               default=0)
    r = tr.records[(tr.records["block"] == tr.blocks[0]) & (tr.records["repeat"] == 0)]
    barriers = int(r["epoch"].max()) if r.size else 0
    readers = {int(t) for t in r[(r["space"] > 0) & (r["op"] == OPS.index("load"))]["thread"]}
    measured = (f"copies: {len(copies)} issued for {k_tiles} k-tiles, by thread{'s' * (len(issuers) != 1)} "
                f"{', '.join(map(str, issuers)) or 'none'}; stages used: {', '.join(map(str, stages_used)) or 'none'} "
                f"of {STAGES}",
                f"the producer's lead: up to {lead} k-tiles copied and not yet given back by the consumers "
                f"({STAGES} stages allow {STAGES})",
                f"__syncthreads passed by block 0: {barriers} (the one after setting up the barriers is the only one "
                f"the ring needs)")
    numbers = {"copies": len(copies), "copy issuers": len(issuers), "stages used": len(stages_used),
               "producer lead": lead, "__syncthreads": barriers, "k-tiles": k_tiles}

    def fail(cause, hint, line=None):
        return Lesson(False, measured, cause, line, hint, numbers)

    if len(issuers) != 1 or issuers[0] >= 32:
        return fail(f"the copies are issued by thread{'s' * (len(issuers) != 1)} {', '.join(map(str, issuers))}: one "
                    f"thread of warp 0, the producer, issues every copy", "only the producer thread calls copy_stage.")
    if issuers[0] in readers:
        return fail(f"thread {issuers[0]} issues the copies and also reads the stages: the producer only copies",
                    "the producer's loop waits and copies; the consumers (warps 1 to 4) multiply.")
    if len(copies) < 2 * k_tiles:
        return fail(f"{len(copies)} copies for {k_tiles} k-tiles: each k-tile needs A's box and B's",
                    "one copy_stage per k-tile, into the stage of that k-tile.")
    if len(stages_used) < STAGES:
        return fail(f"the copies use stage{'s' * (len(stages_used) != 1)} {', '.join(map(str, stages_used))} of the "
                    f"{STAGES}: the ring turns through all of them", "k-tile kt goes through stage kt % STAGES.",
                    int(copies["line"].iloc[0]))
    if lead < 2:
        return fail(f"the producer never copies a k-tile before the consumers have given back the one before it "
                    f"(lead {lead}): the stages do not overlap, the ring works as one buffer",
                    "the producer waits on a stage's empty barrier only for the round before; its first round "
                    "passes at once, so it fills the whole ring before its first real wait.")
    if barriers > 1:
        return fail(f"block 0 passes {barriers} __syncthreads: inside the loops they stop the producer and the "
                    f"consumers together, which the barriers of the ring make needless",
                    "keep only the __syncthreads after setting up the barriers; the full and empty barriers order "
                    "the rest.")
    return Lesson(True, measured, numbers=numbers)


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "A ring of stages lets copies run ahead of the math: the producer fills a stage, the consumers empty it, and "
    "two barriers per stage say when each may go on. An mbarrier's phase completes when its count of arrivals "
    "(and, for TMA, its announced bytes) has come; a wait names the parity of the phase it waits for, which "
    "flips at each completion. Round n of a stage is phase n of its barriers.",
    "Set up: full barriers count 1 arrival (the producer's announcement; the copies count off the bytes), "
    "empty barriers count the 128 consumers. The producer, for k-tile kt in stage kt % 3, round kt / 3: wait on "
    "empty for the round before (parity of the round, flipped: round 0 passes at once), announce the stage's "
    "bytes on full, copy. Each consumer: wait on full for this round's parity, multiply, arrive on empty.",
)

EXERCISE = Exercise(
    id="12", stage="12", kernel="sgemm_tma_ring", title="a TMA ring of mbarriers",
    launch=Launch(block=(THREADS,), per_block=(BN, BM)),
    rules=(f"launched with {SHARED:,} bytes of dynamic shared memory: {STAGES} stages of a {BM} × {BK} box of A and "
           f"a {BK} × {BN} box of B (the 128-byte swizzle), and 1 KiB to align them",
           "tmA and tmB are TMA tensor maps of A and B (boxes of 32 × 32, zeros past the edges), built by the course "
           "(helpers/run/tensor_maps.py)",
           "warp 0 is the producer (one of its threads issues every copy); warps 1 to 4 are the consumers, each of "
           "their 128 threads computing 8 results of the block's 32 × 32 tile of C",
           f"a ring of {STAGES} stages, each with a full and an empty mbarrier (kernels/tma.cuh); no __syncthreads "
           f"inside the loops",
           "on a GPU it needs sm_90 (H100, H200): the emulator runs it on any machine"),
    lesson=ring,
    lesson_text=f"the ring: one producer thread issues every copy, every one of the {STAGES} stages is used, the "
                f"producer runs ahead of the consumers, no __syncthreads in the loops (block 0 of 64 × 64 × 256, its "
                f"events on the emulator)",
    course_kernel="12_warp_specialized",
    kernels=(("sgemm_tma_ring", SIGNATURE),), calls=calls, gpu_arch="sm_90",
    lesson_size=(64, 64, 256),
    hints=HINTS, previous=None, headline="producer lead",
    interior_causes=("With TMA, look at the waits first: a consumer that reads a stage must first wait on its full "
                     "barrier for the phase of this round (a wrong parity reads the round before's data), and the "
                     "producer must not copy into a stage before its empty barrier says the consumers are done."),
)

"""Exercise 10: tensor cores. 32 x 32 block tiles, four warps each computing one 16 x 16 tile of C
with wmma's TF32 m16n16k8 (load_matrix_sync, mma_sync, store_matrix_sync); checked against TF32's
tolerance. Its lesson, three measurements of the learner's own kernel:
- NVRTC's PTX of it for sm_80 holds wmma.mma.sync, the tensor cores' instruction;
- in the trace of block 0, each warp loads its fragments of A and B with load_matrix_sync (the
  emulator traces a fragment load lane by lane, one request per element a lane holds) from its own
  16 rows of A and 16 columns of B, and stores one 16 x 16 tile of C (helpers.course.write_it.footprints);
- its result carries TF32's error: most elements of C differ from the float64 product by more than
  FP32 arithmetic could (the tensor cores read 10 of an input's 23 mantissa bits)."""

from __future__ import annotations

import re

import numpy as np

from helpers.course.write_it import footprints
from helpers.course.write_it.exercise import Exercise, Launch, Lesson
from helpers.measure import memory, verify
from helpers.measure.accesses import ranges_text
from helpers.measure.trace import Trace
from helpers.run import backend, toolchain
from helpers.run.gemm import launch_args
from helpers.run.kernel_loader import load_kernel

BM = BN = 32
BK = 8
TILE = 16                          # a warp's tile: one 16 x 16 accumulator fragment
WARPS = (BM // TILE) * (BN // TILE)
ARCH = "sm_80"                     # the first architecture with TF32 wmma
FRAGMENT_REQUESTS = 4              # a TF32 fragment of A (16 x 8) or B (8 x 16): 4 elements per lane
TF32_SHARE = 0.5                   # of C's elements beyond FP32's tolerance: TF32's signature (about 0.9 at 64^3)
_MMA = re.compile(r"^\s*(?:@!?\S+\s+)?((?:wmma\.)?mma\.sync\.\S+)", re.M)


def mma_instructions(tr: Trace) -> list[str]:
    """The tensor-core instructions (wmma.mma.sync, mma.sync) in NVRTC's PTX of the traced kernel for sm_80."""
    ptx, _ = toolchain.nvrtc_ptx(tr.source.text, tr.kernel, ARCH, tr.source.path.name, tr.source.include_dirs)
    return _MMA.findall(ptx)


def fragment_loads(tr: Trace, block: int = 0) -> dict[int, dict[str, int]]:
    """Per warp of `block`: the fragments of A and of B it loads with load_matrix_sync (requests of the
    lines that call it, by the matrix their words come from, 4 per fragment)."""
    lines = {n for n in {int(x) for x in tr.records["line"]} if n and "load_matrix_sync" in tr.line_text(n)}
    sources = footprints.shared_sources(tr, block)
    counts: dict[int, dict[str, int]] = {}
    for q in memory.requests(tr):
        if q.block != block or q.line not in lines or q.op != "load":
            continue
        if q.space == "global":
            name = q.array
        else:
            found = sources.get((1 if q.space == "shared" else 2, int(q.offsets[0]) // footprints.WORD))
            name = found[0] if found else "?"
        per = counts.setdefault(q.warp, {"A": 0, "B": 0})
        if name in per:
            per[name] += 1
    return {w: {k: n // FRAGMENT_REQUESTS for k, n in c.items()} for w, c in sorted(counts.items())}


def tf32_share(tr: Trace, M: int, N: int, K: int, seed: int = 10) -> tuple[float, float]:
    """Runs the traced kernel on the backend in use (fresh data, alpha = 1, beta = 0): the share of C's
    elements whose error exceeds FP32's tolerance, and the largest error in units of TF32's."""
    s = verify.Shape("tf32", M, N, K, alpha=1.0, beta=0.0)
    A, B, C0 = verify.random_operands(s, np.random.default_rng(seed))
    bk = backend.current()
    dC = bk.to_device(C0)
    load_kernel(tr.source.path, tr.kernel)(tr.grid, tr.block, launch_args(M, N, K, 1.0, bk.to_device(A),
                                                                          bk.to_device(B), 0.0, dC),
                                           shared_mem=tr.shared_mem)
    err = np.abs(bk.to_host(dC).astype(np.float64) - verify.reference(A, B, C0, 1.0, 0.0)[0])
    fp32, tf32 = (verify.reference(A, B, C0, 1.0, 0.0, p)[1] for p in ("fp32", "tf32"))
    return float(np.mean(~(err <= fp32))), float(np.max(np.where(np.isnan(err), np.inf, err / tf32)))


def tensor_cores(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """The kernel's multiply-adds are wmma's, on the tensor cores, one 16 x 16 tile per warp."""
    mma = mma_instructions(tr)
    measured = [f"NVRTC's PTX for {ARCH}: {len(mma)} tensor-core instruction{'s' * (len(mma) != 1)}"
                + (f" ({', '.join(sorted({m.split(' ')[0] for m in mma}))})" if mma else "")]
    numbers: dict = {"mma instructions in PTX": len(mma)}
    hint_mma = ("declare the fragments (wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, "
                "wmma::row_major> and matrix_b's alike, an accumulator<..., float>), fill them with "
                "wmma::load_matrix_sync from the shared tiles, and multiply with wmma::mma_sync(acc, a, b, acc).")
    if not mma:
        return Lesson(False, tuple(measured), "your kernel has no tensor-core instruction: NVRTC's PTX holds no "
                                              "wmma.mma.sync, so its multiply-adds run on the FP32 lanes", None,
                      hint_mma, numbers)
    loads = fragment_loads(tr)
    found = footprints.warp_footprints(tr, N, K)
    steps = -(-K // BK)
    for f in found:
        got = loads.get(f.warp, {"A": 0, "B": 0})
        measured.append(f"{f.text()}; {got['A']} fragments of A and {got['B']} of B loaded with load_matrix_sync")
    numbers.update({f"warp {w} fragments of A": c["A"] for w, c in loads.items()})
    numbers.update({f"warp {w} fragments of B": c["B"] for w, c in loads.items()})
    numbers.update({f"warp {f.warp} origin": f.origin for f in found if f.is_tile(TILE, TILE)})
    short = next((f for f in found if min(loads.get(f.warp, {"A": 0}).values()) < steps), None)
    if len(found) != WARPS or short is not None:
        warp = short.warp if short is not None else "?"
        return Lesson(False, tuple(measured), f"warp {warp} of block 0 loads fewer than one fragment of A and one of "
                                              f"B per step of {BK} along K ({steps} steps at K = {K}) with "
                                              f"load_matrix_sync", None, hint_mma, numbers)
    bad = next((f for f in found if not f.is_tile(TILE, TILE)), None)
    if bad is not None:
        return Lesson(False, tuple(measured), f"warp {bad.warp} stores C's rows {ranges_text(bad.c_rows)} × columns "
                                              f"{ranges_text(bad.c_cols)} and reads rows {ranges_text(bad.a_rows)} "
                                              f"of A, columns {ranges_text(bad.b_cols)} of B: not one {TILE} × {TILE} "
                                              f"tile of its own", None,
                      f"each warp owns one {TILE} × {TILE} quarter of the block tile: its fragment of A starts at the "
                      f"first of that quarter's rows of As, its fragment of B at the first of its columns of Bs, and "
                      f"its results go to C's rows and columns of that quarter.", numbers)
    share, worst = tf32_share(tr, M, N, K)
    numbers.update({"share beyond FP32 tolerance": share, "worst error / TF32 tolerance": worst})
    measured.append(f"TF32 arithmetic: {100 * share:.0f} % of C's elements differ from float64 by more than FP32 "
                    f"could (the tensor cores read 10 of an input's 23 mantissa bits); the largest error is "
                    f"{worst:.2f} of TF32's tolerance")
    if share < TF32_SHARE:
        return Lesson(False, tuple(measured), f"only {100 * share:.0f} % of C's elements carry TF32's error: the "
                                              f"result is FP32's, so the products are not the tensor cores'", None,
                      "take C from the accumulator fragment that mma_sync fills (store_matrix_sync), not from "
                      "products computed another way.", numbers)
    return Lesson(True, tuple(measured), numbers=numbers)


HINTS = (  # 1: the idea; 2: what each thread computes (3, the code, is the solution's: write_it.hint)
    "Tensor cores multiply small matrices in one warp-wide instruction. With wmma a warp loads a fragment of "
    "A and one of B from shared memory, multiplies them into an accumulator fragment with mma_sync, and "
    "stores the accumulator at the end; TF32 fragments are m16n16k8.",
    "Each of the 4 warps owns one 16 x 16 quarter of the 32 x 32 block tile. Per tile of 8 steps of k it "
    "loads a 16 x 8 fragment of A from its 16 rows of As and an 8 x 16 fragment of B from its 16 columns "
    "of Bs, and does one mma_sync. At the end it stores the accumulator into its staging tile and waits for "
    "its own lanes (__syncwarp) before they read it back.",
)

EXERCISE = Exercise(
    hints=HINTS, previous="09", headline="share beyond FP32 tolerance",
    id="10", stage="10", kernel="sgemm_tensor_cores", title="TF32 tensor cores",
    launch=Launch(block=(32 * WARPS,), per_block=(BN, BM)),
    rules=(f"{BM} × {BN} block tiles, tiles of A and B {BK} deep in shared memory (the starter copies them)",
           f"each of the {WARPS} warps computes one {TILE} × {TILE} tile of C (the warps in a 2 × 2 grid) with "
           f"nvcuda::wmma's TF32 fragments, m16n16k8 (<mma.h>): load_matrix_sync, mma_sync, store_matrix_sync",
           "checked against TF32's tolerance (the tensor cores keep 10 of FP32's 23 mantissa bits); on a GPU it "
           "needs sm_80 or later (A100, RTX 30xx, H100: not a T4 or V100)"),
    lesson=tensor_cores,
    lesson_text="tensor cores: wmma.mma.sync in NVRTC's PTX, each warp's fragments of A and B loaded with "
                "load_matrix_sync for its own 16 × 16 tile of C, and TF32's error in the result (block 0 of "
                "64 × 64 × 64, traced and run)",
    # the nearest the course's kernel comes to the exercise's tiles (its copies need BK = 16 at 32 x 32)
    course_kernel="10_tensor_cores", course_config={"BM": BM, "BN": BN, "BK": 16, "WM": TILE, "WN": TILE, "STAGES": 2, "ROUND": 0},
    precision="tf32",
    interior_causes=("With wmma, look first at each load_matrix_sync and store_matrix_sync: its ldm (last argument) "
                     "is the row length of the array in shared memory, As's for A's fragment, Bs's for B's, a "
                     "staging tile's for the store, not the fragment's or the other tile's; the pointer each "
                     "fragment is loaded from (its warp's rows of As, its warp's columns of Bs, k from 0); and the "
                     "layouts: row_major fragments and mem_row_major stores for row-major tiles."),
)

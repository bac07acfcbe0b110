"""Stage 07's exercises (vectorized access): the requests 16-byte loads save, which matrices can
take them for a given shape, and the bank conflicts of a 16-byte load in 06's layout and in 07's.
Every answer is traced from the kernel files."""

from __future__ import annotations

import dataclasses

from helpers.core import stages
from helpers.core.arch import WARP_SIZE
from helpers.course.exercises.feedback import Feedback, parse_choice, parse_whole_pair, right, unanswered, wrong
from helpers.measure import accesses
from helpers.measure import memory
from helpers.measure import facts

def _stage07_global_loads(M: int, N: int, K: int, fields: dict | None = None, first_tile: bool = False) -> dict:
    """{array: (requests, widest bytes per lane)} of the global loads of block 0 of 07_vectorized
    (default configuration with `fields` changed), traced on M x N x K; with first_tile, only the
    loads before the block's first barrier (the copy of the first tiles)."""
    v = stages.variant("07_vectorized")
    tr = accesses.kernel_trace(v, v.config(**(fields or {})), M, N, K)
    out: dict[str, tuple[int, int]] = {}
    for q in memory.requests(tr, "global"):
        if q.op != "load" or q.block != tr.blocks[0] or (first_tile and q.epoch != 0):
            continue
        n, width = out.get(q.array, (0, 0))
        out[q.array] = (n + 1, max(width, q.size))
    return out


# Exercise 1 asks about the default with BK = 16, not the default's BK = 8: section 4 of the notebook
# prints the requests per tile of A for the default ("8 tiles x 8 = 64") above the exercise.
EX07_1_FIELDS = {"BK": 16}


def ex07_1_config():
    """The configuration exercise 1 asks about: 07_vectorized's default with EX07_1_FIELDS."""
    return stages.variant("07_vectorized").config(**EX07_1_FIELDS)


def _ex07_1_shapes() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Two problems one block tile big, two tiles deep: K % 4 == 0, and K one less."""
    c = ex07_1_config()
    return (c.BM, c.BN, 2 * c.BK), (c.BM, c.BN, 2 * c.BK - 1)


def _ex07_1_loads_of_a() -> tuple[tuple[int, int], tuple[int, int]]:
    """(requests, widest bytes per lane) of the copy of A's first tile, for K % 4 == 0 and for K one less."""
    return tuple(_stage07_global_loads(*shape, fields=EX07_1_FIELDS, first_tile=True)["A"]
                 for shape in _ex07_1_shapes())


def check_07_exercise_1(answer) -> Feedback:
    """(with 16-byte loads, with the 4-byte fallback): global load requests the whole block issues
    to copy the first tile of A (BM x BK floats), 07_vectorized's default with EX07_1_FIELDS."""
    pair = parse_whole_pair(answer, "(requests with K % 4 == 0, requests with K % 4 != 0)")
    if isinstance(pair, Feedback):
        return pair
    c = ex07_1_config()
    (n16, w16), (n4, w4) = _ex07_1_loads_of_a()
    want = (n16, n4)
    warps = -(-c.threads() // WARP_SIZE)
    floats = c.BM * c.BK
    got16, got4 = pair
    if pair == want:
        return right(f"A's tile is {c.BM} x {c.BK} = {floats} floats, {floats // 4} runs of 4. With K % 4 == 0 a lane "
                     f"reads a run with one {w16}-byte load, so each of the {c.threads()} threads copies {floats // 4 // c.threads()} "
                     f"run(s): {n16} warp requests. With K % 4 != 0 the rows of A start off the 16-byte grid and each "
                     f"float of a run is its own {w4}-byte load: {n4} requests, four times as many, for the same bytes.")
    if pair == want[::-1]:
        return wrong("the two numbers are swapped: the first is the 16-byte path (K % 4 == 0), which needs fewer "
                     "requests.")
    if pair == (n16 // warps, n4 // warps):
        return wrong(f"those are the requests of one warp. The block has {warps} warps, and each issues its own.")
    if pair == (floats // 4, floats):
        return wrong(f"{floats // 4} and {floats} count the lanes' accesses. A request is one instruction of a warp: "
                     f"{WARP_SIZE} lanes at once.")
    if pair == (2 * n16, 2 * n4):
        return wrong("that is both tiles of a K = 2 x BK problem; count the copy of the first tile only.")
    if got16 == got4:
        return wrong("the fallback (load4 with aligned == false) reads each of the 4 floats of a run with its own "
                     "4-byte load: it cannot take as few requests as the 16-byte path.")
    if got16 == n16:
        return wrong(f"the 16-byte count is right ({n16}). Without alignment, how many load instructions does a lane "
                     f"need for one run of 4 floats?")
    if got4 == n4:
        return wrong(f"the 4-byte count is right ({n4}). With 16-byte loads one instruction moves a whole run of 4 "
                     f"floats: how many runs does the block copy, and how many lanes does a warp have?")
    return wrong(f"count runs of 4 floats in A's {c.BM} x {c.BK} tile, share them among the {c.threads()} threads "
                 f"({warps} warps of {WARP_SIZE} lanes), then count warp instructions: one per run with 16-byte loads, "
                 f"one per float without.")


EX07_2_SIZE = (1000, 1002, 1024)   # M, N, K: which matrices take the 16-byte path?
_MATRICES = ("A", "B", "C")


def _matrix_set(answer):
    """A set of matrix names from 'A', 'A, C', ['A', 'C'], {'a'}, '' or 'none'; or Feedback."""
    if answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("?", "...")):
        return unanswered("replace the placeholder with the matrices read with 16-byte loads, e.g. {'A'} or "
                          "'A, C'; set() or 'none' if none of them.")
    if isinstance(answer, str):
        text = answer.strip().upper()
        items = [] if text in ("", "NONE") else [t for t in text.replace(",", " ").split() if t]
        if len(items) == 1 and len(items[0]) > 1 and set(items[0]) <= set(_MATRICES):
            items = list(items[0])   # "AC"
    elif isinstance(answer, (set, frozenset, list, tuple)):
        if not all(isinstance(a, str) for a in answer):
            return wrong(f"name the matrices with strings 'A', 'B', 'C'; got {answer!r}.")
        items = [a.strip().upper() for a in answer]
    else:
        return wrong(f"give the matrices as a set of names like {{'A', 'C'}} or a string like 'A, C'; got {answer!r}.")
    unknown = sorted(set(items) - set(_MATRICES))
    if unknown:
        return wrong(f"{', '.join(unknown)} is not one of the kernel's matrices; they are A, B and C.")
    return set(items)


def ex07_2_wide_matrices() -> set:
    """The matrices 07_vectorized reads with 16-byte loads at EX07_2_SIZE, traced on a small problem
    with the same K % 4 and N % 4 (what decides the alignment of every row), beta != 0."""
    M, N, K = EX07_2_SIZE
    c = stages.variant("07_vectorized").default
    small = (c.BM, c.BN + N % 4, c.BK + K % 4)
    return {a for a, (_, width) in _stage07_global_loads(*small).items() if width == 16}


def check_07_exercise_2(answer) -> Feedback:
    """Which of A, B, C 07_vectorized reads with 16-byte loads for M x N x K = EX07_2_SIZE."""
    got = _matrix_set(answer)
    if isinstance(got, Feedback):
        return got
    M, N, K = EX07_2_SIZE
    want = ex07_2_wide_matrices()
    show = lambda s: "{" + ", ".join(repr(x) for x in sorted(s)) + "}" if s else "none"   # noqa: E731
    rows = {"A": ("K", K), "B": ("N", N), "C": ("N", N)}
    why = "; ".join(f"{a}: rows of {d} = {n} floats, {4 * n} bytes, {'a' if n % 4 == 0 else 'not a'} multiple of 16"
                    for a, (d, n) in rows.items())
    if got == want:
        return right(f"{show(want)}. A run of 4 floats starting at column c (a multiple of 4) of row r lies at byte "
                     f"4(r x row length + c) from the start: 16-byte aligned in every row only when the row length is "
                     f"a multiple of 4. {why}. M plays no part. The others are read 4 bytes at a time, still correct.")
    if ({"B", "C"} & got) and not {"B", "C"} <= got:
        return wrong("B and C both have rows of N floats, so their rows start on the same grid: they take the same "
                     "path, both or neither.")
    if got == {"B", "C"} and want == {"A"} or got == {"A"} and want == {"B", "C"}:
        return wrong("swapped: A is M x K, so its rows are K floats long; B (K x N) and C (M x N) have rows of N.")
    if got == set(_MATRICES):
        odd = [(d, n) for d, n in (("K", K), ("N", N)) if n % 4]
        return wrong("; ".join(f"{d} = {n} is not a multiple of 4 (even is not enough): in a matrix with rows of {n} "
                               f"floats, row 1 starts {4 * n} bytes in, {4 * n % 16} bytes past a 16-byte boundary"
                               for d, n in odd) + ".")
    if not got:
        return wrong(f"the kernel checks each matrix on its own: {why}.")
    return wrong(f"the rule is per matrix: A's rows are K floats long, B's and C's N floats; a row of n floats keeps "
                 f"every run of 4 on the 16-byte grid when n % 4 == 0. Here M = {M}, N = {N}, K = {K}.")


EX07_3_CONFIG = dict(BM=128, BN=128, BK=16, TM=8, TN=16)   # 8 threads per row of the block


def ex07_3_wavefronts() -> tuple[int, int, int, int]:
    """(wavefronts in 06's layout, in 07's, ways in 06's, ways in 07's) of warp 0's first load of
    Bs as one 16-byte load per lane; 06_transposed_a's scalar b[0] request is counted as the
    16-byte load b[0..3] the compiler may merge it into."""
    out = []
    for name in ("06_transposed_a", "07_vectorized"):
        v = stages.variant(name)
        tr = accesses.kernel_trace(v, v.config(**EX07_3_CONFIG), accesses.TRACE_SIZE * 2)
        req = next(q for q in accesses.shared_requests(tr) if q.array == "Bs")
        out.append(memory.banks(dataclasses.replace(req, size=16)))
    return out[0].wavefronts, out[1].wavefronts, out[0].ways, out[1].ways


def check_07_exercise_3(answer) -> Feedback:
    """(06's layout, 07's layout): wavefronts of warp 0's first 16-byte load of Bs with
    BM = BN = 128, BK = 16, TM = 8, TN = 16."""
    pair = parse_whole_pair(answer, "(wavefronts in 06_transposed_a's layout, wavefronts in 07_vectorized's layout)")
    if isinstance(pair, Feedback):
        return pair
    c = EX07_3_CONFIG
    w06, w07, ways06, ways07 = ex07_3_wavefronts()
    per_row = c["BN"] // c["TN"]
    quarters = WARP_SIZE // 8
    if pair == (w06, w07):
        return right(f"a 16-byte request is served a quarter warp (8 lanes, 128 bytes) at a time: at best {quarters} "
                     f"wavefronts. In 06's layout lane i of a quarter starts at word {c['TN']} x i (TN = {c['TN']} "
                     f"contiguous columns each), so 8 lanes x 4 words fall in {32 // c['TN'] * 4} banks, "
                     f"{ways06} words in each: {ways06}-way, {w06} wavefronts. In 07's they start at word 4 x i: "
                     f"32 consecutive words, every bank once, {w07} wavefronts.")
    if pair == (w07, w06):
        return wrong("the two numbers are swapped: the first is 06_transposed_a's layout (TN contiguous columns per "
                     "thread).")
    if pair == (ways06, ways07):
        return wrong(f"{ways06} and {ways07} are the ways of the worst conflict in a quarter warp. Wavefronts count "
                     f"all passes of the request: {quarters} quarter warps, each taking as many passes as its worst "
                     f"bank.")
    if min(pair) < quarters:
        return wrong(f"a 16-byte request is served 8 lanes at a time (8 x 16 = 128 bytes, the 32 banks once), so "
                     f"a warp's request takes at least {quarters} wavefronts.")
    if pair[1] != w07:
        return wrong(f"in 07's layout the {per_row} threads of a row take consecutive runs of 4 columns in each band: "
                     f"the 8 lanes of a quarter read 32 consecutive words. Which banks are they in?")
    return wrong(f"07's count is right. In 06's layout lane i (threadCol = i % {per_row}) reads words "
                 f"{c['TN']} i .. {c['TN']} i + 3: bank = word mod 32. How many different words land in one bank "
                 f"within a quarter warp, and how many quarters are there?")


# ---- the prediction before section 5 measures: how much 07 gained over 06 with the same tiles -----------------------
PRED07_CHOICES = {"a": "less than 5 % faster", "b": "5 to 20 % faster", "c": "20 to 40 % faster",
                  "d": "more than 40 % faster"}
PRED07_BANDS = {"a": (-100.0, 5.0), "b": (5.0, 20.0), "c": (20.0, 40.0), "d": (40.0, float("inf"))}


def _pred07_measured() -> dict:
    """07's and 06's TFLOP/s with the same 8 x 8 tiles and the gain, from the committed experiment."""
    tiles = "BM128,BN128,BK8,TM8,TN8"
    return {"07": facts.value(f"run_06_07_tflops/07_vectorized/{tiles}"),
            "06": facts.value(f"run_06_07_tflops/06_transposed_a/{tiles}"),
            "gain": facts.value(f"run_06_07_gain_pct/07_vectorized/06_transposed_a/{tiles}"),
            "cublas": facts.value("run_06_07_tflops/cublas")}


def _pred07_answer() -> str:
    gain = _pred07_measured()["gain"]
    return next(k for k, (lo, hi) in PRED07_BANDS.items() if lo <= gain < hi)


def check_07_prediction(answer) -> Feedback:
    """Before section 5 measures it: how much faster than 06_transposed_a did 07_vectorized run with the same tiles
    (128 x 128 x 8, 8 x 8 per thread) at 4096^3 on an H200? A letter of PRED07_CHOICES, from the band of the gain in
    results/stages_06_09_h200_2026-11-22/exp_06_07.json."""
    got = parse_choice(answer, PRED07_CHOICES, "how much faster 07 ran than 06 with the same tiles")
    if isinstance(got, Feedback):
        return got
    want = _pred07_answer()
    m = _pred07_measured()
    if got == want:
        return right(f"{want}, {PRED07_CHOICES[want]}: with the same tiles 07_vectorized ran at {m['07']:.1f} TFLOP/s "
                     f"and 06_transposed_a at {m['06']:.1f}, {m['gain']:.0f} % faster (NVIDIA H200, 4096³, the "
                     f"median of three interleaved runs, cuBLAS {m['cublas']:.1f} in the same run: "
                     f"results/stages_06_09_h200_2026-11-22/exp_06_07.json, with 07 as it was then, before its As "
                     f"rows were padded; section 5 times the kernels as committed again, in a later run). The bytes "
                     f"did not change; a quarter of the load instructions, no 2-way conflict on Bs, and C's requests "
                     f"filling their sectors did.")
    if got < want:
        return wrong("the bytes are the same, so it is tempting to expect little. But an SM spends its time issuing "
                     "instructions: count them per step k of the inner loop in 06 and in 07 (section 4's table: a "
                     "quarter of the loads), beside the 64 FFMA of an 8 × 8 thread tile, and recall that 06's loads of "
                     "Bs took two wavefronts (section 2). What share of the loop were the loads?")
    return wrong("that is more than removing load instructions can buy. The FFMA stay the same, 64 per step: the "
                 "gain is bounded by the share of the time the loads and their conflicts took in 06. Count what "
                 "section 4 says changed, and what did not.")


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where check_07_prediction's answer would be on the screen: the measured TFLOP/s of 07 or 06 with the same
    tiles, or the gain, as the notebook prints them."""
    m = _pred07_measured()
    return [(f"{name}'s TFLOP/s with the same tiles", rf"(?<![\d.]){m[name]:.1f}\s*TFLOP/s") for name in ("07", "06")] + [
        ("the gain in %", rf"(?<![\d.]){m['gain']:.0f}\s*%\s*faster"),
        ("a marked fact of the run about 07", r"<!--\s*fact:\s*(?:ratio/)?run_06_07_\w+/07_vectorized/")]

"""Stage 06's exercises (bank conflicts): which paddings leave a load of the A tile conflict-free,
and the conflict of the store into the transposed tile, both traced from the kernel files."""

from __future__ import annotations

from helpers.core import stages
from helpers.course.exercises.feedback import (Feedback, is_placeholder_set, number, parse_choice,
                                               parse_pair, printed, right, unanswered, wrong)
from helpers.course.exercises.traces import first_shared_load
from helpers.measure import accesses, facts

EX06_1_CONFIG = dict(BM=128, BN=128, BK=8, TM=8, TN=8)   # warp 0 holds two thread rows: rows 0 and TM of As
EX06_1_PADS = (1, 2, 3, 4, 8)


def _first_shared_store(variant_name: str, fields: dict, array: str, M: int = accesses.TRACE_SIZE):
    v = stages.variant(variant_name)
    tr = accesses.kernel_trace(v, v.config(**fields), M)
    req = next(q for q in accesses.shared_requests(tr, op="store") if q.array == array)
    return accesses.bank_view(tr, req)


def _pads(answer):
    """A set of whole numbers from the learner's answer, or Feedback saying what is wrong with it."""
    if is_placeholder_set(answer):
        return unanswered(f"replace the placeholder with the values of PAD that work, as a set like {{1, 8}}; "
                          f"choose from {', '.join(map(str, EX06_1_PADS))}.")
    items = [answer] if isinstance(answer, (int, float)) and not isinstance(answer, bool) else answer
    try:
        values = [number(a) for a in items]
    except (TypeError, ValueError):
        return wrong(f"give the values of PAD as a set of whole numbers, like {{1, 8}}; got {answer!r}.")
    if any(isinstance(a, bool) for a in items) or any(not v.is_integer() for v in values):
        return wrong(f"PAD is a whole number of floats; give a set of whole numbers, like {{1, 8}}; got {answer!r}.")
    return {int(v) for v in values}


def _ex06_1_pads() -> set[int]:
    """The paddings that leave warp 0's load conflict-free."""
    return {p for p in EX06_1_PADS
            if first_shared_load("06_padded", dict(EX06_1_CONFIG, PAD=p), "As").report.ways == 1}


def check_06_exercise_1(answer) -> Feedback:
    """Which of PAD = 1, 2, 3, 4, 8 leave warp 0's first load of As[threadRow * TM + i][k] in
    06_padded (BM = BN = 128, BK = 8, TM = TN = 8) conflict-free, as the source writes it?"""
    pads = _pads(answer)
    if isinstance(pads, Feedback):
        return pads
    c = EX06_1_CONFIG
    views = {p: first_shared_load("06_padded", dict(c, PAD=p), "As") for p in EX06_1_PADS}
    apart = {p: max(int(w) for w in v.words) - min(int(w) for w in v.words)    # words between the thread rows
             for p, v in views.items()}
    want = {p for p, v in views.items() if v.report.ways == 1}
    bad = sorted(set(EX06_1_PADS) - want)
    others = sorted(pads - set(EX06_1_PADS))
    if others:
        return wrong(f"choose among PAD = {', '.join(map(str, EX06_1_PADS))}; "
                     f"{', '.join(map(str, others))} {'is' if len(others) == 1 else 'are'} not among them.")
    if pads == want:
        return right(f"warp 0 holds two thread rows (BN / TN = {c['BN'] // c['TN']} threads per row), which read rows "
                     f"0 and TM = {c['TM']} of As. With rows BK + PAD floats long those are TM x (BK + PAD) words "
                     f"apart: " + ", ".join(f"PAD = {p}: {apart[p]} (bank {apart[p] % 32})" for p in EX06_1_PADS)
                     + f". Only a distance that is a multiple of 32 puts both words in one bank, so PAD = "
                     f"{', '.join(map(str, sorted(want)))} work{'s' if len(want) == 1 else ''} and "
                     f"{', '.join(map(str, bad))} do{'es' if len(bad) == 1 else ''} not. The row length need not be "
                     f"odd. Which of the good ones keeps every row 8 bytes aligned, so that the compiler can still "
                     f"read As[row][k] and As[row][k + 1] with one 8-byte load? Exercise 3 times it.")
    for p in bad:
        if p in pads:
            return wrong(f"PAD = {p} makes rows of {c['BK'] + p} floats, so the two thread rows of warp 0 read words "
                         f"{c['TM']} x {c['BK'] + p} = {apart[p]} apart: {apart[p]} is {apart[p] // 32} x 32, the same "
                         f"bank. " + ("PAD = 4 is the popular choice (rows stay 16 bytes aligned), and here it "
                                      "fixes nothing." if p == 4 else
                                      f"With TM = {c['TM']}, any row length that is a multiple of "
                                      f"{next(n for n in range(1, 33) if c['TM'] * n % 32 == 0)} floats does that."))
    missing = sorted(want - pads)
    if missing:
        return wrong(f"{' and '.join(f'PAD = {p}' for p in missing)} work{'s' if len(missing) == 1 else ''} too: "
                     + "; ".join(f"with PAD = {p} the thread rows are {c['TM']} x {c['BK'] + p} = {apart[p]} words "
                                 f"apart, bank {apart[p] % 32} against bank 0" for p in missing)
                     + ". Any distance that is not a multiple of 32 separates the banks; an odd row length is "
                       "one way, not the only one.")
    return wrong("not yet. Warp 0 reads rows 0 and TM of As at one step; with rows of BK + PAD floats they are "
                 "TM x (BK + PAD) words apart. Bank = word mod 32: which of the choices make that distance a "
                 "multiple of 32?")


# 06_transposed_a, 128 x 128 block tile, 8 x 8 thread tiles. Not BK = 8 and 16: section 4 of the notebook
# prints the conflicts of those above the exercise.
EX06_2_FIELDS = ({"BK": 4}, {"BK": 32})


def _ex06_2_views() -> list:
    return [_first_shared_store("06_transposed_a", f, "As") for f in EX06_2_FIELDS]


def check_06_exercise_2(answer) -> Feedback:
    """(ways for the first BK of EX06_2_FIELDS, ways for the second): the bank conflict of warp 0's
    first store into the transposed tile As[c][r] in 06_transposed_a, BM = BN = 128, TM = TN = 8."""
    (bk_a, bk_b) = (f["BK"] for f in EX06_2_FIELDS)
    pair = parse_pair(answer, f"(ways of the store for BK = {bk_a}, ways for BK = {bk_b})")
    if isinstance(pair, Feedback):
        return pair
    views = _ex06_2_views()
    want = tuple(v.report.ways for v in views)
    banks = tuple(v.banks_used for v in views)
    bm = stages.variant("06_transposed_a").default.BM

    def cover(bk: int, n_banks: int, ways: int) -> str:
        rows = f"r = 0..{32 // bk - 1}" if 32 // bk > 1 else "r = 0 in every lane"
        return f"{rows}, {n_banks} bank{'s' * (n_banks > 1)} of {ways} words{' each' * (n_banks > 1)} ({ways}-way)"

    if pair == want:
        return right(f"lane t copies element e = t of the tile: r = t / BK, c = t % BK, and writes As[c][r], word "
                     f"c x {bm} + r. {bm} is a multiple of 32, so the bank is r alone: with BK = {bk_a} the 32 lanes "
                     f"cover {cover(bk_a, banks[0], want[0])}; with BK = {bk_b}, {cover(bk_b, banks[1], want[1])}. "
                     f"The reads it buys are conflict-free; the copy pays for them once per tile.")
    if pair == want[::-1]:
        return wrong(f"the two numbers are swapped: the first is BK = {bk_a}.")
    if pair == (1, 1):
        return wrong(f"that is the copy of 05 (and 06_swizzled), where lane t writes word t of a row. Here it writes "
                     f"As[c][r]: neighbouring lanes move along c, {bm} floats apart.")
    if pair == banks:
        return wrong(f"{banks[0]} and {banks[1]} are the banks the 32 lanes use. The conflict is how many "
                     f"different words the busiest of them must serve: 32 lanes, all different words, spread over "
                     f"those banks.")
    if pair == (2, 2):
        return wrong("2-way is the copy into 06_padded's tile. Work out the words of the transposed store: "
                     f"As[c][r] is word c x {bm} + r, with r = t / BK and c = t % BK for lane t.")
    if 32 in pair and 32 not in want:
        return wrong(f"the 32 lanes are not all in one bank: the bank of As[c][r] is r ({bm} is a multiple of 32), "
                     f"and r = t / BK takes several values in a warp.")
    if pair[0] == pair[1]:
        return wrong(f"the two tiles do not give the same conflict: with BK = {bk_b} a warp's 32 elements cover "
                     f"fewer rows r of A's tile than with BK = {bk_a}. The bank of As[c][r] is r (since {bm} is a "
                     f"multiple of 32): how many values of r does each take?")
    return wrong(f"write out lane t: r = t / BK, c = t % BK, word c x {bm} + r, bank = word mod 32. Count, per bank, "
                 f"the different words the 32 lanes write.")

# ---- the prediction, before section 5 measures (issue 21): asked of the committed H200 run ----
PREDICTION_FILE = "results/stages_06_09_h200_2026-11-22/exp_06_07.json"
PREDICTION_TILE = "BM128,BN128,BK16,TM16,TN4"      # stage 05's default: 16 x 4 thread tiles
PREDICTION_KERNELS = {"a": "05_2d_thread_tiling", "b": "06_padded", "c": "06_transposed_a", "d": "06_swizzled"}
PREDICTION_CHOICES = {"a": "05_2d_thread_tiling, unchanged", "b": "06_padded", "c": "06_transposed_a",
                      "d": "06_swizzled"}


def _prediction_measured() -> dict:
    """Each kernel's median TFLOP/s of three runs at 4096³ with stage 05's default tile (facts.run_06_07_tflops;
    06_padded's padding is 1)."""
    return {k: facts.value(f"run_06_07_tflops/{v}/{PREDICTION_TILE}{',PAD1' if v == '06_padded' else ''}")
            for k, v in PREDICTION_KERNELS.items()}


def _prediction_answer() -> str:
    m = _prediction_measured()
    return max(m, key=m.get)


def prediction_on_screen() -> list[tuple[str, str]]:
    """Where the answer would show before its cell: the fastest kernel's measured rate, or prose saying who won."""
    m = _prediction_measured()
    forms = [("the fastest kernel's measured rate", printed(m[_prediction_answer()], "TFLOP/s")),
             ("a marked fact of the run", r"<!--\s*fact:\s*(?:ratio/)?run_06_07_")]
    if _prediction_answer() == "a":   # the outcome in words: no fix paid
        forms += [("prose: every fix costs time", r"(?i)every fix (?:costs?|made it slower|lost)"),
                  ("prose: stays the fastest", r"(?i)stays the fastest"),
                  ("prose: a fix only costs", r"(?i)\b(?:padding|transposing|swizzling|the fix(?:es)?|it) only costs?\b"),
                  ("prose: nothing for the fixes to do", r"(?i)(?:gives|leaves) the (?:three )?fixes nothing to do"),
                  ("prose: no fix was faster", r"(?i)\bno fix (?:was|ran|is|runs) faster")]
    return forms


def check_06_prediction(answer) -> Feedback:
    """A prediction before section 5 measures it: with stage 05's default tile (128 × 128 × 16, 16 × 4), which of
    stage 05 and its three fixes runs fastest at 4096³ on an H200? One letter of PREDICTION_CHOICES."""
    letter = parse_choice(answer, PREDICTION_CHOICES, "the fastest kernel with stage 05's default tile")
    if isinstance(letter, Feedback):
        return letter
    m, want = _prediction_measured(), _prediction_answer()
    if letter == want:
        said = ", ".join(f"{PREDICTION_CHOICES[k].split(',')[0]} {m[k]:.2f} ({100 * (m[k] / m['a'] - 1):+.1f} %)"
                         for k in PREDICTION_KERNELS if k != "a")
        return right(f"{PREDICTION_CHOICES[want].split(',')[0]}, {m[want]:.2f} TFLOP/s; {said} ({PREDICTION_FILE}: an "
                     "NVIDIA H200, 2026-11-22, medians of three runs at 4096³). Nsight Compute counted no bank "
                     "conflict in this tile on the H200: the compiler had merged the loads into wide ones. With no "
                     "conflict to win back, each fix only pays its own cost: more load instructions, or a conflict on "
                     "the copy.")
    return wrong("a fix can only win back the conflicts the GPU really has. Section 4 counts them both ways: in the "
                 "trace, as the source writes the loads, and with Nsight Compute on the H200, after the compiler "
                 "merged them. How many did the H200 count in stage 05's default 16 × 4? Then look at what each fix "
                 "adds: shared-load instructions per two steps (the SASS table), and conflicts on the copy.")

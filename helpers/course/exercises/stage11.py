"""Stage 11's exercises (autotuning and the final ladder): what a search space keeps and leaves out
(from helpers.measure.tuning_space), and which step of the committed ladder bought the most."""

from __future__ import annotations

import re

from helpers.course.exercises.feedback import (Feedback, is_placeholder, is_placeholder_set, parse_pair,
                                               parse_whole_pair, right, unanswered, wrong)
from helpers.measure import tuning_space
from helpers.run import dispatch
from helpers.views import dispatch_plots, ladder_report

EX11_1_VARIANT = "04_1d_thread_tiling"
EX11_1_RANGES = {"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (16,), "TM": (4, 8, 16, 32)}   # 36 combinations


def _ex11_1_space():
    return tuning_space.search_space(EX11_1_VARIANT, radius=None, ranges=EX11_1_RANGES)


def _ex11_1_counts() -> tuple[int, int]:
    space = _ex11_1_space()
    return len(space.configs), len(space.rejected)


def check_11_exercise_1(answer) -> Feedback:
    """(candidates, configurations left out) of the search of EX11_1_VARIANT over EX11_1_RANGES, whole space."""
    pair = parse_pair(answer, "(candidates, configurations left out)")
    if isinstance(pair, Feedback):
        return pair
    space = _ex11_1_space()
    total = len(space.configs) + len(space.rejected)
    by_rule = {rule: sum(r.rule == rule for r in space.rejected) for rule in ("kernel rule", "threads", "fits on an SM")}
    want = (len(space.configs), len(space.rejected))
    if pair == want:
        return right(f"{want[0]} of the {total}: " + ", ".join(f"{n} left out by {rule}" for rule, n in by_rule.items()
                                                              if n) + ". The kernel's rules drop blocks of more than "
                     "1024 threads and tiles the threads cannot copy in whole passes; the search drops a block "
                     "of 32 threads, too few warps to hide anything.")
    if sum(pair) != total:
        return wrong(f"the ranges hold 3 x 3 x 1 x 4 = {total} combinations, and each is either a candidate or left "
                     f"out: your two numbers add up to {sum(pair)}.")
    if pair == (want[0] + by_rule["threads"], want[1] - by_rule["threads"]):
        return wrong("the kernel's rules are right. The search adds its own: 64 to 1024 threads per block. Which "
                     "combination has BM x BN / TM below 64?")
    if pair[0] > want[0]:
        return wrong("too many candidates. Threads = BM x BN / TM: at most 1024, and the BM x BK and BK x BN tiles "
                     "must each be a whole number of passes of the threads. Check the combinations with TM = 4.")
    return wrong("too few candidates: a combination is left out only when it breaks a rule. Threads = BM x BN / TM "
                 "(64 to 1024); BM x 16 and 16 x BN multiples of the threads; a thread's TM + 1 accumulators and "
                 "values fit in its registers easily here.")


EX11_2_VARIANT = "08_warp_tiling"
EX11_2_CONFIGS = {   # 08_warp_tiling configurations; which are candidates of a search that reaches them?
    "a": dict(BM=64, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8),
    "b": dict(BM=128, BN=128, BK=16, WM=64, WN=64, TM=8, TN=8),
    "c": dict(BM=256, BN=256, BK=16, WM=32, WN=64, TM=8, TN=8),
    "d": dict(BM=128, BN=128, BK=32, WM=32, WN=64, TM=8, TN=8),
    "e": dict(BM=32, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8),
    "f": dict(BM=128, BN=128, BK=64, WM=32, WN=64, TM=8, TN=8),
}


def _ex11_2_rules() -> dict:
    """letter -> (rule, reason) or None for a candidate."""
    return {k: tuning_space.left_out_by(EX11_2_VARIANT, **fields) for k, fields in EX11_2_CONFIGS.items()}


def _candidates(rules: dict) -> set[str]:
    return {k for k, rule in rules.items() if rule is None}


def check_11_exercise_2(answer) -> Feedback:
    """The set of letters of EX11_2_CONFIGS that are candidates (no rule leaves them out)."""
    letters = sorted(EX11_2_CONFIGS)
    if is_placeholder_set(answer):
        return unanswered(f"replace the placeholder with the letters of the candidates, as a set like {{'a', 'b'}}; "
                          f"choose from {', '.join(letters)}.")
    items = [answer] if isinstance(answer, str) else answer
    try:
        got = {str(a).strip().lower() for a in items}
    except TypeError:
        return wrong(f"give a set of letters, like {{'a', 'b'}}; got {answer!r}.")
    if len(got) == 1 and len(next(iter(got))) > 1 and set(next(iter(got))) <= set(letters):
        got = set(next(iter(got)))   # "ad" for {"a", "d"}
    unknown = sorted(got - set(letters))
    if unknown:
        return wrong(f"choose among {', '.join(letters)}; {', '.join(map(repr, unknown))} "
                     f"{'is' if len(unknown) == 1 else 'are'} not among them.")
    rules = _ex11_2_rules()
    want = _candidates(rules)
    if got == want:
        return right(f"{', '.join(sorted(want))}. The others: " + "; ".join(
            f"{k}: {rules[k][0]}, {rules[k][1].rstrip('.')}" for k in letters if rules[k]) + ".")
    wrongly_in = sorted(got - want)
    if wrongly_in:
        k = wrongly_in[0]
        rule = rules[k][0]
        hint = {"kernel rule": "the kernel refuses it: check how many lanes its warp tile needs "
                               "((WM/TM) x (WN/TN) must be 32) and its shared memory ((BM + 4 + BN) x BK x 4 bytes, "
                               "at most 48 KiB)",
                "threads": "count its threads: (BM/WM) x (BN/WN) warps of 32; the search keeps 64 to 1024",
                "fits on an SM": "count its registers: at least TM x TN + TM + TN per thread, for every thread of "
                                 "the block; an SM has 65536"}[rule]
        return wrong(f"{k} is left out: {hint}.")
    missing = sorted(want - got)
    return wrong(f"{missing[0]} breaks no rule: its warp tile has (WM/TM) x (WN/TN) = 32 lanes, its block between "
                 f"64 and 1024 threads, its tiles fit in 48 KiB and its registers in an SM.")


def _ex11_3_steps():
    return ladder_report.steps(ladder_report.load_ladder())


def _ex11_3_best(steps: list[dict]) -> dict:
    """The step that bought the most: the largest 'x previous stage'."""
    return max((s for s in steps if s["speedup"] is not None), key=lambda s: s["speedup"])


def _stage_id(answer) -> str | None:
    if isinstance(answer, int) and not isinstance(answer, bool):
        return f"{answer:02d}"
    m = re.match(r"\s*(\d{1,2})(?!\d)", str(answer))
    return f"{int(m.group(1)):02d}" if m else None


def check_11_exercise_3(answer) -> Feedback:
    """The stage whose step bought the most (the largest x previous stage in steps() of the newest
    committed ladder): its two-digit id, or a kernel name of it."""
    if is_placeholder(answer):
        return unanswered("replace the placeholder with the stage's two-digit id, like '05'.")
    sid = _stage_id(answer)
    if sid is None:
        return wrong(f"answer with a stage id, like '05' (or a kernel name that starts with one); got {answer!r}.")
    steps = _ex11_3_steps()
    by_id = {s["variant"][:2]: s for s in steps}
    best = _ex11_3_best(steps)
    if sid == best["variant"][:2]:
        tf32 = (" It also changes the precision: the tensor cores multiply in TF32, a step of its own kind."
                if best["precision"] != "fp32" else "")
        return right(f"{best['stage']}: {best['speedup']:.2f}x over {best['previous']} ({best['tflops']:.2f} TFLOP/s)."
                     + tf32)
    if sid not in by_id:
        return wrong(f"stage {sid} has no timed kernel in the ladder; the table's stages are "
                     f"{', '.join(by_id)}.")
    s = by_id[sid]
    if s["speedup"] is None:
        return wrong(f"stage {sid} is the first row: it has no previous stage to be compared with.")
    fastest = max(steps, key=lambda x: x["tflops"])
    if s is fastest:
        return wrong(f"stage {sid} is the fastest, but its own step bought {s['speedup']:.2f}x: the question asks for "
                     "the largest 'x previous stage'.")
    return wrong(f"stage {sid}'s step bought {s['speedup']:.2f}x. Read the column 'x previous stage' of the steps "
                 "table: which is largest?")


EX11_5_GPU = "NVIDIA H200"   # the prediction is about the GPU of the committed table


def _ex11_5_answer() -> tuple[int, int]:
    """(blocks of 1000^3 with 128 x 128 tiles, whole waves 4097^3 needs beyond 4096^3's) on the H200."""
    machine = dispatch.table_for(EX11_5_GPU).machine
    w1000 = dispatch_plots.waves(1000, 1000, 1000, "128x128", 1, machine)
    w4096, w4097 = (dispatch_plots.waves(n, n, n, "128x128", 1, machine) for n in (4096, 4097))
    return w1000["blocks"], w4097["whole waves"] - w4096["whole waves"]


def check_11_exercise_5(answer) -> Feedback:
    """A prediction before section 6 measures it: (blocks 1000^3 launches with 128 x 128 tiles, how many more
    whole waves 4097^3 takes than 4096^3) on an H200: 132 SMs, two such blocks each."""
    pair = parse_whole_pair(answer, "(blocks at 1000³, more waves at 4097³)")
    if isinstance(pair, Feedback):
        return pair
    blocks, extra = _ex11_5_answer()
    if pair == (blocks, extra):
        return right(f"{blocks} blocks: ⌈1000/128⌉² = 8 × 8. They fill {blocks} of the 264 slots, "
                     f"{100 * blocks / 264:.0f} % of one wave, so most of the GPU idles. 4096³ has 32 × 32 = 1,024 blocks, "
                     f"3.9 waves, so 4 counted whole; 4097³ has 33 × 33 = 1,089, 4.1 waves, so 5: {extra} more, "
                     f"for 0.07 % more work.")
    if pair[0] != blocks:
        return wrong("count the tiles: a block computes a 128 × 128 tile of C, so ⌈1000 / 128⌉ tiles along each side "
                     "of the 1000 × 1000 result. (K does not change the number of blocks.)")
    return wrong("waves = blocks / (132 SMs × 2 blocks each), rounded up. 4096 / 128 = 32 tiles a side; 4097 needs "
                 "one more tile in each direction. Count both, divide by 264, round up, subtract.")

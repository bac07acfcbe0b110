"""Stage 01's exercises (CPU loop blocking): the checkers compute each answer from the course's
own numbers and this machine's caches, never from text written in the notebook."""

from __future__ import annotations

from helpers.core.arch import FLOAT_BYTES
from helpers.course import cpu_gemm      # cache_sizes through the module: tests replace it
from helpers.course.cpu_gemm import VECTOR_REGISTERS, kib
from helpers.course.exercises.feedback import Feedback, number, right, unanswered, wrong


_PLACEHOLDER = "replace the placeholder with a number."


def _problem(problem: str):
    """Feedback for an answer that is not a number: the placeholder (not attempted yet) or else."""
    return unanswered(problem) if problem == _PLACEHOLDER else wrong(problem)


def _number(answer):
    if answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("", "?", "...")):
        return None, _PLACEHOLDER
    try:
        return number(answer), None
    except ValueError as e:
        return None, f"give a number; got {answer!r} ({e})."


EX1_MR, EX1_NR = 4, 64


def _ex1_intensity() -> float:
    return 2 * EX1_MR * EX1_NR / ((EX1_MR + EX1_NR) * FLOAT_BYTES)


def check_01_exercise_1(answer) -> Feedback:
    """FLOP per byte of the register-blocked inner loop with MR = 4, NR = 64 (float32)."""
    x, problem = _number(answer)
    if problem:
        return _problem(problem)
    mr, nr = EX1_MR, EX1_NR
    want = _ex1_intensity()
    if abs(x - want) <= 0.02 * want:
        return right(f"each k step loads MR + NR = {mr + nr} floats ({(mr + nr) * 4} bytes) and does "
                     f"MR x NR = {mr * nr} FMAs ({2 * mr * nr} FLOP): {want:.2f} FLOP/byte. The naive "
                     f"loop manages 0.25, so every byte brought to the core now feeds {want / 0.25:.1f} "
                     f"times as much arithmetic.")
    mistakes = {mr * nr / (mr + nr): "that is FMAs per float. An FMA is 2 FLOP and a float is 4 bytes.",
             2 * mr * nr / (mr + nr): "that is FLOP per float; a float is 4 bytes.",
             mr * nr / ((mr + nr) * FLOAT_BYTES): "that counts an FMA as one FLOP; it is two (a multiply and an add).",
             2 * mr * nr / (nr * FLOAT_BYTES): "you counted only the loads of B; the MR floats of A are loaded too.",
             2 * mr * nr / (mr * FLOAT_BYTES): "you counted only the loads of A; the NR floats of B are loaded too.",
             2 / (2 * FLOAT_BYTES): "that is the naive loop's intensity. In the register block, how many FMAs use "
                                    "each float loaded?",
             (mr + nr) * FLOAT_BYTES / (2 * mr * nr): "that is bytes per FLOP, the inverse."}
    for value, message in mistakes.items():
        if abs(x - value) <= 0.02 * abs(value):
            return wrong(message)
    return wrong(f"{x:g} is not it. Per step of k, count the floats loaded (a column piece of A, a row "
                 f"piece of B) and the FMAs done on them (the whole {mr} x {nr} block).")


EX2_NR = 64


def _ex2_largest_mr() -> int:
    per_row = EX2_NR // 16      # 16 floats per 512-bit register
    return (VECTOR_REGISTERS - per_row - 1) // per_row


def check_01_exercise_2(answer) -> Feedback:
    """The largest MR whose micro-kernel (NR = 64, 16 floats per register) fits in 32 registers."""
    x, problem = _number(answer)
    if problem:
        return _problem(problem)
    per_row = EX2_NR // 16
    want = _ex2_largest_mr()
    if x == want:
        return right(f"{want} rows x {per_row} registers = {want * per_row} accumulators, plus {per_row} "
                     f"for the row of B and 1 for the broadcast of A: {want * per_row + per_row + 1} of "
                     f"{VECTOR_REGISTERS}. Now try MR = {want} in the panel and look at 'on the stack': "
                     f"whether the compiler keeps the block in registers is another matter.")
    if x != int(x) or x < 1:
        return wrong("MR counts rows of C: a whole number, at least 1.")
    need = int(x) * per_row + per_row + 1
    if x == VECTOR_REGISTERS // per_row:
        return wrong(f"{int(x)} x {per_row} = {int(x) * per_row} registers for the accumulators alone; "
                     f"the row of B ({per_row} registers) and the broadcast of A (1) need room too.")
    if need > VECTOR_REGISTERS:
        return wrong(f"MR = {int(x)} needs {int(x)} x {per_row} + {per_row} + 1 = {need} registers; "
                     f"there are {VECTOR_REGISTERS}.")
    return wrong(f"MR = {int(x)} fits ({need} registers) but leaves {VECTOR_REGISTERS - need} unused; "
                 f"a larger block raises the intensity. What is the largest MR that still fits?")


EX3_NR = 64


def _ex3_l1() -> tuple[int, str]:
    """(this machine's L1 data cache in bytes, a note when it is assumed)."""
    caches = cpu_gemm.cache_sizes()
    assumed = "" if "L1" in caches else " (this machine does not report its L1, so 32 KiB is assumed)"
    return caches.get("L1", 32 * 1024), assumed


def _ex3_largest_kc() -> int:
    return (_ex3_l1()[0] // 2) // (EX3_NR * FLOAT_BYTES) // 16 * 16


def check_01_exercise_3(answer) -> Feedback:
    """The largest KC (a multiple of 16) for which the KC x NR micro-panel of B (NR = 64) takes at
    most half of this machine's L1 data cache."""
    x, problem = _number(answer)
    if problem:
        return _problem(problem)
    l1, assumed = _ex3_l1()
    want = _ex3_largest_kc()
    if x != int(x) or x < 1:
        return wrong("KC counts rows of B: a whole number.")
    k = int(x)
    if k == want:
        return right(f"{k} x {EX3_NR} floats x 4 bytes = {kib(k * EX3_NR * 4)}, at most half of the "
                     f"{kib(l1)} L1{assumed}. Time KC = {k} against the default in the panel: the "
                     f"measured difference is the real answer to 'does it have to fit?'.")
    if k % 16:
        return wrong(f"{k} is not a multiple of 16.")
    if k * EX3_NR <= l1 // 2 and k * EX3_NR * FLOAT_BYTES > l1 // 2:
        return wrong(f"KC x NR = {k * EX3_NR} counts floats; in bytes it is {k * EX3_NR * 4}, more than "
                     f"half of {l1} bytes.")
    if k * EX3_NR * FLOAT_BYTES > l1 // 2:
        return wrong(f"{k} x {EX3_NR} x 4 bytes = {kib(k * EX3_NR * 4)}: more than half of the "
                     f"{kib(l1)} L1{assumed}.")
    return wrong(f"{k} fits ({kib(k * EX3_NR * 4)}), but a larger multiple of 16 does too. Look up "
                 f"the L1 size with cache_sizes().")

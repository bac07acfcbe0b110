"""What every checker returns, and the reading of answers that several stages share.

A checker takes the learner's answer and returns Feedback: right, or what is wrong with this
particular answer. Checkers never raise, so an exercise cell always runs: an answer that cannot be
read comes back as Feedback saying so (the parse_* helpers return it in place of the value).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Feedback:
    ok: bool
    message: str
    attempted: bool = True      # False: the answer is still the notebook's placeholder

    @property
    def status(self) -> str:
        """'right', 'wrong' or 'not attempted' (what the teacher's grader reports)."""
        return "right" if self.ok else "wrong" if self.attempted else "not attempted"

    def __str__(self) -> str:
        return f"{'Correct' if self.ok else 'Not yet'}: {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return self.ok


def right(message: str) -> Feedback:
    return Feedback(True, message)


def wrong(message: str) -> Feedback:
    return Feedback(False, message)


AGAIN = " Then run the cell again: the checker says whether it is right, or what is wrong with it."


def unanswered(message: str) -> Feedback:
    """The answer is still the placeholder: say what to put there, and what happens next."""
    return Feedback(False, message + AGAIN, attempted=False)


def is_placeholder(answer) -> bool:
    if isinstance(answer, (tuple, list)):
        return any(is_placeholder(a) for a in answer)
    return answer is None or answer is Ellipsis or (isinstance(answer, str) and answer.strip() in ("", "?", "..."))


def is_placeholder_set(answer) -> bool:
    """The placeholder, or a set that still holds one ({'?'}): the set answers of stages 06 and 11."""
    return is_placeholder(answer) or (isinstance(answer, (set, frozenset)) and any(is_placeholder(a) for a in answer))


def number(value) -> float:
    """A finite number from one value of an answer (an int, a float, a NumPy scalar, a numeric string);
    ValueError saying why not (infinite, NaN, too large for a float, not a number). Never OverflowError."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{value!r} is not a number")
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except OverflowError:
        raise ValueError(f"{value!r} is too large") from None
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{value!r} is not a finite number")
    return x


def whole(value) -> int:
    """A whole number from one value of an answer: an int, or a float (or numeric string) with nothing after
    the point; ValueError saying why not (a fraction: 5.9 is not 5, infinite, not a number)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, int):
        return value
    try:
        return int(value.strip()) if isinstance(value, str) else operator.index(value)   # "5", NumPy integers
    except (TypeError, ValueError):
        pass
    x = number(value)
    if not x.is_integer():
        raise ValueError(f"{value!r} is not a whole number")
    return int(x)


def parse_pair(answer, what: str):
    """(int, int) from the learner's answer, or Feedback saying what is wrong with it (a fraction is wrong:
    5.9 blocks is not 5)."""
    if is_placeholder(answer):
        return unanswered(f"replace the placeholders with two whole numbers: {what}.")
    try:
        pair = tuple(whole(v) for v in answer)
    except (TypeError, ValueError) as e:
        return wrong(f"give two whole numbers as a tuple, like (3, 4): {what}; got {answer!r}"
                     + (f" ({e})." if isinstance(e, ValueError) else "."))
    if len(pair) != 2:
        return wrong(f"give exactly two numbers, {what}; got {len(pair)}.")
    return pair


def parse_whole_pair(answer, what: str):
    """(int, int) from the learner's answer, refusing fractions; or Feedback saying what is wrong."""
    return parse_pair(answer, what)


def parse_whole(answer, unit: str):
    """A whole number from the learner's answer, or Feedback saying what is wrong with it."""
    if is_placeholder(answer):
        return unanswered(f"replace the placeholder with a whole number of {unit}.")
    try:
        return whole(answer)
    except (TypeError, ValueError):
        return wrong(f"answer with a whole number of {unit}, not {answer!r}.")


def parse_choice(answer, choices: dict[str, str], what: str):
    """One key of `choices` ({"a": "under 2 times", ...}) from the learner's answer ("b", "B", "(b)"), or Feedback
    saying what is wrong with it: the letter answers of the stages' predictions."""
    listed = "; ".join(f"'{k}' {v}" for k, v in choices.items())
    if is_placeholder(answer):
        return unanswered(f"replace the placeholder with one letter: {what} ({listed}).")
    letter = str(answer).strip().strip("()'\" ").lower() if isinstance(answer, str) else None
    if letter not in choices:
        return wrong(f"answer with one of the letters {', '.join(repr(k) for k in choices)}, as a string like "
                     f"\"{next(iter(choices))}\"; got {answer!r}.")
    return letter


def band_of(value: float, bands: dict[str, tuple[float, float]]) -> str:
    """The key of the band [low, high) that holds value: the right letter of a prediction asked as bands."""
    return next(k for k, (low, high) in bands.items() if low <= value < high)


def printed(value: float, unit: str) -> str:
    """A regex for a measured value as prose or a table prints it, rounded to one or two decimals, then its unit
    (for a stage module's prediction_on_screen)."""
    forms = sorted({f"{value:.1f}", f"{value:.2f}"}, key=len, reverse=True)
    return r"(?<![\d.])(?:" + "|".join(f"{f.split('.')[0]}\\.{f.split('.')[1]}" for f in forms) + r")\s*" + re.escape(unit)

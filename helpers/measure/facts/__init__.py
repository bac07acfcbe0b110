"""Numbers that notebooks state in prose, each computed from a committed results file: one module per notebook
(notebook_00 ... notebook_12, for those that state any), two for runs several notebooks cite (h200_runs,
stage_steps), and here the registry built from them. How markers work, and how to add a fact: docs/numbers.md.

A notebook's Markdown cannot run code, so a measured number in its prose is text. To keep that text true, each
such number carries a marker naming the fact it states, right after it:

    `06_transposed_a` gained 11%<!-- fact: autotune_gain_pct/06_transposed_a --> with a 128 x 256 block tile

A fact's name is its family (what is measured, in which run, in what unit) and the family's arguments, each after
a '/': kernels by their registered names, configurations as `BM128,BN128,BK16,TM16,TN4` (every field, in any
order). A ratio of two facts is `ratio/A:B`; a power of ten is written with its number:
`2.61 × 10⁻⁴<!-- fact: ... -->`.
tests/course/test_numbers_in_prose.py checks each marked number against its fact, rounded as written, and in the
notebooks of ENFORCED fails on an unmarked number with a unit or a decimal point (a computed number, band or target
says `<!-- not measured: why -->`).
"""

from __future__ import annotations

import inspect
import re

from helpers.measure.facts import (h200_runs, notebook_00, notebook_01, notebook_02, notebook_03, notebook_04,
                                   notebook_05, notebook_06, notebook_08, notebook_09, notebook_10, notebook_11,
                                   notebook_12, notebook_12_steps, stage_steps)
from helpers.measure.facts.common import Fact, fact
from helpers.measure.facts.h200_runs import H200_RUNS_07_09, h200_runs_07_09

__all__ = ["ENFORCED", "FACTS", "MARKER", "MODULES", "UNITS", "Fact", "H200_RUNS_07_09", "agrees", "h200_runs_07_09",
           "value"]

# the modules whose FACTS the registry holds, in notebook order
MODULES = (notebook_00, notebook_01, notebook_02, notebook_03, notebook_04, notebook_05, notebook_06, h200_runs,
           stage_steps, notebook_08, notebook_09, notebook_10, notebook_11, notebook_12,
           notebook_12_steps)
# the notebooks whose every measured number in prose carries a marker
ENFORCED = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")
UNITS = r"%|TFLOP/s|GFLOP/s|GB/s|times|×\s*10(?P<power>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)"
MARKER = re.compile(r"(?P<number>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>" + UNITS + r")?"
                    r"\s*<!--\s*fact:\s*(?P<name>[\w/.:,-]+)\s*-->")


def _registry() -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    for module in MODULES:
        for name, f in module.FACTS.items():
            if name in facts:
                raise ValueError(f"the fact {name!r} is registered twice: {module.__name__} and another module")
            facts[name] = f
    return facts


def _ratio(*parts: str) -> float:
    """'A:B' (the parts of the name after 'ratio/', rejoined): fact A over fact B."""
    a, _, b = "/".join(parts).partition(":")
    return value(a) / value(b)


FACTS: dict[str, Fact] = _registry()
FACTS["ratio"] = fact("the files of facts A and B", _ratio)


def value(name: str) -> float:
    """The number a fact's name stands for, computed now from its results file."""
    key, *args = name.split("/")
    if key not in FACTS:
        raise KeyError(f"no fact {key!r}: facts are {', '.join(FACTS)} (helpers/measure/facts/)")
    compute = FACTS[key].compute
    try:
        inspect.signature(compute).bind(*args)
    except TypeError:
        raise KeyError(f"{name!r}: {key} takes {inspect.signature(compute)} after its name, each after a '/' "
                       f"(its module: {compute.__module__})") from None
    return compute(*args)


def agrees(text: str, fact: float, power: str = "") -> bool:
    """Whether the number as written (e.g. '11', '236.9', '1,089'; with power '⁻⁴', '2.61' for 2.61 × 10⁻⁴) is the
    fact rounded to its decimals."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = 10.0 ** int(power.translate(SUPERSCRIPTS)) if power else 1.0
    return round(float(fact) / scale, decimals) == float(text.replace(",", ""))


SUPERSCRIPTS = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")

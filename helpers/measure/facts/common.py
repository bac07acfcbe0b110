"""What every notebook's facts module shares: the Fact a name stands for, and the reading of a kernel's
configuration out of a fact's name (`BM128,BN128,BK16,TM16,TN4`)."""

from __future__ import annotations

import dataclasses
import re
import statistics
from pathlib import Path
from typing import Callable, NamedTuple

from helpers.core import stages
from helpers.core.configs import KernelConfig
from helpers.core.paths import rel


class Fact(NamedTuple):
    """source: what it reads (a results file, or a description of several); compute: its arguments are the
    parts of the fact's name after the first, split at '/' (`tuning_run_tflops/04_1d_thread_tiling/BM64,...`)."""
    source: str
    compute: Callable[..., float]


def fact(source: Path | str, compute: Callable[..., float]) -> Fact:
    return Fact(rel(source) if isinstance(source, Path) else source, compute)


CONFIG_ITEM = re.compile(r"([A-Za-z_]+)(\d+)")


def config(variant: str, text: str) -> KernelConfig:
    """'BM128,BN128,BK16,TM16,TN4': the variant's configuration with those values. Every field of its
    configuration is named once, in any order, so that a name cannot silently mean another row."""
    v = stages.variant(variant)
    fields = [f.name for f in dataclasses.fields(v.config_type)]
    values: dict[str, int] = {}
    for item in text.split(","):
        m = CONFIG_ITEM.fullmatch(item)
        if not m or m[1] not in fields or m[1] in values:
            raise KeyError(f"{text!r}: {item!r} is not one of {variant}'s fields, each named once with its value "
                           f"({','.join(fields)}, e.g. {config_text(v.default)})")
        values[m[1]] = int(m[2])
    if len(values) != len(fields):
        raise KeyError(f"{text!r} leaves out {', '.join(f for f in fields if f not in values)} of {variant}: "
                       f"name every field ({config_text(v.default)})")
    return v.config_type(**values)


def config_text(c: KernelConfig) -> str:
    """The configuration as a fact's name writes it: 'BM128,BN128,BK16,TM16,TN4'."""
    return ",".join(f"{f.name}{getattr(c, f.name)}" for f in dataclasses.fields(c))


def median(values) -> float:
    return float(statistics.median(values))


def pick(how: str, values) -> float:
    """'min', 'max' or 'median' of the values."""
    return {"min": min, "max": max, "median": median}[how](list(values))

"""What every notebook's facts module shares: the Fact a name stands for, and the reading of a kernel's
configuration out of a fact's name (`BM128,BN128,BK16,TM16,TN4`)."""

from __future__ import annotations

import dataclasses
import re
import statistics
from pathlib import Path
from typing import Callable, NamedTuple

from helpers.core import results_files, stages
from helpers.core.configs import KernelConfig
from helpers.core.paths import rel


class Fact(NamedTuple):
    """source: what it reads (a results file, or a description of several); compute: its arguments are the
    parts of the fact's name after the first, split at '/' (`tuning_run_tflops/04_1d_thread_tiling/BM64,...`).
    row (for a fact that is one value of one row of its file): from the same arguments, how a table of that file
    shows the row, as alternatives, each a tuple of regexes that all match the row's line (the course's tables:
    a configuration's label, a kernel's name and size). tests/maintain/test_results_on_screen.py finds the row in
    every table of the file a notebook shows and checks that the value there is the prose's number. columns: the
    titles a table shows the value under ('tflops', 'TFLOP/s'); a table with none of them does not show it."""
    source: str
    compute: Callable[..., float]
    row: Callable[..., list[tuple[str, ...]]] | None = None
    columns: tuple[str, ...] = ()


TFLOPS_COLUMNS = ("tflops", "TFLOP/s")
PCT_CUBLAS_COLUMNS = ("pct_cublas", "% of cuBLAS")


def fact(source: Path | str, compute: Callable[..., float], row: Callable[..., list[tuple[str, ...]]] | None = None,
         columns: tuple[str, ...] = ()) -> Fact:
    return Fact(rel(source) if isinstance(source, Path) else source, compute, row, columns)


def label_pattern(label: str) -> str:
    """A regex for a configuration's label ('BM=64, BN=64, BK=8, TM=8') as a table prints it, not the start of a
    longer one ('BM=64, BN=64, BK=8, TM=8, TN=4')."""
    return re.escape(label) + r"(?!,\s*[A-Z_]+=)"


def size_row(name: str, size) -> tuple[str, ...]:
    """How gpu_results.throughput_table prints a kernel's row at SIZE³: '| 02_naive | 4096x4096x4096 |'."""
    return (rf"\|\s*{re.escape(name)}\s*\|\s*{size}x{size}x{size}\s*\|",)


CONFIG_ITEM = re.compile(r"([A-Za-z_]+)(\d+)")


def config(variant: str, text: str) -> KernelConfig:
    """'BM128,BN128,BK16,TM16,TN4': the variant's configuration with those values. Every field of its
    configuration is named once, in any order, so that a name cannot silently mean another row; a field that
    names a step past the stage (the configuration's STEPS, e.g. 12's EPILOGUE) may be left out where untaken, as
    its label leaves it out."""
    v = stages.variant(variant)
    steps = getattr(v.config_type, "STEPS", {})
    fields = [f.name for f in dataclasses.fields(v.config_type)]
    values: dict[str, int] = {}
    for item in text.split(","):
        m = CONFIG_ITEM.fullmatch(item)
        if not m or m[1] not in fields or m[1] in values:
            raise KeyError(f"{text!r}: {item!r} is not one of {variant}'s fields, each named once with its value "
                           f"({','.join(fields)}, e.g. {config_text(v.default)})")
        values[m[1]] = int(m[2])
    values = {**{k: untaken for k, untaken in steps.items() if k not in values}, **values}
    if len(values) != len(fields):
        raise KeyError(f"{text!r} leaves out {', '.join(f for f in fields if f not in values)} of {variant}: "
                       f"name every field ({config_text(v.default)})")
    return v.config_type(**values)


def config_text(c: KernelConfig) -> str:
    """The configuration as a fact's name writes it: 'BM128,BN128,BK16,TM16,TN4' (steps past the stage only where
    taken)."""
    steps = getattr(c, "STEPS", {})
    return ",".join(f"{f.name}{getattr(c, f.name)}" for f in dataclasses.fields(c)
                    if f.name not in steps or getattr(c, f.name) != steps[f.name])


def run_named(path: Path) -> str:
    """A results file as a checker's message cites it: 'results/stages_04_05_h200_2026-11-25.json: an NVIDIA H200, 2026-11-25'."""
    p = results_files.read_json(path).get("provenance", {})
    return f"{rel(path)}: an {p.get('gpu', 'unnamed GPU')}, {str(p.get('date', 'an unrecorded date'))[:10]}"


def median(values) -> float:
    return float(statistics.median(values))


def pick(how: str, values) -> float:
    """'min', 'max' or 'median' of the values."""
    return {"min": min, "max": max, "median": median}[how](list(values))

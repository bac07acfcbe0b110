"""Numbers that notebooks state in prose, each computed from a committed results file.

A notebook's Markdown cannot run code, so a measured number in its prose is text. To keep that text true, each
such number carries a marker naming the fact it states, right after it:

    `06_transposed_a` gained 11%<!-- fact: gain_pct/06_transposed_a --> with a 128 x 256 block tile

The marker is an HTML comment: Jupyter does not show it. `tests/course/test_numbers_in_prose.py` reads every
marker of every notebook, computes the fact from its results file and checks the number before the marker,
rounded as written; in the notebooks of ENFORCED it also fails on a number followed by "TFLOP/s" or "%" that has
no marker (a computed number, not a measurement, says so: `<!-- not measured: why -->`).

FACTS maps a name to (the results file it reads, a function computing the number). A name with a slash takes an
argument after it: `gain_pct/08_warp_tiling`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure import autotune, dispatch_table

AUTOTUNE_STAGES_03_09 = RESULTS_DIR / "autotune_h200_2026-11-22.json"
AUTOTUNE_WGMMA = RESULTS_DIR / "autotune_h200_2026-11-24.json"
ENFORCED = ("11",)   # notebooks (stage ids) whose every TFLOP/s and % in prose carries a marker
MARKER = re.compile(r"(?P<number>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>%|TFLOP/s)?\s*<!--\s*fact:\s*(?P<name>[\w/.-]+)\s*-->")


def _search(variant: str, path: Path):
    return autotune.load(variant, path)


def _gain_pct(variant: str) -> float:
    """How much faster the best candidate of the variant's committed search ran than its default, in %."""
    r = _search(variant, AUTOTUNE_STAGES_03_09)
    return 100.0 * (r.best["tflops"] / autotune.default_row(r)["tflops"] - 1)


def _local_memory_candidates() -> int:
    data = results_files.read_json(AUTOTUNE_STAGES_03_09)
    return sum(c["status"] == autotune.LOCAL_MEMORY for c in data["candidates"])


def _wgmma_default(key: str) -> float:
    return autotune.default_row(_search("10_wgmma", AUTOTUNE_WGMMA))[key]


def _wgmma_timed() -> int:
    return sum(r["status"] == autotune.TIMED for r in _search("10_wgmma", AUTOTUNE_WGMMA).rows)


def _sweep(key: str) -> float:
    return dispatch_table.load_sweep()["summary"][key]


FACTS: dict[str, tuple[str, Callable[..., float]]] = {
    "gain_pct": (AUTOTUNE_STAGES_03_09.name, _gain_pct),
    "local_memory_candidates": (AUTOTUNE_STAGES_03_09.name, _local_memory_candidates),
    "wgmma_default_tflops": (AUTOTUNE_WGMMA.name, lambda: _wgmma_default("tflops")),
    "wgmma_default_pct_cublas": (AUTOTUNE_WGMMA.name, lambda: _wgmma_default("pct_cublas")),
    "wgmma_timed_candidates": (AUTOTUNE_WGMMA.name, _wgmma_timed),
    "sweep_geomean_pct": ("the newest sweep_*.json", lambda: _sweep("geomean_pct_cublas")),
    "sweep_min_pct": ("the newest sweep_*.json", lambda: _sweep("min_pct_cublas")),
    "sweep_fixed_geomean_pct": ("the newest sweep_*.json", lambda: _sweep("fixed_geomean_pct_cublas")),
}


def value(name: str) -> float:
    """The number a fact's name stands for, computed now from its results file."""
    key, _, arg = name.partition("/")
    if key not in FACTS:
        raise KeyError(f"no fact {key!r}: facts are {', '.join(FACTS)} (helpers/measure/facts.py)")
    return FACTS[key][1](arg) if arg else FACTS[key][1]()


def agrees(text: str, fact: float) -> bool:
    """Whether the number as written (e.g. '11', '236.9', '1,089') is the fact rounded to its decimals."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(float(fact), decimals) == float(text.replace(",", ""))

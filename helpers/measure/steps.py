"""A stage's steps, one idea each, as measured on a GPU by `tools/measure_steps.py` (results/stage_SS_*/
measure_SS_steps.json): the chain's TFLOP/s at 4096³ in interleaved rounds beside cuBLAS FP32, each step's
gain over the one before it in the same round, and a sweep of shapes. Readers for the notebooks (the numbers
their prose states are helpers/measure/facts/stage_steps.py's)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd

from helpers.core import results_files
from helpers.core.errors import ResultsFileError
from helpers.core.paths import RESULTS_DIR, rel


def path(stage_id: str) -> Path:
    """The newest committed measurement of the stage's steps."""
    found = sorted(RESULTS_DIR.glob(f"stage_{stage_id}_*/measure_{stage_id}_steps.json"), key=lambda p: p.parent.name[-10:])
    if not found:
        raise ResultsFileError(f"no results/stage_{stage_id}_*/measure_{stage_id}_steps.json is committed: run "
                               f"`python -m tools.measure_steps {stage_id} OUT.json` on a GPU and commit it.")
    return found[-1]


def load(stage_id: str) -> dict:
    p = path(stage_id)
    data = results_files.read_json(p)
    for key in ("provenance", "chain", "configurations", "rounds_4096", "sweep"):
        results_files.require(p, data, key)
    for rnd in data["rounds_4096"]:
        for row in rnd:
            results_files.check_timings(p, row, f"the round row of {row.get('kernel')!r}")
    return data


def label(stage_id: str) -> str:
    data, p = load(stage_id), path(stage_id)
    v = data["provenance"]
    return (f"Measured on an {v['gpu']} (CUDA driver API {v['driver']}, runtime {v['cuda_runtime']}, CuPy {v['cupy']}) "
            f"on {v['date'][:10]}, {len(data['rounds_4096'])} interleaved rounds of median-of-50 timings, every kernel "
            f"verified on the shape catalogue first: `{rel(p)}`, made by `{v['command']}`.")


def series(data: dict, kernel: str, key: str) -> list[float]:
    return [r[key] for rnd in data["rounds_4096"] for r in rnd if r["kernel"] == kernel]


def gains(data: dict, kernel: str) -> list[float]:
    """The kernel's gain over the kernel before it in the chain, in each round, in %."""
    names = [c["kernel"] for c in data["chain"]]
    before = names[names.index(kernel) - 1]
    out = []
    for rnd in data["rounds_4096"]:
        by = {r["kernel"]: r["tflops"] for r in rnd}
        out.append(100.0 * (by[kernel] / by[before] - 1))
    return out


def table(stage_id: str) -> pd.DataFrame:
    """One row per kernel of the chain: its configuration, registers, median TFLOP/s and % of cuBLAS at 4096³,
    and its median gain over the row above it (each round's pair, then the median)."""
    data = load(stage_id)
    regs = {c["kernel"]: c["registers"] for c in data["configurations"]}
    rows = []
    for i, c in enumerate(data["chain"]):
        k = c["kernel"]
        rows.append({"kernel": k, "configuration": c["config"], "registers": regs.get(k),
                     "TFLOP/s": statistics.median(series(data, k, "tflops")),
                     "% of cuBLAS": statistics.median(series(data, k, "pct_cublas")),
                     "gain over the row above, %": statistics.median(gains(data, k)) if i else None})
    return pd.DataFrame(rows).round(1)


def sweep(stage_id: str) -> pd.DataFrame:
    """TFLOP/s of every kernel of the chain (columns) at each shape of the sweep (rows), cuBLAS FP32 beside."""
    data = load(stage_id)
    t = pd.DataFrame([{"M × N × K": " × ".join(map(str, r["shape"])), "kernel": r["kernel"], "TFLOP/s": r["tflops"]}
                      for r in data["sweep"]])
    return t.pivot_table(index="M × N × K", columns="kernel", values="TFLOP/s", sort=False).round(1)

"""Numbers notebook 03 (shared-memory tiling) states: the ladder of every kernel at 4096³ on 2026-11-22, and the
experiments on stage 03 of that day: one-idea variants of the kernel (two runs) and its compiler options."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import PCT_CUBLAS_COLUMNS, TFLOPS_COLUMNS, fact, median, size_row

LADDER = RESULTS_DIR / "ladder_h200_2026-11-22.json"
EXPERIMENTS = RESULTS_DIR / "experiments_h200_2026-11-22"
VARIANT_RUNS = {"run1": EXPERIMENTS / "exp_03b.json", "run2": EXPERIMENTS / "exp_03b_after.json"}
COMPILE_OPTIONS = EXPERIMENTS / "exp_compile.json"


def _ladder(variant: str) -> dict:
    """The row of a variant (or 'cublas') in LADDER."""
    data = results_files.read_json(LADDER)
    return data["cublas"] if variant == "cublas" else next(r for r in data["rows"] if r["variant"] == variant)


def _variant_tflops(kernel: str, run: str) -> float:
    """The median of a kernel's three timings in one run of the one-idea variants: V0 ... V5 (stage 03's design
    changed one idea at a time; tools/experiments/exp_03b.py at commit 5c37657), smem_rowsx (the siboehm kernel-3
    layout) or 03_smem_tiling (the course's kernel, timed by bench.time_variant: run2 only)."""
    runs = results_files.read_json(VARIANT_RUNS[run])["tflops_three_runs"]
    return median(runs["course kernel (bench.time_variant)"] if kernel == "03_smem_tiling" else runs[kernel])


def _compile_spread(variant: str) -> float:
    """The widest gap between the variant's medians under each compiler and shared-memory carveout, in %."""
    runs = results_files.read_json(COMPILE_OPTIONS)["tflops_three_runs"]
    medians = [median(v) for k, v in runs.items() if k.split()[0] == variant]
    return 100.0 * (max(medians) / min(medians) - 1)


def _ladder_row(variant: str) -> list[tuple[str, ...]]:
    """A kernel's row in a table of the ladder (gpu_results.throughput_table), at the ladder's size."""
    return [size_row("cublas_sgemm" if variant == "cublas" else variant, results_files.read_json(LADDER)["size"])]


FACTS = {
    "ladder_tflops": fact(LADDER, lambda variant: _ladder(variant)["tflops"], _ladder_row, TFLOPS_COLUMNS),
    "ladder_pct_cublas": fact(LADDER, lambda variant: _ladder(variant)["pct_cublas"], _ladder_row, PCT_CUBLAS_COLUMNS),
    # A/B: how many times faster A ran than B
    "ladder_speedup": fact(LADDER, lambda a, b: _ladder(a)["tflops"] / _ladder(b)["tflops"]),
    "smem_variants_tflops": fact("results/experiments_h200_2026-11-22/exp_03b*.json", _variant_tflops),
    # A/B/RUN: how much faster A's median ran than B's in that run, in %
    "smem_variants_gain_pct": fact("results/experiments_h200_2026-11-22/exp_03b*.json",
                                   lambda a, b, run: 100.0 * (_variant_tflops(a, run) / _variant_tflops(b, run) - 1)),
    "compile_options_spread_pct": fact(COMPILE_OPTIONS, _compile_spread),
}

"""Numbers notebook 01 (CPU loop blocking) states: the newest committed CPU benchmark (tools/cpu_gemm_bench.py,
results/cpu_gemm_*.json), its versions' GFLOP/s by size and the machine's ceilings."""

from __future__ import annotations

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure.facts.common import fact

CPU_GEMM = "the newest results/cpu_gemm_*.json"


def _cpu_gemm() -> dict:
    found = sorted(RESULTS_DIR.glob("cpu_gemm_*.json"), key=lambda p: p.stem[-10:])
    if not found:
        raise results_files.ResultsFileError("no results/cpu_gemm_*.json: run tools/cpu_gemm_bench.py and commit it")
    return results_files.read_json(found[-1])


def _row(version: str, size: str, key: str, table: str = "rows") -> float:
    """One version's row at SIZE³ (table 'default_vector_width': the run at the compiler's default vector width)."""
    data = _cpu_gemm()
    rows = data[table]["rows"] if table == "default_vector_width" else data["rows"]
    return next(r[key] for r in rows if r["version"] == version and r["M"] == int(size))


FACTS = {
    # VERSION/SIZE: naive_ijk, loop_order_ikj, unroll_k4, cache_block, register_block at SIZE³
    "cpu_gemm_gflops": fact(CPU_GEMM, lambda version, size: _row(version, size, "gflops")),
    "cpu_gemm_pct_openblas": fact(CPU_GEMM, lambda version, size: _row(version, size, "pct_openblas")),
    "cpu_gemm_default_width_gflops": fact(CPU_GEMM, lambda version, size: _row(version, size, "gflops",
                                                                               "default_vector_width")),
    # the machine's ceilings: fused multiply-adds on every lane of every core, one dependent chain of them
    "cpu_fma_peak_gflops": fact(CPU_GEMM, lambda: _cpu_gemm()["ceilings"]["fma_peak_gflops"]),
    "cpu_fma_one_chain_gflops": fact(CPU_GEMM, lambda: _cpu_gemm()["ceilings"]["fma_one_chain_gflops"]),
    # LEVEL: L1, L2 or DRAM, the copy bandwidth of a buffer that fits there
    "cpu_copy_gbs": fact(CPU_GEMM, lambda level: _cpu_gemm()["ceilings"]["copy_gbs"][level]),
}

"""The committed benchmark results (results/cpu_gemm_*.json, written by tools/cpu_gemm_bench.py):
finding and loading them, and what the notebook prints from them (label, table, verdict)."""

from __future__ import annotations

from pathlib import Path

from helpers.core.paths import RESULTS_DIR, ROOT
from helpers.core.results_files import read_json


def results_files(directory: Path | str = RESULTS_DIR) -> list[Path]:
    return sorted(Path(directory).glob("cpu_gemm_*.json"))


def load_results(path: Path | str | None = None, directory: Path | str = RESULTS_DIR) -> dict | None:
    """A committed benchmark (the newest results/cpu_gemm_*.json by default), or None if there is none."""
    if path is None:
        files = results_files(directory)
        if not files:
            return None
        path = max(files, key=lambda p: (read_json(p)["machine"]["date"], p.name))
    data = read_json(Path(path))
    data["file"] = Path(path).relative_to(ROOT).as_posix() if Path(path).is_relative_to(ROOT) else str(path)
    return data


def results_label(data: dict) -> str:
    m = data["machine"]
    blas = m["blas"][0] if m.get("blas") else {}
    return (f"Measured on {m['cpu']} ({m['logical_cpus']} logical CPUs, one used) on {m['date'][:10]}; "
            f"Numba {m['numba']} ({m['numba_vector_bits']}-bit vectors), NumPy {m['numpy']} with "
            f"{blas.get('internal_api', 'BLAS')} {blas.get('version', '')} ({blas.get('architecture', '?')} "
            f"kernel), one thread; from `{data['file']}`")


def results_table(data: dict, size: int | None = None) -> str:
    """The committed rows as a Markdown table: version, size, median, GFLOP/s, % of OpenBLAS."""
    lines = ["| version | block sizes | size | median ms | GFLOP/s | % of OpenBLAS |", "|---|---|---|---:|---:|---:|"]
    for r in data["rows"]:
        if size and r["M"] != size:
            continue
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "—"
        lines.append(f"| {r['version']} | {params} | {r['M']}³ | {r['median_s'] * 1e3:,.1f} | {r['gflops']:.1f} | "
                     f"{r['pct_openblas']:.0f}% |")
    return "\n".join(lines)


def best_blocked(data: dict, size: int = 1024) -> dict:
    rows = [r for r in data["rows"] if r["M"] == size and r["version"] in ("register_block", "cache_block")]
    return max(rows, key=lambda r: r["gflops"])


def bar_verdict(data: dict, size: int = 1024, bar: float = 50.0) -> str:
    """Whether the best blocked version reaches `bar` % of single-threaded OpenBLAS at size^3."""
    best = best_blocked(data, size)
    met = best["pct_openblas"] >= bar
    return (f"At {size}³ the best blocked version, {best['version']}, runs at {best['gflops']:.1f} GFLOP/s, "
            f"{best['pct_openblas']:.0f}% of single-threaded OpenBLAS: the {bar:.0f}% bar is "
            f"{'met' if met else 'NOT met'}.")


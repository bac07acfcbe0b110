"""GPU measurements: timing kernels beside cuBLAS now, or reading the ones committed in results/
(each with the GPU, date and versions it was measured with).
"""

from __future__ import annotations
from dataclasses import dataclass, field
from pathlib import Path
from helpers.core import results_files
from helpers.core import stages
from helpers.core.markdown import Markdown
from helpers.core.paths import RESULTS_DIR, rel
from helpers.measure import bench
from helpers.core import progress

# ---- performance ---------------------------------------------------------------------------
def _fmt_row(r: dict) -> str:
    pct = f"{r['pct_cublas']:.1f}" if r.get("pct_cublas") is not None else "-"
    return (f"| {r['variant']} | {r['M']}x{r['N']}x{r['K']} | {r['median_ms']:.3f} | "
            f"{r['tflops'] * 1e3:,.0f} | {r['tflops']:.2f} | {pct} |")


def throughput_table(rows: list[dict]) -> Markdown:
    """Rows (variant, M, N, K, median_ms, tflops, pct_cublas) as a Markdown table."""
    head = ["| kernel | M x N x K | median ms | GFLOP/s | TFLOP/s | % of cuBLAS |", "|---|---|---|---|---|---|"]
    ordered = sorted(rows, key=lambda r: (r["M"] * r["N"] * r["K"], r["variant"] != "cublas_sgemm"))
    return Markdown("\n".join(head + [_fmt_row(r) for r in ordered]))


def measure(variants, sizes=(256, 512, 1024, 2048, 4096), n_warmup: int = 3, n_repeat: int = 20) -> list[dict]:
    """On a GPU: each variant (default configuration) and cuBLAS at size^3, timed in the same run.
    Rows have the format of results/*.json. Raises CourseError on the CPU emulator."""
    rows = []
    with progress.bar(total=len(sizes) * (len(variants) + 1), desc="timing", unit="run") as shown:
        for n in sizes:
            shown.set_postfix_str(f"cuBLAS at {n}^3")
            cublas = bench.time_cublas(n, n, n, n_warmup, n_repeat)
            shown.update()
            rows.append({"variant": "cublas_sgemm", "M": n, "N": n, "K": n, "median_ms": cublas.median_ms,
                         "tflops": cublas.tflops(n, n, n), "pct_cublas": 100.0})
            for v in variants:
                shown.set_postfix_str(f"{v.name} at {n}^3")
                t, rel = bench.time_variant(v, n, n, n, n_warmup=n_warmup, n_repeat=n_repeat)
                shown.update()
                rows.append({"variant": v.name, "M": n, "N": n, "K": n, "median_ms": t.median_ms,
                             "tflops": t.tflops(n, n, n), "pct_cublas": 100.0 * cublas.median_ms / t.median_ms,
                             "max_rel_diff_vs_cublas": rel})
    return rows


@dataclass
class ResultSet:
    """The rows of one results file that concern a stage, with where and when they were measured."""
    file: str
    provenance: dict
    rows: list[dict]

    @property
    def label(self) -> str:
        p = self.provenance
        bits = [f"Measured on {p.get('gpu', 'an unnamed GPU')}"]
        if p.get("compute_capability"):
            bits[0] += f" (compute capability {p['compute_capability']})"
        date = str(p.get("date") or "an unrecorded date")
        bits.append(f"on {date[:10]}" + (f" {date[11:16]} UTC" if len(date) >= 16 and date[10] == "T" else ""))
        extra = ", ".join(f"{k} {p[k]}" for k in ("driver", "cupy") if p.get(k))
        return " ".join(bits) + (f"; {extra}" if extra else "") + f"; from `{self.file}`"


@dataclass
class GpuResults:
    """Committed GPU measurements of one stage's kernels (and cuBLAS beside them)."""
    stage_id: str
    sets: list[ResultSet] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.sets)

    @property
    def rows(self) -> list[dict]:
        return [dict(r, gpu=s.provenance.get("gpu"), date=s.provenance.get("date"), file=s.file)
                for s in self.sets for r in s.rows]

    def _none(self) -> str:
        return (f"No GPU results committed yet for stage {self.stage_id}: results/ holds no measurement of "
                f"its kernels. Nothing is shown rather than numbers from the CPU emulator, which say nothing "
                f"about a GPU. On a machine with a CUDA GPU this section times the kernels itself.")

    def _repr_markdown_(self) -> str:
        if not self.found:
            return f"**{self._none()}**"
        return "\n\n".join(f"{s.label}\n\n{throughput_table(s.rows)}" for s in self.sets)

    def __str__(self) -> str:
        if not self.found:
            return self._none()
        return "\n\n".join(f"{s.label}\n{throughput_table(s.rows)}" for s in self.sets)

    __repr__ = __str__


def _normalise(row: dict, data: dict) -> dict | None:
    """A row in the course's format, or None when it holds no GPU timing."""
    if row.get("tflops") is None or row.get("median_ms") is None or not isinstance(row.get("variant"), str):
        return None
    size = data.get("size")
    out = dict(row)
    for d in ("M", "N", "K"):
        out.setdefault(d, size)
    if None in (out["M"], out["N"], out["K"]):
        return None
    return out


def gpu_results(stage_id: str, directory: Path | str = RESULTS_DIR) -> GpuResults:
    """Reads results/*.json and keeps, per file with GPU provenance, the rows of this stage's
    kernels and the cuBLAS rows at the same sizes. Files are read as they are; nothing is made up.

    Format: {"provenance": {"gpu", "date", "driver", "cupy", ...}, "rows": [{"variant", "M", "N",
    "K", "median_ms", "tflops", "pct_cublas", ...}]}; the `python -m helpers ladder --json` format
    (a top-level "size" and a separate "cublas" row) is read too."""
    names = {v.name for v in stages.stage(stage_id).variants}
    result = GpuResults(stage_id)
    for path, data in results_files.with_provenance(directory):
        if not data["provenance"].get("gpu"):
            continue                     # no GPU named: not a GPU measurement
        rows = [r for r in data.get("rows", []) if isinstance(r, dict)]
        if isinstance(data.get("cublas"), dict):
            rows.append(data["cublas"])
        rows = [r for r in (_normalise(r, data) for r in rows) if r]
        mine = [r for r in rows if r["variant"] in names]
        if not mine:
            continue
        sizes = {(r["M"], r["N"], r["K"]) for r in mine}
        cublas = [r for r in rows if r["variant"].startswith("cublas") and (r["M"], r["N"], r["K"]) in sizes]
        for r in cublas + mine:   # what is shown: a NaN or zero timing stops here, with the file's name
            results_files.check_timings(path, r, f"the row of {r['variant']} at {r['M']}x{r['N']}x{r['K']}")
        result.sets.append(ResultSet(rel(path), data["provenance"], cublas + mine))
    return result



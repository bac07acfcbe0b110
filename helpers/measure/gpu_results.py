"""GPU measurements: timing kernels beside cuBLAS now, or reading the ones committed in results/
(each with the GPU, date and versions it was measured with).

A table of committed results shows one file, named in its first line, and each measurement once: a file that
holds the same kernel, configuration and size twice is refused with its name, and so is a table of several
files that measured the same row (`gpu_results(stage, file=...)` reads one; the notebooks' prose cites it).
"""

from __future__ import annotations
import html
from dataclasses import dataclass, field
from pathlib import Path
from helpers.core import results_files
from helpers.core import stages
from helpers.core.errors import ResultsFileError
from helpers.core.markdown import Markdown
from helpers.core.paths import RESULTS_DIR, ROOT, rel
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


def row_key(r: dict) -> tuple:
    """What one measurement is of: the kernel, its configuration and the size. A table shows each once."""
    return r["variant"], r.get("config"), r["M"], r["N"], r["K"]


def _key_text(key: tuple) -> str:
    variant, config, m, n, k = key
    return f"{variant}{f' ({config})' if config else ''} at {m}x{n}x{k}"


class DuplicateRowsError(ResultsFileError):
    """The same measurement twice in what would be one table."""


@dataclass
class ResultSet:
    """The rows of one results file that concern a stage, with where and when they were measured. `beside`:
    cuBLAS timed in the same run where the file keeps it apart from its rows (before and after the candidates)."""
    file: str
    provenance: dict
    rows: list[dict]
    beside: list[dict] = field(default_factory=list)

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
        """Every row of every file, each with its gpu, date and file. Refused (DuplicateRowsError) when two files
        measured the same kernel, configuration and size: one table of both would show it twice."""
        out, seen = [], {}
        for s in self.sets:
            for r in s.rows:
                key = row_key(r)
                if key in seen:
                    raise DuplicateRowsError(
                        f"{seen[key]} and {s.file} both measured {_key_text(key)}: a table of both would show it "
                        f"twice, with two values. Read the one file the text cites: gpu_results({self.stage_id!r}, "
                        f"file={s.file!r}) (or the other).")
                seen[key] = s.file
                out.append(dict(r, gpu=s.provenance.get("gpu"), date=s.provenance.get("date"), file=s.file))
        return out

    def only(self) -> ResultSet:
        """The one file read (gpu_results(stage, file=...)); InputError-like refusal when there are several."""
        if len(self.sets) != 1:
            files = ", ".join(s.file for s in self.sets) or "none"
            raise DuplicateRowsError(f"stage {self.stage_id}: {len(self.sets)} results files measured it ({files}); "
                                     f"a table shows one. Read it with gpu_results({self.stage_id!r}, file=...).")
        return self.sets[0]

    @property
    def file(self) -> str:
        """The one file read (gpu_results(stage, file=...)), as the repository names it."""
        return self.only().file

    def by_config(self) -> dict[str, dict]:
        """The stage's rows of the one file read, by configuration label (each once: the file was checked)."""
        s = self.only()
        return {r["config"]: r for r in s.rows if not r["variant"].startswith("cublas")}

    def table(self, columns=("variant", "config", "threads", "registers", "median_ms", "tflops", "pct_cublas"),
              sort: str | None = "tflops", decimals: int = 2) -> ResultsTable:
        """The one file's rows (cuBLAS of the same run first), the columns given, under a line naming the file."""
        import pandas as pd
        s = self.only()
        rows = [r for r in s.beside + s.rows]
        frame = pd.DataFrame(rows, columns=list(columns))
        for name in ("threads", "registers", "M", "N", "K"):   # counts: whole numbers, blank where not measured
            if name in frame:
                frame[name] = ["" if pd.isna(x) else int(x) for x in frame[name]]
        if sort:
            cublas = frame["variant"].str.startswith("cublas") if "variant" in frame else False
            frame = pd.concat([frame[cublas], frame[~cublas].sort_values(sort, ascending=False)]) \
                if "variant" in frame else frame.sort_values(sort, ascending=False)
        return ResultsTable(s.label, s.file, frame.reset_index(drop=True).round(decimals))

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


@dataclass
class ResultsTable:
    """Committed rows as a notebook shows them: the line naming their file and run, then the table. `frame` is
    the pandas DataFrame (for code that reads it)."""
    label: str
    file: str
    frame: object

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.label)}</p>" + self.frame.to_html(index=False, na_rep="")

    def __str__(self) -> str:
        return f"{self.label}\n{self.frame.to_string(index=False, na_rep='')}"

    __repr__ = __str__


def _beside(data: dict, size) -> list[dict]:
    """cuBLAS timed before and after a run's candidates (tools/tune_04_05.py), as rows: its share is against the
    first, as the file's own rows are."""
    c = data.get("cublas")
    if not (isinstance(c, dict) and isinstance(c.get("before"), dict) and size):
        return []
    first = c["before"].get("median_ms")
    return [{"variant": "cublas_sgemm", "config": f"cupy.matmul, TF32 off, timed {when} the candidates", "M": size,
             "N": size, "K": size, "median_ms": c[when].get("median_ms"), "tflops": c[when].get("tflops"),
             "pct_cublas": 100.0 * first / c[when]["median_ms"] if first and c[when].get("median_ms") else None}
            for when in ("before", "after") if isinstance(c.get(when), dict)]


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


def _files(directory: Path | str, file: Path | str | None) -> list[tuple[Path, dict]]:
    if file is None:
        return results_files.with_provenance(directory)
    path = Path(file)
    path = path if path.is_absolute() else (ROOT / path if (ROOT / path).exists() else Path(directory) / path)
    data = results_files.read_json(path)
    if not (isinstance(data, dict) and isinstance(data.get("provenance"), dict)):
        raise ResultsFileError(f"{rel(path)} has no provenance: it is not a results file the course shows.")
    return [(path, data)]


def gpu_results(stage_id: str, directory: Path | str = RESULTS_DIR, file: Path | str | None = None) -> GpuResults:
    """Reads results/*.json (or only `file`, a path from the repository's root or `directory`) and keeps, per file
    with GPU provenance, the rows of this stage's kernels and the cuBLAS rows at the same sizes. Files are read as
    they are; nothing is made up. A file holding one measurement twice is refused (DuplicateRowsError).

    Format: {"provenance": {"gpu", "date", "driver", "cupy", ...}, "rows": [{"variant", "M", "N",
    "K", "median_ms", "tflops", "pct_cublas", ...}]}; the `python -m helpers ladder --json` format
    (a top-level "size" and a separate "cublas" row) is read too, and cuBLAS timed before and after a run's
    candidates (tools/tune_04_05.py) is kept beside its rows."""
    names = {v.name for v in stages.stage(stage_id).variants}
    result = GpuResults(stage_id)
    for path, data in _files(directory, file):
        if not data["provenance"].get("gpu"):
            continue                     # no GPU named: not a GPU measurement
        rows = [r for r in data.get("rows", []) if isinstance(r, dict)]
        if isinstance(data.get("cublas"), dict) and "before" not in data["cublas"]:
            rows.append(data["cublas"])
        rows = [r for r in (_normalise(r, data) for r in rows) if r]
        mine = [r for r in rows if r["variant"] in names]
        if not mine:
            continue
        sizes = {(r["M"], r["N"], r["K"]) for r in mine}
        cublas = [r for r in rows if r["variant"].startswith("cublas") and (r["M"], r["N"], r["K"]) in sizes]
        beside = _beside(data, data.get("size"))
        seen = set()
        for r in beside + cublas + mine:   # what is shown: a NaN or zero timing stops here, with the file's name
            results_files.check_timings(path, r, f"the row of {r['variant']} at {r['M']}x{r['N']}x{r['K']}")
            if row_key(r) in seen:
                raise DuplicateRowsError(f"{rel(path)} holds {_key_text(row_key(r))} twice: which one is the "
                                         f"measurement? Keep one row per kernel, configuration and size.")
            seen.add(row_key(r))
        result.sets.append(ResultSet(rel(path), data["provenance"], cublas + mine, beside))
    if file is not None and not result.found:
        raise ResultsFileError(f"{file} holds no GPU measurement of stage {stage_id}'s kernels.")
    return result



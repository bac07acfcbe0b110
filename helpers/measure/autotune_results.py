"""Autotuning's results: the rows of a search (TuneResult and their statuses), and the searches committed to
results/autotune_<gpu>_<date>.json, written (record) and read back anywhere, no GPU needed (load,
committed_searches, and the summaries notebook 11 shows). The search itself is helpers/measure/autotune.py.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from helpers.core import paths, results_files, stages
from helpers.core.configs import KernelConfig
from helpers.core.errors import CourseError
from helpers.core.paths import RESULTS_DIR

# a row's status
TIMED, VERIFIED = "timed", "verified"
COMPILE_ERROR, VERIFICATION_FAILED, LAUNCH_ERROR = "compile error", "verification failed", "launch error"
LOCAL_MEMORY = "local memory (not timed)"
STATUSES = (TIMED, VERIFIED, COMPILE_ERROR, VERIFICATION_FAILED, LAUNCH_ERROR, LOCAL_MEMORY)


# ---- results ----------------------------------------------------------------------------------------
@dataclass
class TuneResult:
    """The rows of one search (tune) or check (dry_run) of a variant's candidates."""
    variant: str
    gpu: str
    size: int | None                  # M = N = K of the timings; None for a dry run
    kernel_sha256: str
    rows: list[dict]
    sessions: list[dict] = field(default_factory=list)   # per GPU session: provenance, cuBLAS before/after
    file: Path | None = None          # the cache (tune) or the results file (load) the rows are in

    @property
    def timed(self) -> bool:
        return self.size is not None

    @property
    def best(self) -> dict | None:
        """The fastest timed row (None for a dry run, or when nothing could be timed)."""
        timed = [r for r in self.rows if r["status"] == TIMED]
        return max(timed, key=lambda r: r["tflops"]) if timed else None

    @property
    def cublas_drift_pct(self) -> float | None:
        """How far cuBLAS moved between its timings before and after the candidates (all sessions),
        in % of the slowest: candidates closer together than this are not told apart by the search."""
        speeds = [s[k]["tflops"] for s in self.sessions for k in ("cublas_before", "cublas_after") if k in s]
        return 100.0 * (max(speeds) / min(speeds) - 1) if len(speeds) > 1 else None

    def best_config(self) -> KernelConfig | None:
        best = self.best
        return None if best is None else stages.variant(self.variant).config_type(**best["fields"])

    def frame(self):
        """The rows as a pandas DataFrame, one column per field of the configuration."""
        import pandas as pd
        return pd.DataFrame([{**r["fields"], **{k: x for k, x in r.items() if k != "fields"}} for r in self.rows])

    def table(self) -> str:
        """A plain-text table: configuration, status, registers, and on a GPU TFLOP/s and % of cuBLAS."""
        width = max([len("configuration")] + [len(r["config"]) for r in self.rows])
        head = f"{'configuration':<{width}}  {'status':<24} {'regs':>4}" + (
            f" {'TFLOP/s':>8} {'% cuBLAS':>8}" if self.timed else "")
        lines = [head]
        for r in self.rows:
            line = f"{r['config']:<{width}}  {r['status']:<24} {r['registers'] if r['registers'] is not None else '-':>4}"
            if self.timed and r["status"] == TIMED:
                line += f" {r['tflops']:>8.2f} {r['pct_cublas']:>8.1f}"
            lines.append(line)
        best = self.best
        if best:
            lines.append(f"best: {best['config']}: {best['tflops']:.2f} TFLOP/s, {best['pct_cublas']:.1f}% of cuBLAS")
        if self.cublas_drift_pct is not None:
            lines.append(f"cuBLAS moved by {self.cublas_drift_pct:.1f}% between its timings before and after: "
                         f"closer results are not told apart")
        return "\n".join(lines)


def gpu_slug(gpu_name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA A100-SXM4-80GB' -> 'a100-sxm4-80gb': for file names."""
    name = re.sub(r"^nvidia\s+", "", str(gpu_name).strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


# ---- committing a search -----------------------------------------------------------------------------
def record(results, path: Path | str | None = None, directory: Path | str = RESULTS_DIR) -> Path:
    """Writes timed searches (one TuneResult or several, of one GPU) to a results file: by default
    results/autotune_<gpu-slug>_<date>.json, the date of the newest session. The file holds the
    provenance of that session (helpers.bench.provenance), and per variant its kernel SHA-256, size,
    GPU sessions (each with its provenance and cuBLAS before and after), every candidate's row and
    the best. Variants already in the file and not in `results` are kept, so variants tuned one at
    a time add up. The rows are under "candidates", not "rows": the stage notebooks' tables of
    committed results (helpers.display.gpu_results) show curated runs, not every candidate."""
    results = [results] if isinstance(results, TuneResult) else list(results)
    if not results:
        raise ValueError("record() needs at least one TuneResult.")
    for r in results:
        if not r.timed or not r.sessions:
            raise CourseError(f"{r.variant}: a dry run times nothing, and record() writes GPU measurements only. "
                              f"Fix: run tune({r.variant!r}) on a GPU.")
    gpus = {r.gpu for r in results}
    if len(gpus) > 1:
        raise CourseError(f"record() writes one GPU's searches per file; these come from {', '.join(sorted(gpus))}.")
    newest = max((s for r in results for s in r.sessions), key=lambda s: s["provenance"]["date"])
    gpu = gpus.pop()
    path = Path(path) if path else Path(directory) / f"autotune_{gpu_slug(gpu)}_{newest['provenance']['date'][:10]}.json"
    data = {"kernels": {}, "sizes": {}, "sessions": {}, "candidates": [], "best": {}}
    if path.exists():
        data = results_files.read_json(path)
        if data.get("provenance", {}).get("gpu") != gpu:
            raise CourseError(f"{path} holds searches on {data.get('provenance', {}).get('gpu')}, not {gpu}: "
                              f"write to another file (path=...).")
    names = {r.variant for r in results}
    data["candidates"] = [row for row in data["candidates"] if row["variant"] not in names]
    for r in results:
        v = stages.variant(r.variant)
        data["kernels"][r.variant] = {"path": str(v.path.relative_to(paths.ROOT)), "sha256": r.kernel_sha256}
        data["sizes"][r.variant] = r.size
        data["sessions"][r.variant] = r.sessions
        data["candidates"] += r.rows
        if r.best:
            data["best"][r.variant] = r.best
    data["provenance"] = newest["provenance"]
    data["note"] = ("Written by helpers.autotune.record from tune() searches: each candidate verified on the shape "
                    "catalogue on the GPU, then timed (median); pct_cublas against the cuBLAS timed before the "
                    "candidates in the same session (sessions: cuBLAS before and after). Candidates without "
                    "timings record why: compile error, verification failed, launch error, local memory.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def committed(directory: Path | str = RESULTS_DIR) -> list[Path]:
    """The committed autotuning results files, by name (GPU, then date)."""
    return sorted(Path(directory).glob("autotune_*.json"))


def load(variant, path: Path | str | None = None, directory: Path | str = RESULTS_DIR) -> TuneResult:
    """A committed search of a variant, read back from a results file written by record(): by
    default the newest one (by its provenance date) that holds the variant. No GPU needed."""
    v = stages.resolve(variant)
    files = [Path(path)] if path else committed(directory)
    found = []
    for f in files:
        data = results_files.read_json(f)
        with results_files.reading(f):
            if v.name in data.get("sessions", {}):
                found.append((str(data["provenance"].get("date", "")), f, data))
    if not found:
        where = path or f"{directory}/autotune_*.json"
        raise CourseError(f"no committed search of {v.name} in {where}. On a GPU: python -m helpers tune {v.name} "
                          f"--out results/autotune_<gpu>_<date>.json")
    _, f, data = max(found, key=lambda x: x[0])
    with results_files.reading(f):
        rows = [r for r in data["candidates"] if r["variant"] == v.name]
        for r in rows:
            if r["status"] == TIMED:
                results_files.check_timings(f, r, f"the candidate {r['config']} of {v.name}")
        return TuneResult(v.name, data["provenance"]["gpu"], data["sizes"][v.name], data["kernels"][v.name]["sha256"],
                          rows, data["sessions"][v.name], f)


def committed_searches(directory: Path | str = RESULTS_DIR) -> list[TuneResult]:
    """Every variant's newest committed search (load()), in registry order; variants no longer
    registered are skipped. No GPU needed."""
    names = set()
    for f in committed(directory):
        names |= set(results_files.read_json(f).get("sessions", {}))
    order = [v.name for v in stages.variants()]
    return [load(name, directory=directory) for name in order if name in names]


def default_row(result: TuneResult) -> dict | None:
    """The row of the configuration the search started from (its registered default then)."""
    return next((r for r in result.rows if r.get("distance") == 0), None)


def search_summary(results: list[TuneResult]) -> list[dict]:
    """Per search: candidates, how many were timed, the default's and the best's TFLOP/s, what the best
    gained over the default, and how far cuBLAS moved during the search (a gain smaller than that is
    not told apart from noise). Every number read from the rows."""
    out = []
    for r in results:
        default, best = default_row(r), r.best
        timed = default is not None and default["status"] == TIMED
        gain = 100.0 * (best["tflops"] / default["tflops"] - 1) if timed and best else None
        drift = r.cublas_drift_pct
        out.append({"variant": r.variant, "candidates": len(r.rows),
                    "timed": sum(x["status"] == TIMED for x in r.rows),
                    "default": default["config"] if default else None,
                    "default TFLOP/s": round(default["tflops"], 2) if timed else None,
                    "best": best["config"] if best else None,
                    "best TFLOP/s": round(best["tflops"], 2) if best else None,
                    "best % of cuBLAS": round(best["pct_cublas"], 1) if best else None,
                    "gain over default %": None if gain is None else round(gain, 1),
                    "cuBLAS moved %": None if drift is None else round(drift, 1),
                    "verdict": ("-" if gain is None else "the default was the fastest" if gain == 0 else
                                "faster by less than cuBLAS moved: not told apart" if drift is not None and gain <= drift
                                else "faster by more than cuBLAS moved")})
    return out


def searches_label(results: list[TuneResult]) -> str:
    """Where, when and how the searches were measured, read from their sessions' provenance."""
    sessions = [s for r in results for s in r.sessions]
    if not sessions:
        return "No GPU sessions in these searches."
    p = max(sessions, key=lambda s: s["provenance"]["date"])["provenance"]
    gpus = sorted({s["provenance"].get("gpu", "?") for s in sessions})
    dates = sorted({str(s["provenance"].get("date", ""))[:10] for s in sessions})
    commands = sorted({re.sub(r"tune\('[^']*'", "tune(<variant>", str(s["provenance"].get("command", "")))
                       for s in sessions})
    versions = "; ".join(x for x in (f"compute capability {p['compute_capability']}" if p.get("compute_capability") else "",
                                    f"driver {p['driver']}" if p.get("driver") else "",
                                    f"CuPy {p['cupy']}" if p.get("cupy") else "") if x)
    files = sorted({str(r.file.relative_to(paths.ROOT)) if r.file and r.file.is_relative_to(paths.ROOT) else str(r.file)
                    for r in results})
    return (f"Measured on {', '.join(gpus)}" + (f" ({versions})" if versions else "") + f" on {', '.join(dates)}: "
            f"{len(results)} searches, {sum(len(r.rows) for r in results)} candidates, each verified on the shape "
            f"catalogue, then timed at {', '.join(sorted({f'{r.size}^3' for r in results}))}; made by "
            + ", ".join(f"`{c}`" for c in commands) + f". Source: " + ", ".join(f"`{f}`" for f in files) + ".")


def seconds_per_candidate(results: list[TuneResult]) -> float | None:
    """An estimate of what one candidate cost (compile, resources, catalogue, timing, cache) in searches
    run one after another: the time between the first and the last session's start over the candidates
    of every search but the last one started. None with fewer than two sessions."""
    starts = sorted((_dt.datetime.fromisoformat(s["provenance"]["date"]), r.variant)
                    for r in results for s in r.sessions)
    if len(starts) < 2:
        return None
    last = starts[-1][1]
    counted = sum(len(r.rows) for r in results if r.variant != last)
    return (starts[-1][0] - starts[0][0]).total_seconds() / counted if counted else None

"""Autotuning (stage 11): search a kernel's tile configurations, verify every one, time them on a GPU.

    space = search_space("08_warp_tiling")       # anywhere: what is searched, and what was left out and why
    print(space.summary())
    result = dry_run("08_warp_tiling", count=3)  # anywhere: a few candidates compiled and verified, none timed
    result = tune("08_warp_tiling", size=4096)   # on a GPU: every candidate verified, then timed
    record(result)                               # results/autotune_<gpu>_<date>.json

The space. Each field of the variant's configuration dataclass takes its values from RANGES
(powers of two for tile sizes, small counts for STAGES and MIN_BLOCKS); a field without a range
keeps the registered default's value. Three rules drop what cannot run or cannot be fast:
  - the kernel's own rules (the configuration's validate(), checked as it is built);
  - 64 to 1024 threads per block (fewer leave the SM's four schedulers short of warps);
  - MIN_BLOCKS blocks (1 without the field) fit on one SM of the architecture, as
    helpers.resources.occupancy counts shared memory and registers, registers counted at their
    floor: a thread's TM x TN accumulators plus the TM + TN values it multiplies them with. A floor,
    so nothing that could fit is dropped; ptxas's real count comes later.
The product of the ranges holds thousands of valid configurations for stages 08-09, too many to
time. The search keeps those within `radius` steps of the registered default (a step moves one
field to the next value of its range), nearest first. The default is always a candidate, so a
search can confirm it or beat it, never lose it.

On a GPU, tune() takes each candidate in turn: compiles it and reads its registers and local
memory (a candidate whose threads use local memory, spills or a stack array, is recorded and not
timed, unless it is the registered default), verifies it on the shape catalogue (helpers.verify,
float64 reference), then times it at size^3 (helpers.bench.time_variant); cuBLAS is timed in the
same run, before and after. Every candidate leaves a row, failures too (status and error). Rows
are cached, one JSON file per (GPU, variant, kernel source SHA-256, size) under the course's cache
directory (TBT_CACHE_DIR), rewritten after every candidate: an interrupted search resumes where it
stopped, and a repeated one is instant. Edit the kernel and its SHA-256 changes: a fresh search.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from helpers.run import toolchain
from helpers.core import arch
from helpers.core import paths
from helpers.run import backend
from helpers.core import progress
from helpers.measure import resources
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import CourseError, KernelCompileError, VerificationError
from helpers.core.paths import RESULTS_DIR
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant
from helpers.emulator.compiler import cache_dir as emulator_cache
from helpers.measure import bench


def _powers(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**i for i in range(lo.bit_length() - 1, hi.bit_length()) if lo <= 2**i <= hi)


# field name -> the values the search tries (the default's value is added if missing)
RANGES: dict[str, tuple[int, ...]] = {
    "block_x": _powers(1, 1024), "block_y": _powers(1, 1024),   # stage 02
    "tile": _powers(1, 32),                                        # stage 03
    "BM": _powers(16, 256), "BN": _powers(16, 256), "BK": _powers(4, 64),
    "WM": _powers(8, 256), "WN": _powers(8, 256),
    "TM": _powers(1, 32), "TN": _powers(1, 32),
    "PAD": (0, 1, 2, 4, 8),
    "STAGES": (2, 3, 4),
    "MIN_BLOCKS": (1, 2, 3, 4),
}
THREADS = (64, 1024)
DEFAULT_RADIUS = 2

# a row's status
TIMED, VERIFIED = "timed", "verified"
COMPILE_ERROR, VERIFICATION_FAILED, LAUNCH_ERROR = "compile error", "verification failed", "launch error"
LOCAL_MEMORY = "local memory (not timed)"
STATUSES = (TIMED, VERIFIED, COMPILE_ERROR, VERIFICATION_FAILED, LAUNCH_ERROR, LOCAL_MEMORY)

# the catalogue's shapes the CPU emulator runs in seconds: all but the 512^3 one
SMALL_SHAPES = tuple(s for s in verify.CATALOGUE if s.M * s.N * s.K <= 2**23)


# ---- the search space ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Rejected:
    """A configuration of the ranges that is not a candidate, and the rule that dropped it."""
    label: str
    rule: str       # "kernel rule", "threads" or "fits on an SM"
    reason: str


@dataclass(frozen=True)
class SearchSpace:
    variant: str
    arch: str
    radius: int | None
    ranges: dict[str, tuple[int, ...]]
    fixed: tuple[str, ...]                 # fields without a range: kept at the default's value
    configs: tuple[KernelConfig, ...]      # the candidates, the default first, then nearest first
    distances: tuple[int, ...]             # steps of each candidate from the default
    rejected: tuple[Rejected, ...]

    def summary(self) -> str:
        default = self.configs[0]
        where = "in the whole space" if self.radius is None else f"within {self.radius} steps of the registered default"
        lines = [f"{self.variant}: {len(self.configs)} candidates {where} ({default.label()}), for {self.arch}"]
        for name, values in self.ranges.items():
            if name in self.fixed:
                lines.append(f"  {name}: kept at {values[0]} (no range; pass ranges={{'{name}': (...)}} to search it)")
            else:
                lines.append(f"  {name}: {', '.join(map(str, values))}")
        by_rule: dict[str, list[Rejected]] = {}
        for r in self.rejected:
            by_rule.setdefault(r.rule, []).append(r)
        for rule, found in by_rule.items():
            lines.append(f"  left out by {rule}: {len(found)}, e.g. {found[0].label}: {found[0].reason}")
        return "\n".join(lines)


def _variant(variant) -> Variant:
    return stages.variant(variant) if isinstance(variant, str) else variant


def _field_ranges(v: Variant, ranges: dict | None) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    out, fixed = {}, []
    for f in dataclasses.fields(v.config_type):
        default = getattr(v.default, f.name)
        values = (ranges or {}).get(f.name, RANGES.get(f.name))
        if values is None:
            values = (default,)
            fixed.append(f.name)
        out[f.name] = tuple(sorted(set(values) | {default}))
    return out, tuple(fixed)


def _neighbours(ranges: dict[str, tuple[int, ...]], start: dict[str, int], radius: int | None):
    """(distance, values) of every combination of the ranges within `radius` steps of `start`."""
    names = list(ranges)

    def walk(i: int, spent: int, chosen: tuple):
        if i == len(names):
            yield spent, dict(zip(names, chosen))
            return
        values = ranges[names[i]]
        here = values.index(start[names[i]])
        for j, x in enumerate(values):
            cost = spent + abs(j - here)
            if radius is None or cost <= radius:
                yield from walk(i + 1, cost, chosen + (x,))
    return walk(0, 0, ())


def register_floor(config: KernelConfig) -> int:
    """The fewest registers a thread can do with: its TM x TN accumulators and the TM + TN values of
    A and B it multiplies them with (TN = 1 in stage 04); 0 for configurations without a thread tile."""
    tm = getattr(config, "TM", None)
    if tm is None:
        return 0
    tn = getattr(config, "TN", 1)
    return tm * tn + tm + tn


def _search_rule(config: KernelConfig, arch: str) -> tuple[str, str] | None:
    """(rule, reason) when the search leaves this valid configuration out, else None."""
    threads = config.threads()
    if not THREADS[0] <= threads <= THREADS[1]:
        return "threads", f"{threads} threads per block; the search keeps {THREADS[0]} to {THREADS[1]}"
    need = getattr(config, "MIN_BLOCKS", 1)
    try:
        occ = arch.occupancy(arch, threads, register_floor(config), config.static_shared_bytes(),
                                  config.shared_bytes())
    except ValueError as e:
        return "fits on an SM", str(e)
    if occ.active_blocks < need:
        return "fits on an SM", (f"{occ.describe().rstrip('.')}, with registers at their floor of "
                                 f"{register_floor(config)} per thread; MIN_BLOCKS = {need}")
    return None


def search_space(variant, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
                 arch: str = arch.DEFAULT_ARCH) -> SearchSpace:
    """The candidates of a variant (a Variant or its name) and what was left out, by which rule.
    radius=None searches every combination of the ranges (for stages 08-09, hundreds of thousands
    to build: slow). `ranges` replaces RANGES for the fields it names."""
    v = _variant(variant)
    arch = arch.arch_name(arch)
    field_ranges, fixed = _field_ranges(v, ranges)
    start = {f: getattr(v.default, f) for f in field_ranges}
    found, rejected = [], []
    for distance, values in sorted(_neighbours(field_ranges, start, radius),
                                   key=lambda dv: (dv[0], tuple(dv[1].values()))):
        label = ", ".join(f"{k}={x}" for k, x in values.items())
        try:
            config = v.config_type(**values)
        except ValueError as e:
            rejected.append(Rejected(label, "kernel rule", str(e).split("): ", 1)[-1]))
            continue
        broken = _search_rule(config, arch) if distance else None   # the default is always kept
        if broken:
            rejected.append(Rejected(label, *broken))
        else:
            found.append((config, distance))
    return SearchSpace(v.name, arch, radius, field_ranges, fixed, tuple(c for c, _ in found),
                       tuple(d for _, d in found), tuple(rejected))


def candidates(variant, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
               arch: str = arch.DEFAULT_ARCH) -> list[KernelConfig]:
    """The configurations a search of this variant tries: the registered default first, then the
    valid ones nearest to it (see search_space for the rules)."""
    return list(search_space(variant, radius, ranges, arch).configs)


# ---- one candidate ---------------------------------------------------------------------------------
def _error_text(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def _failure_status(e: Exception) -> str:
    if isinstance(e, KernelCompileError):
        return COMPILE_ERROR
    if isinstance(e, VerificationError):
        return VERIFICATION_FAILED
    return LAUNCH_ERROR   # out of resources, an illegal address, a crash or a time-out on the emulator


def _identity(v: Variant, config: KernelConfig, distance: int) -> dict:
    precision = getattr(v, "precision", "fp32")   # rows without "precision" are FP32, as in the ladder
    return {"variant": v.name, "config": config.label(), "fields": asdict(config), "distance": distance,
            "threads": config.threads(), "shared_bytes": config.static_shared_bytes() + config.shared_bytes(),
            **({} if precision == "fp32" else {"precision": precision})}


def _inspect(v: Variant, config: KernelConfig, arch: str | None, shapes, is_default: bool) -> dict:
    """Registers and local memory (ptxas for `arch`, or the GPU's own attributes with arch=None),
    then the catalogue. The row gets a failure status when the candidate stops here."""
    row: dict = {"registers": None, "local_bytes": None, "blocks_per_sm": None}
    try:
        r = resources.kernel_resources(v, config, arch)
        row.update(registers=r.registers, local_bytes=r.local_bytes,
                   blocks_per_sm=r.occupancy.active_blocks if r.occupancy else None, resources_source=r.source)
    except toolchain.ToolchainMissingError as e:   # without ptxas the count is unknown, not fatal
        row["resources_source"] = str(e).split(". ")[0]
    except Exception as e:   # a compile error is a result too
        return {**row, "status": _failure_status(e), "error": _error_text(e)}
    if row["local_bytes"] and not is_default:
        return {**row, "status": LOCAL_MEMORY,
                "error": f"{row['local_bytes']} bytes of local memory per thread (register spills or a stack "
                         f"array, both in DRAM); not timed"}
    try:
        report = verify.check_catalogue(v, config, shapes)
    except Exception as e:
        return {**row, "status": _failure_status(e), "error": _error_text(e)}
    row["verified_shapes"] = len(report.checks)
    if not report.ok:
        return {**row, "status": VERIFICATION_FAILED, "error": str(report)}
    return {**row, "status": VERIFIED}


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


def kernel_sha256(variant) -> str:
    return hashlib.sha256(_variant(variant).path.read_bytes()).hexdigest()


def gpu_slug(gpu_name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA A100-SXM4-80GB' -> 'a100-sxm4-80gb': for file names."""
    name = re.sub(r"^nvidia\s+", "", str(gpu_name).strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


# ---- on the emulator (or anywhere): enumerate and verify ------------------------------------------
def dry_run(variant, count: int = 3, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
            arch: str = arch.DEFAULT_ARCH) -> TuneResult:
    """Any backend, nothing timed: the first `count` candidates (the default and its nearest
    neighbours) compiled by ptxas for `arch` (registers, local memory) and verified on the
    catalogue's small shapes (SMALL_SHAPES) by the current backend."""
    v = _variant(variant)
    space = search_space(v, radius, ranges, arch)
    rows = []
    for config, distance in progress.bar(list(zip(space.configs, space.distances))[:count],
                                         desc=f"verifying {v.name}", unit="config"):
        rows.append({**_identity(v, config, distance),
                     **_inspect(v, config, space.arch, SMALL_SHAPES, config == v.default)})
    return TuneResult(v.name, f"{backend.name()} backend (dry run)", None, kernel_sha256(v), rows)


# ---- on a GPU: search with a cache ------------------------------------------------------------------
def cache_dir() -> Path:
    """Where searches are cached: autotune/ beside the emulator's builds (TBT_CACHE_DIR, else
    ~/.cache/tile-by-tile)."""
    return emulator_cache().parent / "autotune"


def cache_file(gpu_name: str, variant, size: int, directory: Path | str | None = None) -> Path:
    v = _variant(variant)
    return Path(directory or cache_dir()) / f"{gpu_slug(gpu_name)}_{v.name}_{kernel_sha256(v)[:16]}_{size}.json"


def _load_cache(path: Path, key: dict) -> dict:
    empty = {"key": key, "sessions": [], "rows": []}
    if not path.exists():
        return empty
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        warnings.warn(f"ignoring the unreadable autotuning cache {path} ({e}); the search starts afresh")
        return empty
    return data if isinstance(data, dict) and data.get("key") == key else empty


def _save(path: Path, data: dict) -> None:
    """Written whole to a temporary file, then renamed: an interrupted write leaves the old cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


class _GpuRun:
    """What tune() does on the GPU: one session's cuBLAS and provenance, and each candidate."""

    def __init__(self, v: Variant, size: int, repeat: int, command: str):
        self.bench, self.v, self.size, self.repeat, self.command = bench, v, size, repeat, command
        self.cublas_ms: float | None = None

    def gpu(self) -> str:
        return backend.current().device_info().name

    def _cublas(self) -> dict:
        S = self.size
        # TF32 variants (stage 10) compare with cuBLAS in TF32, as helpers.bench's ladder does
        tf32 = getattr(self.v, "precision", "fp32") == "tf32"
        t = self.bench.time_cublas(S, S, S, n_repeat=self.repeat, **({"tf32": True} if tf32 else {}))
        name = "cublas_tf32" if tf32 else "cublas_sgemm"
        return {"variant": name, "M": S, "N": S, "K": S, **asdict(t), "tflops": t.tflops(S, S, S)}

    def begin(self) -> dict:
        before = self._cublas()
        self.cublas_ms = before["median_ms"]
        return {"provenance": self.bench.provenance(self.command), "cublas_before": before}

    def measure(self, config: KernelConfig, is_default: bool) -> dict:
        row = _inspect(self.v, config, None, verify.CATALOGUE, is_default)
        if row["status"] != VERIFIED:
            return row
        S = self.size
        try:
            t, rel = self.bench.time_variant(self.v, S, S, S, config, n_repeat=self.repeat)
        except Exception as e:
            return {**row, "status": _failure_status(e), "error": _error_text(e)}
        return {**row, "status": TIMED, **asdict(t), "tflops": t.tflops(S, S, S),
                "pct_cublas": 100.0 * self.cublas_ms / t.median_ms, "max_rel_diff_vs_cublas": rel}

    def end(self) -> dict:
        return {"cublas_after": self._cublas()}


def tune(variant, size: int = 4096, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
         configs=None, repeat: int = 30, cache: Path | str | None = None) -> TuneResult:
    """On a GPU: every candidate (search_space(variant, radius, ranges) for this GPU's architecture,
    or the `configs` given) verified on the catalogue, then timed at size^3 (median of `repeat`),
    cuBLAS timed before and after. Resumes from, and adds to, the cache (`cache`: its directory)."""
    v = _variant(variant)
    if backend.name() != "gpu":
        found = ", ".join(str(p.relative_to(paths.ROOT)) for p in committed())
        raise CourseError(
            f"tune() times kernels on a GPU; this session runs the CPU emulator, whose times say nothing about a "
            f"GPU. " + (f"Searches measured on a GPU: {found}. " if found else
                        "No autotuning search is committed yet; the earlier hand-picked ones are in "
                        "results/stages_04_05_h200_2026-11-22.json and results/stages_06_09_h200_2026-11-22/. ") +
            f"Without a GPU, dry_run({v.name!r}) (python -m helpers tune {v.name} --dry-run) shows the search "
            f"space and verifies a few candidates.")
    if repeat < 10:
        raise ValueError(f"repeat = {repeat}: a median needs at least 10 timed launches.")
    arch = arch.arch_name(backend.current().device_info().compute_capability)
    if configs is None:
        space = search_space(v, radius, ranges, arch)
        todo = list(zip(space.configs, space.distances))
    else:
        todo = [(c, 0 if c == v.default else -1) for c in configs]   # -1: given, not searched
    command = f"helpers.autotune.tune({v.name!r}, size={size}, radius={radius}, repeat={repeat})"
    run = _GpuRun(v, size, repeat, command)
    return _search(v, size, todo, run, cache_file(run.gpu(), v, size, cache))


def _search(v: Variant, size: int, todo: list[tuple[KernelConfig, int]], run, path: Path) -> TuneResult:
    """The search loop over `run` (tune's _GpuRun; the tests pass a fake): rows already in the cache
    at `path` are reused, the others measured and the cache rewritten after each."""
    gpu, sha = run.gpu(), kernel_sha256(v)
    key = {"gpu": gpu, "variant": v.name, "kernel_sha256": sha, "size": size}
    data = _load_cache(path, key)
    done = {r["config"]: r for r in data["rows"]}
    missing = [c for c, _ in todo if c.label() not in done]
    if missing:
        data["sessions"].append(run.begin())
        _save(path, data)
    session = len(data["sessions"]) - 1
    best = max((r["tflops"] for r in done.values() if r["status"] == TIMED), default=None)
    with progress.bar(todo, desc=f"tuning {v.name}", unit="config") as shown:
        for config, distance in shown:
            if config.label() in done:
                continue
            row = {**_identity(v, config, distance), "M": size, "N": size, "K": size, "session": session,
                   **run.measure(config, config == v.default)}
            done[row["config"]] = row
            data["rows"].append(row)
            _save(path, data)
            if row["status"] == TIMED and (best is None or row["tflops"] > best):
                best = row["tflops"]
            shown.set_postfix_str(f"best {best:.2f} TFLOP/s" if best is not None else "nothing timed yet")
    if missing:
        data["sessions"][-1].update(run.end())
        _save(path, data)
    return TuneResult(v.name, gpu, size, sha, [done[c.label()] for c, _ in todo], data["sessions"], path)


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
        data = json.loads(path.read_text())
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
    v = _variant(variant)
    files = [Path(path)] if path else committed(directory)
    found = []
    for f in files:
        data = json.loads(f.read_text())
        if v.name in data.get("sessions", {}):
            found.append((str(data["provenance"].get("date", "")), f, data))
    if not found:
        where = path or f"{directory}/autotune_*.json"
        raise CourseError(f"no committed search of {v.name} in {where}. On a GPU: python -m helpers tune {v.name} "
                          f"--out results/autotune_<gpu>_<date>.json")
    _, f, data = max(found, key=lambda x: x[0])
    rows = [r for r in data["candidates"] if r["variant"] == v.name]
    return TuneResult(v.name, data["provenance"]["gpu"], data["sizes"][v.name], data["kernels"][v.name]["sha256"],
                      rows, data["sessions"][v.name], f)


# ---- the search at a glance (notebook 11) -------------------------------------------------------------
RULES = ("kernel rule", "threads", "fits on an SM")   # what drops a configuration, in the order checked


def left_out_by(variant, arch: str = arch.DEFAULT_ARCH, **fields) -> tuple[str, str] | None:
    """(rule, reason) when a search leaves this configuration out, else None: it is a candidate of any
    search that reaches it. Fields not given keep the registered default's value. (A search keeps its
    own default whatever the rules say; this function applies them to every configuration.)"""
    v = _variant(variant)
    try:
        config = v.config_type(**{**asdict(v.default), **fields})
    except ValueError as e:
        return "kernel rule", str(e).split("): ", 1)[-1]
    return _search_rule(config, arch.arch_name(arch))


def space_counts(variants=None, radius: int | None = DEFAULT_RADIUS, arch: str = arch.DEFAULT_ARCH) -> list[dict]:
    """Per variant (default: every registered one): how many combinations its ranges hold, how many
    lie within `radius` steps of the default, how many of those are candidates and how many each
    rule dropped."""
    out = []
    for v in (variants or stages.variants()):
        space = search_space(v, radius, arch=arch)
        combinations = 1
        for values in space.ranges.values():
            combinations *= len(values)
        row = {"variant": space.variant, "fields searched": len(space.ranges) - len(space.fixed),
               "in the ranges": combinations, "reached": len(space.configs) + len(space.rejected),
               "candidates": len(space.configs)}
        row.update({f"left out: {rule}": sum(r.rule == rule for r in space.rejected) for rule in RULES})
        out.append(row)
    return out


def committed_searches(directory: Path | str = RESULTS_DIR) -> list[TuneResult]:
    """Every variant's newest committed search (load()), in registry order; variants no longer
    registered are skipped. No GPU needed."""
    names = set()
    for f in committed(directory):
        names |= set(json.loads(f.read_text()).get("sessions", {}))
    order = [v.name for v in stages.variants()]
    return [load(name, directory=directory) for name in order if name in names]


def _default_row(result: TuneResult) -> dict | None:
    """The row of the configuration the search started from (its registered default then)."""
    return next((r for r in result.rows if r.get("distance") == 0), None)


def search_summary(results: list[TuneResult]) -> list[dict]:
    """Per search: candidates, how many were timed, the default's and the best's TFLOP/s, what the best
    gained over the default, and how far cuBLAS moved during the search (a gain smaller than that is
    not told apart from noise). Every number read from the rows."""
    out = []
    for r in results:
        default, best = _default_row(r), r.best
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

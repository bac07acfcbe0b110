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

The rows a search leaves (TuneResult) and the committed searches (record, load, the summaries) are
helpers/measure/autotune_results.py's; this module re-exports them, so `autotune.load(...)` works too.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
import warnings
from dataclasses import asdict
from pathlib import Path

from helpers.run import toolchain
from helpers.core.arch import arch_name
from helpers.core import paths, results_files
from helpers.run import backend
from helpers.core import progress
from helpers.measure import resources
from helpers.core import stages
from helpers.measure import verify
from helpers.core.errors import CourseError, InputError, KernelCompileError, VerificationError
from helpers.core.configs import KernelConfig
from helpers.core.stages import Variant
from helpers.measure.tuning_space import DEFAULT_RADIUS, search_space
from helpers.emulator.compiler import cache_dir as emulator_cache
from helpers.measure import bench
# the rows and the committed searches, reachable here too (notebook 11 and the command line use one module)
from helpers.measure.autotune_results import (COMPILE_ERROR, LAUNCH_ERROR, LOCAL_MEMORY, STATUSES, TIMED,  # noqa: F401
                                              VERIFICATION_FAILED, VERIFIED, TuneResult, committed,
                                              committed_searches, default_row, gpu_slug, load, record,
                                              search_summary, searches_label, seconds_per_candidate)

# the catalogue's shapes the CPU emulator runs in seconds: all but the 512^3 one
SMALL_SHAPES = tuple(s for s in verify.CATALOGUE if s.M * s.N * s.K <= 2**23)


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


def kernel_sha256(variant) -> str:
    return hashlib.sha256(stages.resolve(variant).path.read_bytes()).hexdigest()


# ---- on the emulator (or anywhere): enumerate and verify ------------------------------------------
def dry_run(variant, count: int = 3, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
            arch: str | None = None) -> TuneResult:
    """Any backend, nothing timed: the first `count` candidates (the default and its nearest
    neighbours) compiled by ptxas for `arch` (default: backend.arch(), the learner's GPU, else TBT_ARCH
    or sm_90) (registers, local memory) and verified on the catalogue's small shapes (SMALL_SHAPES) by
    the current backend."""
    v = stages.resolve(variant)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InputError(f"count = {count!r}: a dry run verifies a whole number of candidates from 1 up. Fix: e.g. 3.")
    space = search_space(v, radius, ranges, arch)
    rows = []
    for config, distance in progress.bar(list(zip(space.configs, space.distances))[:count],
                                         desc=f"verifying {v.name}", unit="config"):
        rows.append({**_identity(v, config, distance),
                     **_inspect(v, config, space.arch, SMALL_SHAPES, config == v.default_for(space.arch))})
    return TuneResult(v.name, f"{backend.name()} backend (dry run)", None, kernel_sha256(v), rows)


# ---- on a GPU: search with a cache ------------------------------------------------------------------
def cache_dir() -> Path:
    """Where searches are cached: autotune/ beside the emulator's builds (TBT_CACHE_DIR, else
    ~/.cache/tile-by-tile)."""
    return emulator_cache().parent / "autotune"


def cache_file(gpu_name: str, variant, size: int, directory: Path | str | None = None) -> Path:
    v = stages.resolve(variant)
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
    if not isinstance(data, dict) or data.get("key") != key:
        return empty
    rows, sessions = data.get("rows"), data.get("sessions")   # damaged rows are measured again
    whole = [r for r in rows if isinstance(r, dict) and isinstance(r.get("config"), str) and "status" in r and
             (r["status"] != TIMED or results_files.timings_ok(r))] if isinstance(rows, list) else []
    if not isinstance(rows, list) or len(whole) != len(rows) or not isinstance(sessions, list):
        warnings.warn(f"the autotuning cache {path} holds damaged rows (a key missing, a timing NaN or not above 0)")
    return {**data, "rows": whole, "sessions": sessions if isinstance(sessions, list) else []}


def _save(path: Path, data: dict) -> None:
    """Written whole to a temporary file, then renamed: an interrupted write leaves the old cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # one per process: two searches never share it
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
    v = stages.resolve(variant)
    if backend.name() != "gpu":
        found = ", ".join(str(p.relative_to(paths.ROOT)) for p in committed())
        raise CourseError(
            f"tune() times kernels on a GPU; this session runs the CPU emulator, whose times say nothing about a "
            f"GPU. " + (f"Searches measured on a GPU: {found}. " if found else
                        "No autotuning search is committed yet; the earlier hand-picked ones are in "
                        "results/stages_04_05_h200_2026-11-22.json and results/stages_06_09_h200_2026-11-22/. ") +
            f"Without a GPU, dry_run({v.name!r}) (python -m helpers tune {v.name} --dry-run) shows the search "
            f"space and verifies a few candidates.")
    bench.check_timing(size, size, size, repeat, min_repeat=10)
    arch = arch_name(backend.current().device_info().compute_capability)
    if configs is None:
        space = search_space(v, radius, ranges, arch)
        todo = list(zip(space.configs, space.distances))
    else:
        todo = [(c, 0 if c == v.default_for(arch) else -1) for c in configs]   # -1: given, not searched
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
                   **run.measure(config, config == v.default_for(backend.arch()))}
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

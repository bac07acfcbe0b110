"""Measuring the dispatcher: its table of a GPU (`python -m helpers dispatch-table`), and reading back the sweeps
that check the library call against cuBLAS (`python -m helpers sweep`: helpers/measure/library_sweep.py).

The table times each candidate's plan as the library runs it (sgemm_plans.Plan.run: the copies into padded
operands, a new output, the products and the reduction of split-K; the plan looked up once, not per call),
each verified against cuBLAS FP32 on the same data first, the median of many calls, beside cuBLAS FP32 (TF32
off) in the same run.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
from pathlib import Path

from helpers.core import paths, progress, results_files
from helpers.core.errors import InputError, VerificationError
from helpers.core.stages import variant
from helpers.measure import bench
from helpers.measure.autotune import gpu_slug
from helpers.run import backend, dispatch
from helpers.run.sgemm import plan

CALIBRATION = 4096       # each candidate tile's rate: timed at 4096^3, no split
# The shapes the table measures: squares and odd sizes around a wave's worth of tiles, K = 512, long K
# with a small C, tall and skinny. The dispatcher's sweep shapes add shapes the table does not hold
# (library_sweep.DEFAULT_SHAPES adds more).
TABLE_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                (1000, 1000, 1000), (3000, 3000, 3000), (4095, 4095, 4095), (4097, 4097, 4097),
                (4096, 4096, 512), (1024, 1024, 16384), (512, 512, 32768), (8192, 256, 4096), (256, 8192, 4096))
SWEEP_SHAPES = ((512, 512, 512), (1536, 1536, 1536), (2000, 2000, 2000), (4096, 4096, 4096), (6000, 6000, 6000),
                (4095, 4095, 4095), (4097, 4097, 4097), (2048, 2048, 8192), (768, 768, 12288), (2048, 512, 8192),
                (16384, 1024, 1024), (3000, 5000, 700), (1000, 1000, 1000), (4096, 4096, 512))
AGREEMENT = bench.AGREEMENT["fp32"]


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """'4096,1000x1000x1000,2048x512x8192' -> shapes; a single number is a square."""
    shapes = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        try:
            dims = tuple(int(x) for x in item.lower().split("x"))
        except ValueError:
            dims = ()
        if len(dims) not in (1, 3) or min(dims) < 1:
            raise InputError(f"{item!r} is not a size: give N (a square) or MxNxK, e.g. --sizes 4096,1000x1000x4000.")
        shapes.append(dims * 3 if len(dims) == 1 else dims)
    if not shapes:
        raise InputError("no sizes given: e.g. --sizes 4096,1000x1000x4000.")
    return tuple(shapes)


def _operands(M: int, N: int, K: int, seed: int):
    import cupy as cp
    rng = cp.random.default_rng(seed)
    return rng.uniform(-1, 1, (M, K), dtype=cp.float32), rng.uniform(-1, 1, (K, N), dtype=cp.float32)


def time_choice(choice: dispatch.Choice, A, B, ref, n_repeat: int, force_split_kernel: bool = False) -> dict:
    """The choice's library call verified against `ref` (cuBLAS FP32 of A B), then timed.
    force_split_kernel: run 11_split_k even with SPLITS = 1 (to calibrate its rate)."""
    import cupy as cp
    M, N, K = A.shape[0], B.shape[1], A.shape[1]
    p = plan(M, N, K, kind="cupy", choice=choice, variant_name=dispatch.SPLIT_VARIANT if force_split_kernel else None)
    out = p.run(A, B, poison=True)
    rel = float(cp.max(cp.abs(out - ref)) / cp.max(cp.abs(ref)))
    if not rel < AGREEMENT:
        raise VerificationError(f"{choice.label()} differs from cuBLAS at {M}x{N}x{K}: largest difference "
                                f"{rel:.2e} of the largest element; not timing it.")
    t = bench.time_call(lambda: p.run(A, B), n_warmup=5, n_repeat=n_repeat)
    return {"tile": choice.tile, "splits": choice.config.SPLITS, "pad": choice.pad, "median_ms": t.median_ms,
            "q1_ms": t.q1_ms, "q3_ms": t.q3_ms, "tflops": t.tflops(M, N, K), "max_rel_diff_vs_cublas": rel}


def candidates(M: int, N: int, K: int, machine: dispatch.Machine, per_tile: int = 3) -> list[dispatch.Choice]:
    """What the table times at a shape: each tile whole (09's kernel; padded and not, where N or K is not a
    multiple of 4), and its `per_tile` best splits by the wave model (with this run's calibrated rates)."""
    out = []
    pads = sorted({False, dispatch.needs_padding(N, K)})
    for tile, cfg in dispatch.CANDIDATES.items():
        out += [dispatch.Choice(cfg, pad, "table", "candidate") for pad in pads]
        splits = [s for _, t, s in dispatch.ranked(M, N, K, machine) if t == tile and s > 1][:per_tile]
        out += [dispatch.Choice(dataclasses.replace(cfg, SPLITS=s), pads[-1], "table", "candidate") for s in splits]
    return out


def machine_row(rates: dict[str, float], split_rates: dict[str, float]) -> dict:
    d = backend.current().device_info()
    return {"gpu": d.name, "sm_count": d.sm_count, "dram_tbs": round(d.memory_bandwidth_tbs, 3),
            "fp32_peak_tflops": round(d.fp32_peak_tflops, 2), "rates": rates, "split_rates": split_rates,
            "rates_note": f"each tile's TFLOP/s at {CALIBRATION}^3, measured in this run: rates with "
                          f"{dispatch.WHOLE_VARIANT}, split_rates with {dispatch.SPLIT_VARIANT} at SPLITS=1"}


def build_table(shapes=TABLE_SHAPES, n_repeat: int = 30, command: str | None = None) -> dict:
    """On a GPU: each candidate tile's rates at CALIBRATION^3 (whole and split kernels), then at each shape
    the candidates timed and the fastest kept, cuBLAS FP32 beside it."""
    import cupy as cp
    bench.check_timing(CALIBRATION, CALIBRATION, CALIBRATION, n_repeat)
    for M, N, K in shapes:
        bench.check_timing(M, N, K, n_repeat)
    A, B = _operands(CALIBRATION, CALIBRATION, CALIBRATION, 0)
    ref = cp.matmul(A, B)
    rates, split_rates = {}, {}
    for tile, cfg in dispatch.CANDIDATES.items():
        rates[tile] = round(time_choice(dispatch.Choice(cfg, False, "table", "calibration"), A, B, ref,
                                        n_repeat)["tflops"], 3)
        split_rates[tile] = round(time_choice(dispatch.Choice(cfg, False, "table", "calibration"), A, B, ref,
                                              n_repeat, force_split_kernel=True)["tflops"], 3)
    row = machine_row(rates, split_rates)
    machine = dispatch.Machine(row["gpu"], row["sm_count"], row["dram_tbs"], row["fp32_peak_tflops"], rates, split_rates)
    rows = []
    for M, N, K in progress.bar(shapes, desc="dispatch table", unit="shape"):
        A, B = _operands(M, N, K, 1)
        ref = cp.matmul(A, B)
        tried = [time_choice(c, A, B, ref, n_repeat) for c in candidates(M, N, K, machine)]
        out = cp.empty((M, N), cp.float32)
        cublas = bench.time_call(lambda: cp.matmul(A, B, out=out), n_repeat=n_repeat)
        best = min(tried, key=lambda r: r["median_ms"])
        rows.append({"M": M, "N": N, "K": K, "best": best, "cublas_ms": cublas.median_ms,
                     "pct_cublas": 100 * cublas.median_ms / best["median_ms"], "tried": tried})
    return {"provenance": bench.provenance(command), "variants": [dispatch.WHOLE_VARIANT, dispatch.SPLIT_VARIANT],
            "kernel_sha256": {v: _kernel_sha(v) for v in (dispatch.WHOLE_VARIANT, dispatch.SPLIT_VARIANT)},
            "machine": row, "shapes": rows}


def _kernel_sha(name: str) -> str:
    return hashlib.sha256(variant(name).path.read_bytes()).hexdigest()


def write(data: dict, kind: str, path: Path | str | None = None) -> Path:
    """results/<kind>_<gpu>_<date>.json unless a path is given."""
    if path is None:
        date = _dt.date.today().isoformat()
        gpu = data["provenance"]["gpu"]
        path = paths.RESULTS_DIR / f"{kind}_{gpu_slug(gpu)}_{date}.json"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def committed_sweeps(directory: Path | str = paths.RESULTS_DIR) -> list[Path]:
    """The sweeps in results/ (sweep_<gpu>_<date>.json), oldest first."""
    return sorted(Path(directory).glob("sweep_*.json"), key=lambda p: (p.stem.rsplit("_", 1)[-1], p.name))


def load_sweep(path: Path | str | None = None) -> dict:
    """A sweep written by `python -m helpers sweep` (default: the newest committed), its rows checked."""
    if path is None:
        found = committed_sweeps()
        if not found:
            raise InputError("no sweep in results/ (sweep_*.json). Fix: on a GPU, run `python -m helpers sweep`.")
        path = found[-1]
    data = results_files.read_json(path)
    rows = results_files.require(path, data, "rows", list)
    for i, row in enumerate(rows):
        results_files.check_timings(path, row, f"rows[{i}]", keys=("dispatcher_ms", "cublas_ms", "fixed_ms"))
    data["path"] = paths.rel(Path(path))
    return data

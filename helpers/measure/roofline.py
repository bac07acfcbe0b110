"""The roofline: how fast a kernel could be, given how many FLOPs it does per byte of DRAM traffic.

Two roofs bound every kernel: the FP32 peak (SMs x FP32 lanes per SM x 2 x clock) and DRAM
bandwidth x arithmetic intensity. They meet at the ridge point, peak / bandwidth FLOP/byte.
Measured ceilings sit below them: cuBLAS SGEMM at 4096^3 (TF32 off) and a large device-to-device
copy. A kernel is a point: its arithmetic intensity from helpers.intensity (the block model of
DRAM traffic, evaluated at the measured M, N, K) and its measured TFLOP/s.

    ceilings, points = reference_roofline("NVIDIA H200")   # no GPU: datasheet + committed results
    plot_roofline(ceilings, points)

    ceilings = measure_ceilings()                           # on a GPU
    ceilings, points = measured_roofline()                  # on a GPU: everything measured now

Nothing here invents a number: peaks come from the device's properties (on a GPU) or from the
datasheet table in helpers.gpu_specs (labelled "datasheet"), and every point and measured
ceiling comes from a GPU measurement, made now or read from a results/ file that names the GPU
and the date.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from helpers.run import backend
from helpers.core import gpu_specs
from helpers.measure import intensity
from helpers.core import results_files
from helpers.core import stages
from helpers.core.device import DeviceInfo
from helpers.core.paths import RESULTS_DIR
from helpers.measure.gpu_results import gpu_results
from helpers.core.errors import CourseError
from helpers.measure import bench

DEVICE_PROPERTIES = "device properties"
CUBLAS_SIZE = 4096
MIN_COPY_BYTES = 2**30
ROOFLINE_LEVELS = ("dram", "ideal", "requests")   # intensities measured against DRAM bandwidth
# points of variants without a colour in helpers.figures.VARIANT_COLORS (the rest of ColorBrewer Dark2)

@dataclass(frozen=True)
class Ceilings:
    """The roofs of one GPU (TFLOP/s and TB/s), where each came from, and measured ceilings if any."""
    gpu: str
    fp32_tflops: float
    dram_tbs: float
    source: str                       # "device properties" or "datasheet"
    detail: str = ""
    cublas_tflops: float | None = None
    cublas_source: str | None = None  # GPU, date, size, file
    copy_tbs: float | None = None
    copy_source: str | None = None

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.fp32_tflops / self.dram_tbs

    def attainable(self, flop_per_byte: float) -> float:
        """min(peak, bandwidth x intensity), in TFLOP/s."""
        return min(self.fp32_tflops, self.dram_tbs * flop_per_byte)

    @classmethod
    def from_device(cls, info: DeviceInfo) -> "Ceilings":
        """From a GPU's properties: SMs x lanes x 2 x clock, and memory clock x bus width."""
        if info.fp32_peak_tflops is None or info.memory_bandwidth_tbs is None:
            raise CourseError(f"{info.name} reports no SM count, clock or memory bus (the {info.backend} backend); "
                              f"use Ceilings.from_spec(gpu_name) for a GPU's datasheet figures.")
        return cls(info.name, info.fp32_peak_tflops, info.memory_bandwidth_tbs, DEVICE_PROPERTIES,
                   f"{info.sm_count} SMs x {info.fp32_lanes_per_sm} FP32 lanes x 2 x {info.clock_ghz:.2f} GHz; "
                   f"DRAM from memory clock x bus width")

    @classmethod
    def from_spec(cls, gpu_name: str) -> "Ceilings":
        s = gpu_specs.spec(gpu_name)
        return cls(gpu_name, s.fp32_tflops, s.dram_tbs, s.source, s.label())


@dataclass(frozen=True)
class Point:
    """One measured kernel on the roofline."""
    label: str
    intensity_flop_per_byte: float
    tflops: float
    source: str                       # where and when it was measured
    variant: str | None = None


# ---- on a GPU ---------------------------------------------------------------------------------
def _require_gpu(what: str):
    if backend.name() != "gpu":
        raise CourseError(f"{what} measures on a GPU; this session runs the CPU emulator, whose speed says "
                          f"nothing about a GPU. Use reference_roofline(gpu_name) for datasheet roofs and the "
                          f"GPU measurements committed in results/.")


def measure_ceilings(size: int = CUBLAS_SIZE, copy_bytes: int = MIN_COPY_BYTES, n_warmup: int = 5,
                     n_repeat: int = 30, save_to: str | Path | None = None) -> Ceilings:
    """On a GPU: the roofs from the device's properties, plus two measured ceilings, both timed
    with cupyx.profiler.benchmark (median): cuBLAS SGEMM (cupy.matmul, TF32 off) at size^3, and a
    device-to-device copy of `copy_bytes` (at least 1 GiB, far beyond L2) counting the bytes read
    and written. `save_to` writes them as a results file with provenance."""
    _require_gpu("measure_ceilings")
    if copy_bytes < MIN_COPY_BYTES:
        raise ValueError(f"copy_bytes must be at least {MIN_COPY_BYTES} (1 GiB): a smaller copy can run from L2.")
    import cupy as cp
    info = backend.current().device_info()
    cublas = bench.time_cublas(size, size, size, n_warmup, n_repeat)   # refuses CUPY_TF32
    src = cp.ones(copy_bytes, dtype=cp.uint8)
    dst = cp.empty_like(src)
    copy = bench.time_call(lambda: dst.data.copy_from_device_async(src.data, copy_bytes), n_warmup, n_repeat)
    del src, dst
    prov = bench.provenance(f"helpers.roofline.measure_ceilings(size={size}, copy_bytes={copy_bytes}, "
                            f"n_warmup={n_warmup}, n_repeat={n_repeat})")
    when = f"measured on {info.name}, {prov['date'][:10]}"
    cublas_tflops = cublas.tflops(size, size, size)
    copy_tbs = 2 * copy_bytes / (copy.median_ms * 1e-3) / 1e12
    result = replace(Ceilings.from_device(info),
                     cublas_tflops=cublas_tflops, cublas_source=f"cuBLAS SGEMM {size}x{size}x{size}, TF32 off, {when}",
                     copy_tbs=copy_tbs, copy_source=f"{copy_bytes / 2**30:g} GiB device copy (read + write), {when}")
    if save_to is not None:
        cublas_row = {"variant": "cublas_sgemm", "config": "cupy.matmul, TF32 off", "M": size, "N": size, "K": size,
                      "median_ms": cublas.median_ms, "q1_ms": cublas.q1_ms, "q3_ms": cublas.q3_ms,
                      "repeats": cublas.repeats, "tflops": cublas_tflops, "pct_cublas": 100.0}
        data = {"provenance": prov, "rows": [cublas_row],
                "ceilings": {"fp32_peak_tflops": result.fp32_tflops, "dram_tbs": result.dram_tbs,
                             "peak_source": f"{DEVICE_PROPERTIES}: {result.detail}",
                             "cublas_tflops": cublas_tflops, "cublas_size": size,
                             "copy_tbs": copy_tbs, "copy_bytes": copy_bytes, "copy_median_ms": copy.median_ms,
                             "copy_q1_ms": copy.q1_ms, "copy_q3_ms": copy.q3_ms, "copy_repeats": copy.repeats}}
        Path(save_to).write_text(json.dumps(data, indent=1) + "\n")
    return result


def measured_roofline(variants=None, size: int = CUBLAS_SIZE, level: str = "dram", n_repeat: int = 20,
                      ceilings: Ceilings | None = None) -> tuple[Ceilings, list[Point]]:
    """On a GPU: measured ceilings and every variant (default configuration) timed at size^3 now."""
    _require_gpu("measured_roofline")
    ceilings = ceilings or measure_ceilings(size)
    rows = bench.ladder(size, tuple(variants or stages.variants()), n_repeat=n_repeat)
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    source = f"{size}x{size}x{size}, measured on {ceilings.gpu}, {date}"
    return ceilings, points_from_rows([r for r in rows if r["variant"] != "cublas_sgemm"], source, level)


# ---- from rows and committed results ------------------------------------------------------------
def _check_level(level: str) -> None:
    if level not in ROOFLINE_LEVELS:
        raise ValueError(f"the roofline's slope is DRAM bandwidth, so its intensity is FLOPs per DRAM byte: "
                         f"level must be one of {', '.join(ROOFLINE_LEVELS)}, not {level!r}.")


def config_from_row(variant: stages.Variant, row: dict):
    """The configuration a results row was measured with: its 'config' label ('block_x=32, block_y=32'),
    or the default when the row has none (helpers.display.measure times the default). None when the
    label does not describe a configuration of this variant."""
    label = row.get("config")
    if not label:
        return variant.default
    try:
        fields = dict(part.split("=", 1) for part in re.split(r",\s*", label.strip()))
        return variant.config(**{k.strip(): int(v) for k, v in fields.items()})
    except (ValueError, TypeError):
        return None


def points_from_rows(rows, source: str, level: str = "dram", label_shape: bool = False) -> list[Point]:
    """Timing rows (dicts with variant, M, N, K, tflops, optional config) of registered variants as
    points: intensity from the variant's model at the row's shape and configuration. level="smem": FLOP per byte
    loaded from shared memory, for the shared-memory roofline (rows whose kernel loads none are left out)."""
    if level != "smem":
        _check_level(level)
    points = []
    for r in rows:
        v = stages.variant(r["variant"])
        config = config_from_row(v, r)
        if config is None:
            continue
        x = intensity.intensity(v, int(r["M"]), int(r["N"]), int(r["K"]), config).level(level)
        if x is None:
            continue
        label = v.name + (f" {r['M']}x{r['N']}x{r['K']}" if label_shape else "")
        points.append(Point(label, x, float(r["tflops"]), source, v.name))
    return points


def _same_gpu(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    sa, sb = gpu_specs.lookup(a), gpu_specs.lookup(b)
    return (sa is not None and sa is sb) or gpu_specs.normalise(a) == gpu_specs.normalise(b)


def _registered_results(gpu_name: str, directory) -> list[tuple[dict, dict, str, str]]:
    """(row, provenance, label, file) for every committed row of a registered variant or cuBLAS measured on
    this GPU, read through helpers.display.gpu_results."""
    out, seen = [], set()
    for s in stages.REGISTRY:
        if not s.variants:
            continue
        for rs in gpu_results(s.id, directory).sets:
            if not _same_gpu(rs.provenance.get("gpu"), gpu_name):
                continue
            for r in rs.rows:
                key = (rs.file, r["variant"], r["M"], r["N"], r["K"], r.get("config"))
                if key not in seen:
                    seen.add(key)
                    out.append((r, rs.provenance, rs.label, rs.file))
    return out


def _ceiling_files(gpu_name: str, directory) -> list[tuple[dict, dict, str]]:
    """(ceilings, provenance, file) from results files written by measure_ceilings(save_to=...)."""
    return [(data["ceilings"], data["provenance"], path.name)
            for path, data in results_files.with_provenance(directory)
            if isinstance(data.get("ceilings"), dict) and _same_gpu(data["provenance"].get("gpu"), gpu_name)]


def _when(prov: dict) -> str:
    return f"measured on {prov.get('gpu')}, {str(prov.get('date') or 'an unrecorded date')[:10]}"


def committed_ceilings(gpu_name: str, directory: Path | str = RESULTS_DIR) -> Ceilings | None:
    """The roofs of the newest committed ceilings file of this GPU (measure_ceilings(save_to=...)):
    the peak and DRAM bandwidth from the device's properties, cuBLAS and the copy as measured. None
    when no such file is committed."""
    found = _ceiling_files(gpu_name, directory)
    if not found:
        return None
    c, prov, name = max(found, key=lambda f: str(f[1].get("date") or ""))
    detail = str(c.get("peak_source", "")).removeprefix(f"{DEVICE_PROPERTIES}: ")
    when = f"{_when(prov)} (`results/{name}`)"
    size = c.get("cublas_size")
    return Ceilings(prov.get("gpu", gpu_name), float(c["fp32_peak_tflops"]), float(c["dram_tbs"]), DEVICE_PROPERTIES,
                    detail, c.get("cublas_tflops"),
                    f"cuBLAS SGEMM {size}x{size}x{size}, TF32 off, {when}" if c.get("cublas_tflops") else None,
                    c.get("copy_tbs"),
                    f"{c.get('copy_bytes', 0) / 2**30:g} GiB device copy (read + write), {when}"
                    if c.get("copy_tbs") else None)


def reference_roofline(gpu_name: str = "NVIDIA H200", level: str = "dram", all_shapes: bool = False,
                       directory: Path | str = RESULTS_DIR) -> tuple[Ceilings, list[Point]]:
    """No GPU needed: roofs from the datasheet table, measured ceilings and points only from committed
    results files of this GPU. Per variant, the largest measured shape (all shapes with all_shapes=True);
    of repeated measurements, the most recent. cuBLAS: the most recent at 4096^3 (else the largest)."""
    _check_level(level)
    ceilings = Ceilings.from_spec(gpu_name)
    names = {v.name for v in stages.variants()}
    found = _registered_results(gpu_name, directory)

    latest: dict[tuple, tuple] = {}
    for r, prov, label, _ in found:
        if r["variant"] not in names:
            continue
        # of a tuning run's candidates the registered configuration; of repeats the most recent
        rank = (r.get("config") in (None, stages.variant(r["variant"]).default.label()), str(prov.get("date") or ""))
        key = (r["variant"], r["M"], r["N"], r["K"])
        if key not in latest or rank > latest[key][3]:
            latest[key] = (r, prov, label, rank)
    if not all_shapes:
        largest: dict[str, tuple] = {}
        for (v, M, N, K), item in latest.items():
            if v not in largest or M * N * K > largest[v][0]:
                largest[v] = (M * N * K, item[:3])
        chosen = [item for _, item in largest.values()]
    else:
        chosen = [item[:3] for item in latest.values()]
    points = []
    for r, prov, label in sorted(chosen, key=lambda i: (i[0]["variant"], i[0]["M"] * i[0]["N"] * i[0]["K"])):
        points += points_from_rows([r], f"{r['M']}x{r['N']}x{r['K']}, {label}", level, label_shape=all_shapes)

    # measured ceilings: cuBLAS from any results file of this GPU, the copy from ceilings files
    cublas = [(r["M"] == r["N"] == r["K"] == CUBLAS_SIZE, r["M"] * r["N"] * r["K"], str(prov.get("date") or ""),
               float(r["tflops"]), f"cuBLAS SGEMM {r['M']}x{r['N']}x{r['K']}, TF32 off, {_when(prov)} (`{file}`)")
              for r, prov, _, file in found if r["variant"] == "cublas_sgemm"]
    cublas += [(c.get("cublas_size") == CUBLAS_SIZE, (c.get("cublas_size") or 0) ** 3, str(prov.get("date") or ""),
                float(c["cublas_tflops"]), f"cuBLAS SGEMM {c.get('cublas_size')}x{c.get('cublas_size')}x{c.get('cublas_size')}, TF32 off, {_when(prov)} (`results/{f}`)")
               for c, prov, f in _ceiling_files(gpu_name, directory) if c.get("cublas_tflops")]
    if cublas:
        best = max(cublas, key=lambda c: c[:3])
        ceilings = replace(ceilings, cublas_tflops=best[3], cublas_source=best[4])
    copies = [(str(prov.get("date") or ""), float(c["copy_tbs"]),
               f"{c.get('copy_bytes', 0) / 2**30:g} GiB device copy (read + write), {_when(prov)} (`results/{f}`)")
              for c, prov, f in _ceiling_files(gpu_name, directory) if c.get("copy_tbs")]
    if copies:
        best = max(copies)
        ceilings = replace(ceilings, copy_tbs=best[1], copy_source=best[2])
    return ceilings, points



"""Stage 12's steps past the stage, as an H100 measured them (notebook 12, section 9): the TMA-store epilogue
(EPILOGUE = 1), ping-pong consumers (PINGPONG = 1), clusters of two sharing A's tile by multicast (CLUSTER = 2), and
one consumer warpgroup alone (CONSUMERS = 1, no step: the speed ping-pong's turns leave the tensor cores), each beside
the stage's kernel and cuBLAS TF32 with beta = 0 and 1 (tools/measure_12_steps.py), under Nsight Compute
(tools/experiments/ncu_12_steps.py), and the two experiments that found why the first cluster kernel ran at half
speed (tools/experiments/cluster_grid.py, cluster_arrive.py)."""

from __future__ import annotations

import csv
import io
import statistics

import pandas as pd

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR

RESULTS = RESULTS_DIR / "stage_12_h100_2026-11-28_steps"
STEPS_RUN = RESULTS / "final_run" / "measure_12_steps.json"            # after the cluster's arrivals were fixed
FIRST_RUN = RESULTS / "first_run" / "measure_12_steps.json"            # the first cluster kernel (release.cluster)
BM128_RUN = RESULTS / "bm128_run" / "measure_12_steps.json"            # 128 x 128 tiles, with and without clusters
NCU = RESULTS / "final_run" / "ncu" / "ncu_12_steps_metrics.csv"
NCU_FIRST = RESULTS / "ncu_first_run" / "ncu_12_steps_metrics.csv"
NCU_SECTIONS = NCU.with_name("ncu_12_steps_sections.csv")                # Nsight Compute's sections, the same launches
NCU_FIRST_SECTIONS = NCU_FIRST.with_name("ncu_12_steps_sections.csv")
CLUSTER_GRID = RESULTS / "cluster_grid.json"
CLUSTER_ARRIVE = RESULTS / "cluster_arrive.json"
# a step's short name -> its label in the runs ("what")
STEPS = {"cublas_tf32": "cuBLAS TF32", "stage": "12_warp_specialized", "epilogue": "EPILOGUE=1",
         "pingpong": "PINGPONG=1", "consumers1": "CONSUMERS=1", "cluster": "CLUSTER=2",
         "bm128": "BM=128", "bm128_cluster": "BM=128,CLUSTER=2"}   # the last two: BM128_RUN
# a kernel's short name -> how Nsight Compute names it (the start of its name)
NCU_KERNELS = {"stage": "void sgemm_warp_specialized<256, 2, 4, 0, 0, 1, 0>",
               "epilogue": "void sgemm_warp_specialized<256, 2, 4, 1, 0, 1, 0>",
               "pingpong": "void sgemm_warp_specialized<256, 2, 4, 0, 1, 1, 0>",
               "cluster": "void sgemm_warp_specialized_cluster<256, 2, 4, 0, 0, 2>", "cublas_tf32": "sm90_xmma_gemm"}
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
# cluster_arrive.json's labels (the first kernel was "as it is": release.cluster on both arrivals)
ARRIVALS = {"release_cluster": "CLUSTER = 2, as it is: release.cluster on both arrivals",
            "default": "CLUSTER = 2, default semantics (release.cta) on both",
            "own_local": "CLUSTER = 2, own block local, the peer's release.cluster",
            "stage": "stage's kernel (CLUSTER = 1)"}


def measurements(path=STEPS_RUN) -> dict:
    return results_files.read_json(path)


def rows(step: str, n: int, beta: float, data: dict | None = None) -> list[dict]:
    data = data or measurements()
    return [r for r in data["rows"] if r["what"] == STEPS[step] and r["n"] == n and r["beta"] == beta]


def value(step: str, n: int, beta: float, key: str, which: str = "median", data: dict | None = None) -> float:
    """A step's TFLOP/s ('tflops') or % of cuBLAS TF32 ('pct_cublas_tf32') at n³ and beta: median, min or max over
    the rounds."""
    values = [r[key] for r in rows(step, n, beta, data)]
    return {"median": statistics.median, "min": min, "max": max}[which](values)


def gain_pct(step: str, n: int, beta: float, data: dict | None = None) -> float:
    """How much faster (%) the step's median ran than the stage's kernel's, at n³ and beta (negative: slower)."""
    return 100.0 * (value(step, n, beta, "tflops", data=data) / value("stage", n, beta, "tflops", data=data) - 1)


def table(data: dict | None = None) -> pd.DataFrame:
    """Every step at every size and beta: median TFLOP/s and % of cuBLAS TF32 over the rounds, with their range, and
    the median SM clock of the timings."""
    data = data or measurements()
    out = []
    for n in sorted({r["n"] for r in data["rows"]}):
        for step in STEPS:
            for beta in (0.0, 1.0):
                mine = rows(step, n, beta, data)
                if not mine:
                    continue
                pct = [r["pct_cublas_tf32"] for r in mine]
                mhz = [r["clocks"]["sm_mhz_median"] for r in mine if r["clocks"].get("samples")]
                out.append({"size": f"{n}³", "what": STEPS[step], "beta": beta,
                            "TFLOP/s": statistics.median(r["tflops"] for r in mine),
                            "% of cuBLAS TF32": statistics.median(pct), "rounds' range (%)": f"{min(pct):.1f}–{max(pct):.1f}",
                            "SM MHz": statistics.median(mhz) if mhz else float("nan")})
    return pd.DataFrame(out)


def label(data: dict | None = None) -> str:
    p = (data or measurements())["provenance"]
    return (f"{p['gpu']}, CUDA {p['cuda_runtime']}, CuPy {p['cupy']}, {p['date'][:10]}: {p['command']} "
            f"({STEPS_RUN.relative_to(RESULTS_DIR.parent)})")


def ncu_metric(kernel: str, metric: str = TENSOR_PIPE, path=NCU) -> float:
    """One metric of one kernel's launch in a run of tools/experiments/ncu_10.sh (its metrics or sections CSV:
    'Elapsed Cycles', 'L2 Cache Throughput', ... there)."""
    text = path.read_text()
    for r in csv.DictReader(io.StringIO(text[text.index('"ID"'):])):
        if r["Kernel Name"].startswith(NCU_KERNELS[kernel]) and r["Metric Name"] == metric:
            return float(r["Metric Value"].replace(",", ""))
    raise KeyError(f"{kernel} {metric} not in {path.name}")


def arrivals_tflops(variant: str, which: str = "median") -> float:
    """cluster_arrive.json: TFLOP/s of a variant of the cluster's arrivals (ARRIVALS) over its rounds."""
    values = [r["tflops"] for r in results_files.read_json(CLUSTER_ARRIVE)["rows"] if r["what"] == ARRIVALS[variant]]
    return {"median": statistics.median, "min": min, "max": max}[which](values)


def cluster_grid_row(what: str) -> dict:
    """cluster_grid.json's row whose 'what' starts with `what`."""
    return next(r for r in results_files.read_json(CLUSTER_GRID)["rows"] if r["what"].startswith(what))

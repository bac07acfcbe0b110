"""Stage 10's views: which lane holds which element of a wmma fragment (read from a trace of the
kernel file), TF32's precision cost on the current backend, and the committed H200 measurements
(configurations, precision, Nsight Compute) as tables.

    grid = fragment_lanes()            # 16 x 8 lanes of warp 0's first A fragment, from the trace
    precision_rows()                   # errors of 10 (each ROUND) and 09 against float64, run here
    committed_configs(), committed_precision(), committed_ncu()   # results/stage_10_*/
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from . import figures, gemm, stages
from .stages import TensorCoreConfig

VARIANT = "10_tensor_cores"
SMALL = TensorCoreConfig(32, 32, 16, 16, 16, 2)  # one 16 x 16 warp tile: quick to trace
A_LOAD = "wmma::load_matrix_sync(a[i]"          # the source line that loads A's fragments


def _line_of(variant, text: str) -> int:
    for n, line in enumerate(variant.path.read_text().splitlines(), 1):
        if text in line:
            return n
    raise ValueError(f"{variant.path.name} has no line with {text!r}: the view looks for A's fragment load there.")


def fragment_lanes(config: TensorCoreConfig = SMALL) -> np.ndarray:
    """16 x 8: the lane of warp 0 that loads each element of its first fragment of A (rows of the
    tile x the first 8 steps of K), from the emulator's trace of the kernel file. -1: no lane."""
    v = stages.variant(VARIANT)
    line = _line_of(v, A_LOAD)
    tr = figures.kernel_trace(v, config, M=32, N=32, K=16)
    reqs = [q for q in figures.shared_requests(tr, warp=0, block=0, op="load", first_only=False) if q.line == line]
    lda = config.BK + 4
    grid = np.full((16, 8), -1, dtype=int)
    for q in reqs[:4]:   # a TF32 A fragment: 4 elements per lane, one request each in the emulator
        words = (q.offsets - figures.array_origin(tr, q)) // 4
        for lane, w in zip(q.lanes, words):
            r, c = divmod(int(w), lda)
            if r < 16 and c < 8:
                grid[r, c] = lane
    return grid


def fragment_table(grid: np.ndarray) -> str:
    head = "row\\k " + " ".join(f"{k:>3}" for k in range(grid.shape[1]))
    return "\n".join([head] + [f"{r:>5} " + " ".join(f"{x:>3}" for x in row) for r, row in enumerate(grid)])


def plot_fragment_lanes(grid: np.ndarray, ax=None):
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 6))
    ax.imshow(grid % 4, cmap="Pastel1", aspect="equal")
    for (r, c), lane in np.ndenumerate(grid):
        ax.text(c, r, str(lane), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(grid.shape[0]))
    ax.set_xlabel("k (column of the A tile)")
    ax.set_ylabel("row of the A tile")
    ax.set_title("Lane holding each element of a 16 x 8 TF32\nfragment of A (emulator trace, warp 0)", fontsize=10)
    return ax


def _errors(C, ref) -> tuple[float, float]:
    e = np.abs(C.astype(np.float64) - ref) / np.sqrt(np.mean(ref * ref))
    return float(e.max()), float(np.sqrt(np.mean(e * e)))


def precision_rows(M: int = 128, N: int = 128, K: int = 512, seed: int = 1) -> list[dict]:
    """Each ROUND of 10 (small configuration) and 09 (FP32), run on the current backend on uniform
    [-1, 1) data: largest and RMS |C - C64| / RMS(C64)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    rows = []
    for name, cfg, what in ((VARIANT, TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=1), "TF32, rounded in the fragments"),
                            (VARIANT, TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=2), "TF32, rounded in shared memory"),
                            (VARIANT, TensorCoreConfig(32, 32, 16, 16, 16, 2, ROUND=0), "TF32, low bits dropped"),
                            ("09_async_copy", None, "FP32 (CUDA cores)")):
        v = stages.variant(name)
        worst, rms = _errors(gemm.run(v, A, B, config=cfg), ref)
        rows.append({"kernel": v.name_expression(cfg or v.default), "arithmetic": what,
                     "max error / RMS(C)": worst, "RMS error / RMS(C)": rms})
    return rows


# ---- the committed H200 measurements -------------------------------------------------------------
def results_folder() -> Path:
    found = sorted((stages.ROOT / "results").glob("stage_10_*/exp_10.json"))
    if not found:
        raise FileNotFoundError("no results/stage_10_*/exp_10.json yet: tools/experiments/exp_10.py makes it on a GPU")
    return found[-1].parent


def experiment() -> dict:
    return json.loads((results_folder() / "exp_10.json").read_text())


def label(data: dict | None = None) -> str:
    data = data or experiment()
    p = data["provenance"]
    return (f"Measured on {p['gpu']} on {p['date'][:10]} (CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}), "
            f"{data['size']}^3, from `{(results_folder() / 'exp_10.json').relative_to(stages.ROOT)}`")


def cublas(data: dict | None = None) -> dict:
    """cuBLAS before and after the candidates: {'fp32': [..], 'tf32': [..]} in TFLOP/s."""
    data = data or experiment()
    return {"fp32": [c["fp32_tflops"] for c in data["cublas"]], "tf32": [c["tf32_tflops"] for c in data["cublas"]]}


def committed_configs(data: dict | None = None) -> list[dict]:
    data = data or experiment()
    tf32 = float(np.mean(cublas(data)["tf32"]))
    fp32 = float(np.mean(cublas(data)["fp32"]))
    rows = []
    for r in data["rows"]:
        tc = r["variant"] == VARIANT
        t = r.get("tflops")
        rows.append({"kernel": r["expr"], "registers": r.get("regs"), "blocks/SM": r.get("blocks_per_sm"),
                     "verified": r.get("catalogue") == "pass", "TFLOP/s": t,
                     "% of cuBLAS (same precision)": 100 * t / (tf32 if tc else fp32) if t else None})
    return rows


def committed_precision(data: dict | None = None) -> list[dict]:
    data = data or experiment()
    return [{"what": r["what"], "max error / RMS(C)": r["max_err_over_rms"], "RMS error / RMS(C)": r["rms_err_over_rms"]}
            for r in data["precision"]]


NCU_METRICS = {
    "gpu__time_duration.sum": "duration (ns)",
    "launch__registers_per_thread": "registers",
    "sm__inst_executed_pipe_tensor_op_hmma.sum": "HMMA instructions",
    "sm__inst_executed_pipe_tensor_op_gmma.sum": "GMMA (wgmma) instructions",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe active (%)",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared load instructions",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared load bank conflicts",
}


def committed_ncu() -> list[dict]:
    """Nsight Compute's figures for the GEMM kernels of the committed launch (the operands'
    random-number and fill kernels left out)."""
    text = (results_folder() / "ncu_10_metrics.csv").read_text()
    kernels: dict[str, dict] = {}
    for r in csv.DictReader(line for line in text.splitlines() if line.startswith('"')):
        name = r["Kernel Name"]
        if "gemm" not in name:
            continue
        row = kernels.setdefault(r["ID"], {"kernel": name.split("(")[0].removeprefix("void ")})
        if r["Metric Name"] in NCU_METRICS:
            row[NCU_METRICS[r["Metric Name"]]] = float(r["Metric Value"].replace(",", ""))
    return list(kernels.values())


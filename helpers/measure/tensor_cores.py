"""Stage 10's views: which lane holds which element of a wmma fragment, and where wgmma's
128-byte swizzle puts A's rows (both read from traces of the kernel files), the wgmma probe run
on the current backend, TF32's precision cost here, and the committed GPU measurements as tables.

    grid = fragment_lanes()            # 16 x 8 lanes of warp 0's first A fragment, from the trace
    precision_rows()                   # errors of 10 (each ROUND) and 09 against float64, run here
    committed_configs(), committed_precision(), committed_ncu()   # results/stage_10_h200_*/exp_10.json
    swizzle_map(); probe()             # 10_wgmma: its copies' swizzle, wgmma's layouts checked here
    wgmma_measurements(), wgmma_rounds(), wgmma_sweep(), ...      # results/stage_10_*/measure_10_wgmma.json
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from helpers.measure import accesses
from helpers.core import paths
from helpers.core import results_files
from helpers.run import gemm
from helpers.core import stages
from helpers.core.configs import WgmmaConfig
from helpers.core.configs_tensor_cores import TensorCoreConfig
from helpers.run.kernel_loader import load_kernel
from helpers.run import backend

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
    tr = accesses.kernel_trace(v, config, M=32, N=32, K=16)
    reqs = [q for q in accesses.shared_requests(tr, warp=0, block=0, op="load", first_only=False) if q.line == line]
    lda = config.BK + 4
    grid = np.full((16, 8), -1, dtype=int)
    for q in reqs[:4]:   # a TF32 A fragment: 4 elements per lane, one request each in the emulator
        words = (q.offsets - accesses.array_origin(tr, q)) // 4
        for lane, w in zip(q.lanes, words):
            r, c = divmod(int(w), lda)
            if r < 16 and c < 8:
                grid[r, c] = lane
    return grid


def fragment_table(grid: np.ndarray) -> str:
    head = "row\\k " + " ".join(f"{k:>3}" for k in range(grid.shape[1]))
    return "\n".join([head] + [f"{r:>5} " + " ".join(f"{x:>3}" for x in row) for r, row in enumerate(grid)])


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
    found = sorted(paths.RESULTS_DIR.glob("stage_10_*/exp_10.json"))
    if not found:
        raise FileNotFoundError("no results/stage_10_*/exp_10.json yet: tools/experiments/exp_10.py makes it on a GPU")
    return found[-1].parent


def experiment() -> dict:
    return results_files.read_json(results_folder() / "exp_10.json")


def label(data: dict | None = None) -> str:
    data = data or experiment()
    p = data["provenance"]
    return (f"Measured on {p['gpu']} on {p['date'][:10]} (CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}), "
            f"{data['size']}^3, from `{(results_folder() / 'exp_10.json').relative_to(paths.ROOT)}`")


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


def committed_ncu(folder: Path | None = None, metrics: dict[str, str] = NCU_METRICS) -> list[dict]:
    """Nsight Compute's figures (`metrics`: its metric names -> the rows' keys) for the GEMM kernels of the
    committed launch (the operands' random-number and fill kernels left out); `folder`: another
    results/stage_10_*/ than exp_10.json's, whose ncu_10*_metrics.csv files (tools/experiments/ncu_10.sh OUT NAME)
    are read in turn."""
    kernels: dict[tuple[str, str], dict] = {}
    for f in sorted((folder or results_folder()).glob("ncu_10*_metrics.csv")):
        for r in csv.DictReader(line for line in f.read_text().splitlines() if line.startswith('"')):
            name = r["Kernel Name"]
            if "gemm" not in name:
                continue
            row = kernels.setdefault((f.name, r["ID"]), {"kernel": name.split("(")[0].removeprefix("void ")})
            if r["Metric Name"] in metrics:
                row[metrics[r["Metric Name"]]] = float(r["Metric Value"].replace(",", ""))
    return list(kernels.values())


# ---- 10_wgmma ------------------------------------------------------------------------------------
WGMMA = "10_wgmma"
WGMMA_SMALL = WgmmaConfig(64, 64, 3)  # one warpgroup: quick on the emulator
A_COPY = "__pipeline_memcpy_async(dst, &A[row * K + col], 16);"  # 10_wgmma's unchecked copy of A


def swizzle_map(config: WgmmaConfig = WGMMA_SMALL) -> np.ndarray:
    """8 x 8: for the first 8 rows of A's first tile in shared memory (one swizzle atom), which of
    the row's eight 16-byte runs (k = 4c .. 4c+3 of A) each 16-byte slot holds, read from the
    emulator's trace of 10_wgmma's asynchronous copies (global source and shared destination of
    each copy, paired in each thread's program order)."""
    v = stages.variant(WGMMA)
    line = _line_of(v, A_COPY)
    K = 8 * config.BK  # several tiles, so that block 0's first copies are unchecked ones
    tr = accesses.kernel_trace(v, config, M=config.BM, N=config.BN, K=K)
    rec = tr.records[(tr.records["line"] == line) & (tr.records["block"] == 0)]
    a = next(i for i, name in tr.buffers.items() if name == "A")
    src = rec[(rec["space"] == 0) & (rec["buffer"] == a)]
    dst = rec[rec["space"] != 0]
    copies = []   # (row of A, column of A, shared offset) of tile 0's copies
    for t in np.unique(src["thread"]):
        for s_rec, d_rec in zip(np.sort(src[src["thread"] == t], order="seq"),
                                np.sort(dst[dst["thread"] == t], order="seq")):
            row, col = divmod(int(s_rec["offset"]) // 4, K)
            if col < config.BK:
                copies.append((row, col, int(d_rec["offset"])))
    base = min(off for _, _, off in copies)   # row 0's first run is at the tile's first slot
    grid = np.full((8, 8), -1, dtype=int)
    for row, col, off in copies:
        r, slot = divmod((off - base) // 16, 8)
        if row < 8 and r == row:
            grid[row, slot] = col // 4
    return grid


def probe(steps=range(4), seed: int = 1) -> list[dict]:
    """tools/experiments/wgmma_probe.cu on the current backend: one wgmma_m64k8_tf32<64> on small
    integers (exact in TF32) for each step of 8 along a swizzled row, against the layouts that
    kernels/wgmma.cuh documents. On an H100 the same probe matched (results/stage_10_h100_*/)."""
    k = load_kernel(paths.ROOT / "tools" / "experiments" / "wgmma_probe.cu", "wgmma_probe")
    rng = np.random.default_rng(seed)
    rows = []
    for s in steps:
        A = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        Bt = rng.integers(-4, 5, (64, 8)).astype(np.float32)
        D = A.astype(np.float64) @ Bt.T.astype(np.float64)
        want = np.empty((128, 32))
        for tid in range(128):
            w, g, t = tid // 32, tid % 32 // 4, tid % 4
            for i in range(32):
                j, e = divmod(i, 4)
                want[tid, i] = D[16 * w + g + 8 * (e // 2), 8 * j + 2 * t + e % 2]
        bk = backend.current()
        d = bk.to_device(np.zeros(128 * 32, np.float32))
        k((1,), (128,), (bk.to_device(A), bk.to_device(Bt), np.int32(s), d))
        got = bk.to_host(d).reshape(128, 32)
        rows.append({"step": s, "k0": 8 * s, "accumulators": got.size, "match the documented layout": int((got == want).sum())})
    return rows


def committed_probe() -> dict:
    """The probe's verdict on a GPU, from the first committed wgmma experiment."""
    found = sorted(paths.RESULTS_DIR.glob("stage_10_*/exp_10_wgmma_first.json"))
    data = results_files.read_json(found[-1])
    return {"gpu": data["provenance"]["gpu"], "date": data["provenance"]["date"][:10], **data["probe"]}


def wgmma_measurements(folder: str = "stage_10_*") -> dict:
    """The newest committed run of tools/measure_10_wgmma.py, or the one in results/FOLDER."""
    found = sorted(paths.RESULTS_DIR.glob(f"{folder}/measure_10_wgmma.json"))
    if not found:
        raise FileNotFoundError("no results/stage_10_*/measure_10_wgmma.json yet: tools/measure_10_wgmma.py makes it on a GPU")
    data = results_files.read_json(found[-1])
    data["path"] = str(found[-1].relative_to(paths.ROOT))
    return data


def wgmma_label(data: dict | None = None) -> str:
    data = data or wgmma_measurements()
    p = data["provenance"]
    return (f"Measured on {p['gpu']} on {p['date'][:10]} (CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}), "
            f"from `{data['path']}`")


def wgmma_rounds(data: dict | None = None) -> list[dict]:
    """Each interleaved round at 4096^3: TFLOP/s of cuBLAS TF32 and FP32 and of the two kernels,
    and each kernel's % of that round's cuBLAS TF32."""
    data = data or wgmma_measurements()
    out = []
    for i, rows in enumerate(data["rounds_4096"], 1):
        row = {"round": i}
        for r in rows:
            row[f"{r['kernel']} TFLOP/s"] = r["tflops"]
            if "pct_cublas_tf32" in r:
                row[f"{r['kernel']} % of cuBLAS TF32"] = r["pct_cublas_tf32"]
        out.append(row)
    return out


def wgmma_sweep(data: dict | None = None) -> list[dict]:
    """TFLOP/s per size: cuBLAS TF32 and FP32, 10_wgmma, 10_tensor_cores."""
    data = data or wgmma_measurements()
    by_size: dict[int, dict] = {}
    for r in data["sweep"]:
        by_size.setdefault(r["size"], {"size": r["size"]})[r["kernel"]] = r["tflops"]
    return list(by_size.values())


def wgmma_precision(data: dict | None = None) -> list[dict]:
    data = data or wgmma_measurements()
    return [{"what": r["what"], "max error / RMS(C)": r["max_err_over_rms"], "RMS error / RMS(C)": r["rms_err_over_rms"]}
            for r in data["precision"]]

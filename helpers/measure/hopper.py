"""Stage 12: the pipeline of 12_warp_specialized as its own trace shows it, and its committed H200 measurements.

- pipeline_events(trace) / kernel_pipeline(...): the copies, arrivals and waits of one traced block, in the order
  the emulator ran them (the runtime records them as events: helpers/emulator/runtime/runtime_tma.cpp), each named
  by its barrier (full[s] or empty[s]) and counted as a k-tile of the block's walk. That is the kernel's schedule,
  what its barriers allow, not a timing: on the emulator a copy lands only when a thread waits for it.
- measurements() and the tables below read results/stage_12_h200_2026-11-25/measure_12.json (tools/measure_12.py);
  the numbers notebook 12's prose states of it are helpers/measure/facts/notebook_12.py's.
"""

from __future__ import annotations

import contextlib
import csv
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.core import results_files, stages
from helpers.core.errors import CourseError, ResultsFileError
from helpers.core.paths import RESULTS_DIR
from helpers.measure import memory
from helpers.measure import trace as trace_mod
from helpers.run import backend, cpu_backend, gemm
from helpers.run.kernel_loader import load_kernel

RESULTS = RESULTS_DIR / "stage_12_h200_2026-11-25"
MEASUREMENTS = RESULTS / "measure_12.json"
FIRST_KERNEL = RESULTS / "measure_12_first_kernel.json"   # the same tool on the first kernel (rounding warps)
ROLES = {0: "producer (warpgroup 0)", 1: "consumer warpgroup 1", 2: "consumer warpgroup 2"}


@dataclass(frozen=True)
class Pipeline:
    """One block's events: order (as run), thread, role, event ('copy issued', 'arrive', 'wait passed'),
    barrier ('full', 'empty', or ping-pong's 'turn'), stage (or turn's consumer), round of the ring (the phase's
    number), parity. k_tiles: k-tiles per tile, where known, to name each k-tile of the block's walk by its tile."""
    kernel: str
    stages: int
    events: pd.DataFrame
    k_tiles: int | None = None

    def per_k_tile(self) -> pd.DataFrame:
        """A row per k-tile the block walked: when (in event order) its copies were issued, when each
        consumer warpgroup passed its wait for them, and when it gave the stage back."""
        e = self.events
        copies = e[e["event"] == "copy issued"].groupby(["stage", "round"])["order"].min()
        rows = []
        for (stage, rnd), issued in copies.items():
            row = {"k-tile": rnd * self.stages + stage, "stage": stage, "copies issued at": issued}
            for role in sorted(e["role"].unique()):
                if role == 0:
                    continue
                mine = e[(e["role"] == role) & (e["stage"] == stage) & (e["round"] == rnd)]
                waits = mine[(mine["event"] == "wait passed") & (mine["barrier"] == "full")]["order"]
                gives = mine[(mine["event"] == "arrive") & (mine["barrier"] == "empty")]["order"]
                row[f"WG{role} waited at"] = int(waits.min()) if len(waits) else None
                row[f"WG{role} gave back at"] = int(gives.max()) if len(gives) else None
            rows.append(row)
        out = pd.DataFrame(rows).sort_values("k-tile").reset_index(drop=True)
        if self.k_tiles:
            out.insert(1, "tile", out["k-tile"] // self.k_tiles)   # the tile's place in the block's walk
            out.insert(2, "k", out["k-tile"] % self.k_tiles)
        return out

    def per_tile(self) -> pd.DataFrame:
        """A row per tile of the block's walk and consumer warpgroup that multiplied it (both, in the cooperative
        kernel; one, taking turns, with ping-pong): when (in event order, its first thread) it waited for the tile's
        first and last k-tiles, when it gave the last stage back (its products complete, its epilogue next), when it
        waited for the first k-tile of its next tile, and `other k-tiles meanwhile`: how many k-tiles of other tiles
        the other consumer waited for between this one's last k-tile of the tile and its next tile's first.

        With ping-pong the turn barriers force that count to be a whole tile's k-tiles in any schedule (the other
        consumer starts only once this one has waited for its last k-tile, and this one's next tile only once the
        other has waited for all of its own): the other consumer's products run while this one completes its
        products and writes C. The order is the emulator's, not time."""
        if not self.k_tiles:
            raise ValueError("per_tile needs the k-tiles per tile (Pipeline.k_tiles): kernel_pipeline sets it")
        t = self.per_k_tile()
        roles = sorted(int(c[2:].split()[0]) for c in t.columns if c.startswith("WG") and c.endswith("waited at"))
        rows = []
        for role in roles:
            waited = t[f"WG{role} waited at"]
            mine = t[waited.notna()]
            tiles = sorted(mine["tile"].unique())
            for i, tile in enumerate(tiles):
                ks = mine[mine["tile"] == tile].sort_values("k")
                last = float(ks[f"WG{role} waited at"].iloc[-1])
                nxt = (float(mine[mine["tile"] == tiles[i + 1]].sort_values("k")[f"WG{role} waited at"].iloc[0])
                       if i + 1 < len(tiles) else float("inf"))
                others = [r for r in roles if r != role]
                between = sum(int(((t["tile"] != tile) & (t[f"WG{r} waited at"] > last)
                                   & (t[f"WG{r} waited at"] < nxt)).sum()) for r in others)
                rows.append({"tile": int(tile), "consumer": f"WG{role}", "k-tiles": len(ks),
                             "first k-tile waited at": int(ks[f"WG{role} waited at"].iloc[0]),
                             "last k-tile waited at": int(last),
                             "gave the last stage back at": ks[f"WG{role} gave back at"].iloc[-1],
                             "next tile's first k-tile waited at": None if nxt == float("inf") else int(nxt),
                             "other k-tiles meanwhile": between})
        return pd.DataFrame(rows).sort_values(["tile", "consumer"]).reset_index(drop=True)


def _barrier_names(tr: trace_mod.Trace) -> dict[tuple[int, int], tuple[str, int]]:
    """(space, byte offset) -> (array name, index) for the kernel's __shared__ barrier arrays."""
    out = {}
    for v in tr.shared_variables:
        for i in range(v.size // 8):
            out[(1, v.offset + 8 * i)] = (v.name, i)
    return out


def pipeline_events(tr: trace_mod.Trace, stages: int, block: int | None = None, k_tiles: int | None = None) -> Pipeline:
    """The copies, arrivals and waits of one traced block (default: the first), named by barrier and stage; k_tiles:
    the k-tiles per tile, where known (Pipeline.per_tile needs them)."""
    ev = tr.events
    if ev is None or ev.size == 0:
        raise ValueError(f"{tr.kernel}: the trace holds no barrier events: the kernel uses no mbarriers or TMA copies")
    block = int(ev["block"][0]) if block is None else block
    ev = ev[(ev["block"] == block) & np.isin(ev["op"], (5, 6, 7))]
    names = _barrier_names(tr)
    rows, seen = [], {}
    for i, r in enumerate(ev):
        name, stage = names.get((int(r["space"]), int(r["offset"])), ("?", -1))
        kind = trace_mod.EVENTS[int(r["op"])]
        # the round of the ring: a copy or an arrival counts the phases of its barrier; a wait names its parity
        key = (int(r["thread"]), kind, name, stage)
        rnd = seen.get(key, 0)
        seen[key] = rnd + 1
        rows.append({"order": i, "thread": int(r["thread"]), "role": int(r["thread"]) // 128, "event": kind,
                     "barrier": name, "stage": stage, "round": rnd, "parity": int(r["repeat"]), "line": int(r["line"])})
    df = pd.DataFrame(rows)
    # copies: several per k-tile (A's box and B's): their round is the producer's count of expect_tx arrivals
    arrivals = df[(df["event"] == "arrive") & (df["barrier"] == "full")]
    for idx in df.index[df["event"] == "copy issued"]:
        before = arrivals[(arrivals["order"] < df.at[idx, "order"]) & (arrivals["stage"] == df.at[idx, "stage"])]
        df.at[idx, "round"] = len(before) - 1
    # a consumer's wait for a stage's copies: the round the producer announced last (a thread's own count of its
    # waits is that only where every consumer reads every k-tile; with ping-pong each reads every other tile's);
    # its giving the stage back: the round of its last wait for that stage
    latest: dict[tuple[int, int], int] = {}
    for idx in df.index:
        thread, event, barrier, stage = (df.at[idx, k] for k in ("thread", "event", "barrier", "stage"))
        if event == "wait passed" and barrier == "full" and df.at[idx, "role"] > 0:
            before = arrivals[(arrivals["order"] < df.at[idx, "order"]) & (arrivals["stage"] == stage)]
            df.at[idx, "round"] = latest[(thread, stage)] = len(before) - 1
        elif event == "arrive" and barrier == "empty" and (thread, stage) in latest:
            df.at[idx, "round"] = latest[(thread, stage)]
    return Pipeline(tr.kernel, stages, df, k_tiles)


def kernel_pipeline(variant, config=None, M: int = 256, N: int = 128, K: int = 256) -> Pipeline:
    """Traces block 0 of the variant on fresh data (emulator) and returns its pipeline."""
    config = config or variant.default
    tr = trace_mod.capture_variant(variant, config, M, N, K, blocks=(0,))
    return pipeline_events(tr, config.STAGES, k_tiles=-(-K // config.BK))


def walk_shape(config, tiles: int, K: int = 128) -> tuple[int, int, int]:
    """M, N, K for which block 0 of the emulator's launch walks `tiles` tiles (a persistent grid of
    backend.EMULATED_SMS blocks, or one block per config.turns tiles): for its pipeline with several tiles."""
    if not config.PERSISTENT and tiles > config.turns:
        raise ValueError(f"with PERSISTENT = 0 a block walks at most {config.turns} tile(s), not {tiles}")
    total = (tiles - 1) * backend.EMULATED_SMS + 1 if config.PERSISTENT else tiles
    tiles_m = 4
    return config.BM * tiles_m, config.BN * -(-total // tiles_m), K


# ---- the committed H200 measurements (tools/measure_12.py) -------------------------------------------------------
def measurements(path=MEASUREMENTS) -> dict:
    data = results_files.read_json(path)
    for key in ("provenance", "configurations", "steps_4096", "sweep", "precision"):
        results_files.require(path, data, key)
    return data


def label(data: dict) -> str:
    p = data["provenance"]
    return (f"Measured on an {p['gpu']} (driver {p['driver']}, CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}), "
            f"{p['date'][:10]}: `{p['command']}`")


def steps_table(data: dict) -> pd.DataFrame:
    """Each idea's TFLOP/s at 4096³ in each interleaved round, and its % of the same round's cuBLAS TF32."""
    rows = []
    for i, rnd in enumerate(data["steps_4096"], 1):
        for r in rnd:
            rows.append({"round": i, "step": r["step"], "TFLOP/s": r["tflops"], "% of cuBLAS TF32": r.get("pct_cublas_tf32", 100.0)})
    t = pd.DataFrame(rows)
    return t.pivot_table(index="step", columns="round", values="% of cuBLAS TF32", sort=False).assign(
        **{"median TFLOP/s": t.groupby("step", sort=False)["TFLOP/s"].median()})


def step_medians(data: dict) -> dict[str, float]:
    """Each step's median % of cuBLAS TF32 over the rounds."""
    t = steps_table(data)
    return {step: float(np.median([t.loc[step, c] for c in t.columns if c != "median TFLOP/s"])) for step in t.index}


def padded(shape) -> bool:
    """Whether the launch copies A or B to a padded pitch first (TMA needs rows 16 bytes apart: K or N not a multiple
    of 4 floats; helpers/run/tensor_maps.py)."""
    _, N, K = shape
    return K % 4 != 0 or N % 4 != 0


def _fair_pct(r: dict) -> float | None:
    """A sweep row's % of cuBLAS TF32 for the call a user makes: the kernel's own where the operands are read as they
    lie, the time with the padding copies where the run timed them (tools/measure_12.py since issue 35), else none."""
    if not padded(r["shape"]):
        return r["pct_cublas_tf32"]
    return r.get("pct_cublas_tf32_with_copies")


def sweep_table(data: dict) -> pd.DataFrame:
    """The sweep's rows; `operands` says where the kernel read A and B from copies to a padded pitch made before the
    timing (not timed: such a row's % is not the call's, and sweep_geomean leaves it out)."""
    return pd.DataFrame([{"M × N × K": " × ".join(map(str, r["shape"])), "kernel TFLOP/s": r["kernel"]["tflops"],
                          "cuBLAS TF32 TFLOP/s": r["cublas_tf32"]["tflops"], "% of cuBLAS TF32": r["pct_cublas_tf32"],
                          "operands": ("as they lie" if not padded(r["shape"]) else
                                       "padded copies, timed" if _fair_pct(r) is not None else
                                       "padded copies, not timed")}
                         for r in data["sweep"]])


def sweep_geomean(data: dict) -> float:
    """The geometric mean of the sweep's % of cuBLAS TF32 over the rows that time the whole call (padding copies
    included where there are any): a row whose copies were made outside the timing is left out."""
    pct = [p for p in map(_fair_pct, data["sweep"]) if p is not None]
    return math.exp(sum(math.log(p) for p in pct) / len(pct))


def precision_table(data: dict) -> pd.DataFrame:
    return pd.DataFrame([{"arithmetic": r["what"], "max error / RMS(C)": r["max_err_over_rms"],
                          "RMS error / RMS(C)": r["rms_err_over_rms"]} for r in data["precision"]])


# ---- the race check on a broken pipeline: one wait taken out of the kernel ----------------------------------------
BROKEN = {  # what is taken out -> (the line of kernels/12_warp_specialized.cu, what replaces it)
    "the producer's wait for an empty stage":
        ("          mbarrier_wait(&empty[s], (it / STAGES & 1) ^ 1);  // the consumers are done with this stage",
         "          // (the producer no longer waits for the consumers)"),
    "the consumers' wait for the copies":
        ("      mbarrier_wait(&full[s], it / STAGES & 1);", "      // (the consumers no longer wait for the copies)"),
}


@contextlib.contextmanager
def _broken_kernel(what: str):
    """The kernel file with `what` (a key of BROKEN) taken out, in a temporary folder beside copies of its headers."""
    v = stages.variant("12_warp_specialized")
    old, new = BROKEN[what]
    text = v.path.read_text()
    if old not in text:
        raise ValueError(f"{v.path.name} no longer holds the line to take out ({old.strip()}): update hopper.BROKEN")
    folder = Path(tempfile.mkdtemp(prefix="tbt_broken_12_"))
    try:
        for header in ("tma.cuh", "wgmma.cuh"):
            shutil.copy(v.path.parent / header, folder / header)
        path = folder / v.path.name
        path.write_text(text.replace(old, new))
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _broken_args(config, M: int, N: int, K: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    return A, B, C, gemm.kernel_args(config, M, N, K, 1.0, A, B, 0.0, C, bk=cpu_backend)


def broken_pipeline(what: str, config=None, M: int = 256, N: int = 128, K: int = 160):
    """The races the emulator's clocks find in block 0 when `what` (a key of BROKEN) is taken out of the kernel."""
    v = stages.variant("12_warp_specialized")
    config = config or v.config(BM=128, CONSUMERS=1, STAGES=3)
    with _broken_kernel(what) as path:
        *_, args = _broken_args(config, M, N, K)
        tr = trace_mod.capture(path, v.name_expression(config), config.grid(M, N), config.block(), args, blocks=(0,),
                               shared_mem=config.shared_bytes())
        return memory.clock_races(tr)


def run_broken_pipeline(what: str, M: int, N: int, K: int, config=None) -> str:
    """Runs the kernel with `what` taken out on the emulator, fresh data of M x N x K: what became of the result
    (its largest error over the product's RMS, or the error the emulator stopped it with)."""
    v = stages.variant("12_warp_specialized")
    config = config or v.config(BM=128, CONSUMERS=1, STAGES=3)
    with _broken_kernel(what) as path:
        A, B, C, args = _broken_args(config, M, N, K)
        try:
            load_kernel(path, v.name_expression(config))(config.launch_grid(M, N, backend.EMULATED_SMS),
                                                          config.block(), args, config.shared_bytes())
        except CourseError as e:
            return f"{type(e).__name__}: {str(e).splitlines()[0]}"
        ref = A.astype(np.float64) @ B.astype(np.float64)
        err = float(np.abs(C - ref).max() / np.sqrt((ref * ref).mean()))
        return f"largest error / RMS of the product: {err:.1e}" + (" (TF32's size: right)" if err < 1e-2 else "")


# ---- what Nsight Compute saw of cuBLAS's TF32 kernel (stage 10's committed run) -----------------------------------
NCU_STAGE_10 = RESULTS_DIR / "stage_10_h200_2026-11-24" / "ncu_10_sections.csv"
CUBLAS_LAUNCH = ("Block Size", "Grid Size", "Cluster Size", "Registers Per Thread", "Dynamic Shared Memory Per Block")


def cublas_launch(path=NCU_STAGE_10) -> dict[str, str]:
    """The launch of cuBLAS's TF32 kernel at 4096³ as Nsight Compute reported it: its name and CUBLAS_LAUNCH."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("==")]
    rows = list(csv.DictReader(lines))
    mine = [r for r in rows if "xmma_gemm" in r["Kernel Name"] and "tf32" in r["Kernel Name"]]
    if not mine:
        raise ResultsFileError(f"{path.name}: no cuBLAS TF32 kernel (xmma_gemm ... tf32) in it")
    out = {"kernel": mine[0]["Kernel Name"]}
    for r in mine:
        if r["Metric Name"] in CUBLAS_LAUNCH:
            out[r["Metric Name"]] = f"{r['Metric Value']} {r['Metric Unit']}".strip()
    return out


# ---- Nsight Compute on stage 12 (tools/experiments/ncu_10.sh OUT ncu_12) --------------------------------------------
NCU_STAGE_12 = RESULTS / "ncu_12_metrics.csv"
NCU_KERNELS = {"sgemm_wgmma": "10_wgmma", "sgemm_warp_specialized": "12_warp_specialized", "sm90_xmma_gemm": "cuBLAS TF32"}
NCU_METRICS = {"gpu__time_duration.sum": "time (µs)",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe busy (%)",
               "smsp__sass_inst_executed_op_shared_ld.sum": "shared loads (warp instructions)",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared-load wavefronts",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
               "launch__registers_per_thread": "registers per thread"}


def committed_ncu(path=NCU_STAGE_12) -> pd.DataFrame:
    """One row per profiled GEMM launch at 4096³ (in launch order: 10_wgmma, 12 persistent, 12 a block per tile,
    cuBLAS TF32), the metrics of NCU_METRICS."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("==")]
    rows: dict[str, dict] = {}
    for r in csv.DictReader(lines):
        name = next((v for k, v in NCU_KERNELS.items() if k in r["Kernel Name"]), None)
        if name is None or r["Metric Name"] not in NCU_METRICS:
            continue
        key = f"{r['ID']}"
        row = rows.setdefault(key, {"kernel": name})
        value = float(r["Metric Value"].replace(",", ""))
        row[NCU_METRICS[r["Metric Name"]]] = value / 1000 if r["Metric Name"] == "gpu__time_duration.sum" else value
    out = pd.DataFrame(list(rows.values()))
    twelve = out.index[out["kernel"] == "12_warp_specialized"]
    out.loc[twelve, "kernel"] = [f"12_warp_specialized ({c})" for c in ("PERSISTENT=1", "PERSISTENT=0")[:len(twelve)]]
    return out.set_index("kernel")


NCU_SECTIONS_12 = RESULTS / "ncu_12_sections.csv"


def ncu_sm_clocks(path=NCU_SECTIONS_12) -> dict[str, list[float]]:
    """The SM clock (GHz) Nsight Compute measured over each profiled launch at 4096³ (its "SM Frequency", clocks not
    locked), per kernel of NCU_KERNELS in launch order, and "other" for every other launch of the run (the fills and
    random numbers around the GEMMs: light kernels, which run at the clock the GPU holds when power allows)."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("==")]
    out: dict[str, list[float]] = {}
    for r in csv.DictReader(lines):
        if r["Metric Name"] != "SM Frequency":
            continue
        name = next((v for k, v in NCU_KERNELS.items() if k in r["Kernel Name"]), "other")
        out.setdefault(name, []).append(float(r["Metric Value"].replace(",", "")) / 1e9)
    return out


def ncu_table(path=NCU_STAGE_12) -> pd.DataFrame:
    """committed_ncu() as notebook 12 shows it, a metric a row, each value written with one decimal as the prose's facts
    round it (Python's rounding of the stored float: 66.35 is 66.3; NumPy's DataFrame.round would print 66.4)."""
    return committed_ncu(path).T.map(lambda v: f"{v:,.1f}")

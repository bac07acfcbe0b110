"""Numbers that notebooks state in prose, each computed from a committed results file.

A notebook's Markdown cannot run code, so a measured number in its prose is text. To keep that text true, each
such number carries a marker naming the fact it states, right after it:

    `06_transposed_a` gained 11%<!-- fact: gain_pct/06_transposed_a --> with a 128 x 256 block tile

Jupyter does not show the comment. `tests/course/test_numbers_in_prose.py` checks each marked number against its
fact, rounded as written, and in the notebooks of ENFORCED fails on an unmarked number with a unit (TFLOP/s,
GFLOP/s, GB/s, %) or a decimal point (a computed number, band or target says `<!-- not measured: why -->`).
A ratio of two facts is `ratio/A:B`; a power of ten is written with its number: `2.61 × 10⁻⁴<!-- fact: ... -->`.

FACTS maps a name to (the results file it reads, a function computing the number). A name with a slash takes an
argument after it: `gain_pct/08_warp_tiling`.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Callable

from helpers.core import results_files, stages
from helpers.core.paths import RESULTS_DIR
from helpers.measure import autotune, dispatch_table, hopper, steps, tensor_cores
from helpers.measure.facts_10 import FACTS as FACTS_10

AUTOTUNE_STAGES_03_09 = RESULTS_DIR / "autotune_h200_2026-11-22.json"
AUTOTUNE_WGMMA = RESULTS_DIR / "autotune_h200_2026-11-24.json"
ENFORCED = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")   # notebooks whose every measured number in prose carries a marker
UNITS = r"%|TFLOP/s|GFLOP/s|GB/s|times|×\s*10(?P<power>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)"
MARKER = re.compile(r"(?P<number>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>" + UNITS + r")?\s*<!--\s*fact:\s*(?P<name>[\w/.:-]+)\s*-->")


def _search(variant: str, path: Path):
    return autotune.load(variant, path)


def _gain_pct(variant: str) -> float:
    """How much faster the best candidate of the variant's committed search ran than its default, in %."""
    r = _search(variant, AUTOTUNE_STAGES_03_09)
    return 100.0 * (r.best["tflops"] / autotune.default_row(r)["tflops"] - 1)


def _local_memory_candidates() -> int:
    data = results_files.read_json(AUTOTUNE_STAGES_03_09)
    return sum(c["status"] == autotune.LOCAL_MEMORY for c in data["candidates"])


def _wgmma_default(key: str) -> float:
    return autotune.default_row(_search("10_wgmma", AUTOTUNE_WGMMA))[key]


def _wgmma_timed() -> int:
    return sum(r["status"] == autotune.TIMED for r in _search("10_wgmma", AUTOTUNE_WGMMA).rows)


def _sweep(key: str) -> float:
    return dispatch_table.load_sweep()["summary"][key]


FACTS: dict[str, tuple[str, Callable[..., float]]] = {
    "gain_pct": (AUTOTUNE_STAGES_03_09.name, _gain_pct),
    "local_memory_candidates": (AUTOTUNE_STAGES_03_09.name, _local_memory_candidates),
    "wgmma_default_tflops": (AUTOTUNE_WGMMA.name, lambda: _wgmma_default("tflops")),
    "wgmma_default_pct_cublas": (AUTOTUNE_WGMMA.name, lambda: _wgmma_default("pct_cublas")),
    "wgmma_timed_candidates": (AUTOTUNE_WGMMA.name, _wgmma_timed),
    "sweep_geomean_pct": ("the newest sweep_*.json", lambda: _sweep("geomean_pct_cublas")),
    "sweep_min_pct": ("the newest sweep_*.json", lambda: _sweep("min_pct_cublas")),
    "sweep_fixed_geomean_pct": ("the newest sweep_*.json", lambda: _sweep("fixed_geomean_pct_cublas")),
}


# ---- stages 02-06 (notebooks 02_naive ... 06_bank_conflicts): names start with s02_ ... s06_ ---------------------
NAIVE_02 = RESULTS_DIR / "02_naive_h200_2026-11-22.json"
LADDER_2026_11_22 = RESULTS_DIR / "ladder_h200_2026-11-22.json"
STAGES_04_05 = RESULTS_DIR / "stages_04_05_h200_2026-11-22.json"
EXPERIMENTS_2026_11_22 = RESULTS_DIR / "experiments_h200_2026-11-22"
EXP_06_07 = RESULTS_DIR / "stages_06_09_h200_2026-11-22" / "exp_06_07.json"


def _s02_row(variant: str) -> dict:
    """The 4096³ row of a variant (02_naive, 02_naive_coalesced, cublas_sgemm) in NAIVE_02."""
    rows = results_files.read_json(NAIVE_02)["rows"]
    return next(r for r in rows if r["variant"] == variant and r["M"] == 4096)


def _s02_sweep(arg: str) -> float:
    """TFLOP/s of the block-shape sweep's row 'variant.block_x' (256 threads a block) in NAIVE_02."""
    variant, block_x = arg.rsplit(".", 1)
    rows = results_files.read_json(NAIVE_02)["block_shape_sweep"]["rows"]
    return next(r["gflops"] for r in rows if r["variant"] == variant and r["block_x"] == int(block_x)
                and r["block_x"] * r["block_y"] == 256) / 1000


def _ladder(variant: str) -> dict:
    """The row of a variant (or 'cublas') in the ladder of 2026-11-22."""
    data = results_files.read_json(LADDER_2026_11_22)
    return data["cublas"] if variant == "cublas" else next(r for r in data["rows"] if r["variant"] == variant)


def _s03_runs(key: str) -> list[float]:
    """The three timings of one kernel of exp_03b, 'V3.1' (run 1, exp_03b.json) or 'smem_rowsx.2' (exp_03b_after)."""
    name, run = key.rsplit(".", 1)
    data = results_files.read_json(EXPERIMENTS_2026_11_22 / ("exp_03b.json" if run == "1" else "exp_03b_after.json"))
    runs = data["tflops_three_runs"]
    return runs["course kernel (bench.time_variant)"] if name == "course" else runs[name]


def _median(values) -> float:
    return sorted(values)[len(values) // 2]


def _s03_gain_pct(arg: str) -> float:
    """'V3.V0.1': how much faster the median of V3 ran than V0's in run 1 of exp_03b, in %."""
    a, b, run = arg.split(".")
    return 100.0 * (_median(_s03_runs(f"{a}.{run}")) / _median(_s03_runs(f"{b}.{run}")) - 1)


def _s03_compile_spread_pct() -> float:
    """The widest gap between the medians of stage 03 under each compiler and carveout of exp_compile, in %."""
    runs = results_files.read_json(EXPERIMENTS_2026_11_22 / "exp_compile.json")["tflops_three_runs"]
    medians = [_median(v) for k, v in runs.items() if k.startswith("03_smem_tiling")]
    return 100.0 * (max(medians) / min(medians) - 1)


def _s0405_row(arg: str) -> dict:
    """'05.128.128.16.16.4': the row of stage 05 with those template arguments in STAGES_04_05 (its tuning run)."""
    stage, *args = arg.split(".")
    rows = results_files.read_json(STAGES_04_05)["rows"]
    return next(r for r in rows if r["variant"].startswith(stage) and r["template_args"] == [int(a) for a in args])


def _s04_slower_pct(arg: str) -> float:
    """How much slower a configuration of stage 04 ran than the fastest of the tuning run, in %."""
    best = max(r["tflops"] for r in results_files.read_json(STAGES_04_05)["rows"] if r["variant"].startswith("04"))
    return 100.0 * (1 - _s0405_row(arg)["tflops"] / best)


def _s05_exploration() -> dict:
    return results_files.read_json(STAGES_04_05)["exploration_05"]


def _s05_explored(arg: str) -> float:
    """'contiguous.2.128.128.16.16.4': TFLOP/s of that mapping, unroll and configuration in the exploration of 05."""
    mapping, unroll, *args = arg.split(".")
    config = "BM={}, BN={}, BK={}, TM={}, TN={}".format(*args)
    return next(r["tflops"] for r in _s05_exploration()["rows"]
                if r["mapping"] == mapping and str(r["unroll"]) == unroll and r["config"] == config)


def _s05_bars(kernel: str) -> float:
    """TFLOP/s of a row of exp_bars.json: 'float4_design' (seed 004's V1 with float4 copies), 'course_timer' (stage
    05 timed through the course's launch checks then) or 'bare' (stage 05, raw launches, NVRTC)."""
    rows = results_files.read_json(EXPERIMENTS_2026_11_22 / "exp_bars.json")["rows"]
    name = {"float4_design": "ref v1<true> (seed 004 V1, float4)", "course_timer": "05_2d_thread_tiling",
            "bare": "05_2d_thread_tiling NVRTC carveout 100"}[kernel]
    return next(r["tflops"] for r in rows if r["kernel"] == name)


def _s06_median(key: str) -> float:
    """The median of the three runs of a kernel of exp_06_07.json: '05.128.128.16.16.4', 'padded.128.128.16.8.8',
    'padded4.128.128.8.8.8' (PAD = 4), 'cublas' or 'seed_v2'."""
    kernels = results_files.read_json(EXP_06_07)["kernels"]
    if key in ("cublas", "seed_v2"):
        name = "cuBLAS (cupy.matmul)" if key == "cublas" else "seed 004 V2 design (reference, no bounds checks)"
    else:
        kind, *args = key.split(".")
        tile = "(" + ", ".join(args) + ")"
        name = {"05": f"05 kept {tile}", "padded4": f"06 padded PAD=4 {tile}"}.get(kind, f"06 {kind} {tile}")
    return statistics.median(kernels[name]["tflops_three_runs"])


def _s06_change_pct(key: str) -> float:
    """'padded.128.128.16.8.8': how much a fix changed stage 05's time in the same tile, in % (the median of three)."""
    return 100.0 * (_s06_median(key) / _s06_median(".".join(["05", *key.split(".")[1:]])) - 1)


def _s06_spread_pct() -> float:
    """The widest spread of a kernel's three runs in exp_06_07.json (stages 05 and 06), % of its median."""
    kernels = results_files.read_json(EXP_06_07)["kernels"].values()
    return max(100.0 * (max(k["tflops_three_runs"]) - min(k["tflops_three_runs"])) / statistics.median(k["tflops_three_runs"])
               for k in kernels if k.get("file") in ("05_2d_thread_tiling.cu", "06_padded.cu", "06_transposed_a.cu",
                                                     "06_swizzled.cu"))


FACTS.update({
    "s02_tflops": (NAIVE_02.name, lambda v: _s02_row(v)["tflops"]),
    "s02_pct_cublas": (NAIVE_02.name, lambda v: _s02_row(v)["pct_cublas"]),
    "s02_speedup": (NAIVE_02.name, lambda: _s02_row("02_naive_coalesced")["tflops"] / _s02_row("02_naive")["tflops"]),
    "s02_sweep_tflops": (NAIVE_02.name, _s02_sweep),
    "s03_ladder_tflops": (LADDER_2026_11_22.name, lambda v: _ladder(v)["tflops"]),
    "s03_ladder_pct_cublas": (LADDER_2026_11_22.name, lambda v: _ladder(v)["pct_cublas"]),
    "s03_ladder_speedup": (LADDER_2026_11_22.name,
                           lambda: _ladder("03_smem_tiling")["tflops"] / _ladder("02_naive_coalesced")["tflops"]),
    "s03_exp_median_tflops": ("experiments_h200_2026-11-22/exp_03b*.json", lambda k: _median(_s03_runs(k))),
    "s03_exp_gain_pct": ("experiments_h200_2026-11-22/exp_03b*.json", _s03_gain_pct),
    "s03_compile_spread_pct": ("experiments_h200_2026-11-22/exp_compile.json", _s03_compile_spread_pct),
    "s04_tflops": (STAGES_04_05.name, lambda a: _s0405_row(a)["tflops"]),
    "s04_pct_cublas": (STAGES_04_05.name, lambda a: _s0405_row(a)["pct_cublas"]),
    "s04_cublas_tflops": (STAGES_04_05.name, lambda when: results_files.read_json(STAGES_04_05)["cublas"][when]["tflops"]),
    "s04_slower_pct": (STAGES_04_05.name, _s04_slower_pct),
    "s05_explored_tflops": (STAGES_04_05.name, _s05_explored),
    "s05_explored_best_tflops": (STAGES_04_05.name, lambda: max(r["tflops"] for r in _s05_exploration()["rows"])),
    "s05_explored_cublas_tflops": (STAGES_04_05.name, lambda: _s05_exploration()["cublas_tflops"]),
    "s05_mapping_spread_pct": (STAGES_04_05.name, lambda: 100.0 * (max(_s05_exploration()["per_mapping_best"].values())
                                                                   / min(_s05_exploration()["per_mapping_best"].values()) - 1)),
    "s05_bars_tflops": ("experiments_h200_2026-11-22/exp_bars.json", _s05_bars),
    "s05_timer_cost_pct": ("experiments_h200_2026-11-22/exp_bars.json",
                           lambda: 100.0 * (1 - _s05_bars("course_timer") / _s05_bars("bare"))),
    "s06_tflops": (EXP_06_07.name, _s06_median),
    "s06_change_pct": (EXP_06_07.name, lambda k: abs(_s06_change_pct(k))),
    "s06_spread_pct": (EXP_06_07.name, _s06_spread_pct),
})


# ---- stages 07-10 (notebooks 07-10) ------------------------------------------------------------------------------
STAGES_06_09 = RESULTS_DIR / "stages_06_09_h200_2026-11-22"
# Every H200 run at 4096^3 with the defaults of stages 07-09 and cuBLAS FP32 in the same run: the two experiments
# (each kernel the median of three interleaved medians of 50, cuBLAS the median of its three) and the five ladders.
H200_RUNS_07_09 = (STAGES_06_09 / "exp_08_09.json", STAGES_06_09 / "exp_08_09_b.json",
                   RESULTS_DIR / "ladder_h200_2026-11-22_02-09.json",
                   *(RESULTS_DIR / f"gpu_h200_2026-11-{day}" / "ladder.json" for day in (22, 23, 24, 25)))
S07_KERNELS = {   # exp_06_07.json's kernels by a short name
    "05_8x8": "05 kept (128, 128, 8, 8, 8)", "06_8x8": "06 transposed_a (128, 128, 8, 8, 8)",
    "07_8x8": "07 vectorized (128, 128, 8, 8, 8)", "v2": "seed 004 V2 design (reference, no bounds checks)",
    "07_checked": "07, every tile checked (128, 128, 8, 8, 8)", "cublas": "cuBLAS (cupy.matmul)"}
S09_ABLATIONS = {"checked": "variant: every tile checked", "one_tile": "variant: one tile a pass",
                 "one_step": "variant: one step's values in registers", "min_blocks_1": None}
S10_EXP = RESULTS_DIR / "stage_10_h200_2026-11-23" / "exp_10.json"
S10_WGMMA = RESULTS_DIR / "stage_10_h200_2026-11-24" / "measure_10_wgmma.json"
S10_H100_ROUND = RESULTS_DIR / "stage_10_h100_2026-11-24" / "exp_10_wgmma_round.json"
S10_WMMA = {"default": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 1>", "round0": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 0>",
            "round2": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 2>", "wide": "sgemm_tensor_cores<128, 256, 32, 64, 128, 3, 2>"}
S10_NCU = {"wmma": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 1>", "wmma_round0": "sgemm_tensor_cores<128, 128, 32, 64, 64, 3, 0>",
           "mma_sync": "sgemm_mma_sync<128, 128, 32, 64, 64, 3, 1>",
           "wgmma": "sgemm_wgmma<256, 128, 4, 0>", "wgmma_round1": "sgemm_wgmma<256, 128, 4, 1>", "cublas_tf32": "sm90_xmma"}


def _mid(xs) -> float:
    """The median as the notebooks 07-10 take it (statistics.median)."""
    return float(statistics.median(xs))


def h200_runs_07_09() -> dict[str, dict]:
    """run -> {'cublas': TFLOP/s, variant: TFLOP/s of its registered default} for each file of H200_RUNS_07_09; a
    run is named by its file's stem, or its folder's name for a ladder.json."""
    runs = {}
    for path in H200_RUNS_07_09:
        data = results_files.read_json(path)
        with results_files.reading(path):
            if "rows" in data and "cublas_tflops_three_runs" in data:
                by_expr = {r["expr"]: _mid(r["tflops_three_runs"]) for r in data["rows"]
                           if not r.get("error") and not r.get("variant")}
                run = {"cublas": _mid(data["cublas_tflops_three_runs"])}
                for v in ("07_vectorized", "08_warp_tiling", "09_double_buffering", "09_async_copy"):
                    run[v] = by_expr[stages.variant(v).name_expression()]
            else:
                run = {"cublas": data["cublas"]["tflops"], **{r["variant"]: r["tflops"] for r in data["rows"]}}
        runs[path.parent.name if path.name == "ladder.json" else path.stem] = run
    return runs


def _run_pct(variant: str, run: dict) -> float:
    return 100.0 * run[variant] / run["cublas"]


def _runs(arg: str) -> tuple[str, list[dict]]:
    """'VARIANT' or 'VARIANT/RUN': the variant and the runs meant."""
    variant, _, name = arg.partition("/")
    runs = h200_runs_07_09()
    return variant, [runs[name]] if name else list(runs.values())


def _runs_stat(kind: str, arg: str) -> float:
    """kind 'min_tflops', 'max_pct', ...: over the runs of H200_RUNS_07_09 (or the one named) of a variant."""
    how, _, what = kind.partition("_")
    variant, runs = _runs(arg)
    values = [r[variant] if what == "tflops" else _run_pct(variant, r) for r in runs]
    return {"min": min, "max": max}[how](values)


def _runs_met(arg: str) -> int:
    """'VARIANT/PCT': in how many runs the variant reached PCT % of cuBLAS."""
    variant, _, pct = arg.partition("/")
    return sum(_run_pct(variant, r) >= float(pct) for r in h200_runs_07_09().values())


def _runs_cublas(how: str) -> float:
    return {"min": min, "max": max}[how](r["cublas"] for r in h200_runs_07_09().values())


def _gain_over_08(how: str) -> float:
    """How much faster 09_double_buffering ran than 08_warp_tiling in the same run, in % (the least or the most)."""
    gains = [100.0 * (r["09_double_buffering"] / r["08_warp_tiling"] - 1) for r in h200_runs_07_09().values()]
    return {"min": min, "max": max}[how](gains)


def _exp_06_07(name: str) -> dict:
    data = results_files.read_json(STAGES_06_09 / "exp_06_07.json")
    with results_files.reading(STAGES_06_09 / "exp_06_07.json"):
        return {k: _mid(data["kernels"][v]["tflops_three_runs"]) for k, v in S07_KERNELS.items()}[name]


def _s07_gain_over_06() -> float:
    """How much faster 07 ran than 06_transposed_a with the same 8 x 8 tiles (exp_06_07.json), in %."""
    return 100.0 * (_exp_06_07("07_8x8") / _exp_06_07("06_8x8") - 1)


def _exp_08_09(expr: str, variant: str | None = None) -> float:
    path = STAGES_06_09 / "exp_08_09.json"
    data = results_files.read_json(path)
    with results_files.reading(path):
        return next(_mid(r["tflops_three_runs"]) for r in data["rows"]
                    if r["expr"] == expr and r.get("variant") == variant and not r.get("error"))


def _s08_bk8_loss() -> float:
    """How much slower 08 with BK = 8 ran than 07's default in exp_08_09.json, in %."""
    return 100.0 * (1 - _exp_08_09("sgemm_warp_tiling<128, 128, 8, 32, 64, 8, 8>")
                    / _exp_08_09("sgemm_vectorized<128, 128, 8, 8, 8>"))


def _s09_ablation(name: str) -> float:
    """How much slower an ablation of 09_double_buffering's default ran than the default (exp_08_09.json), in %."""
    default = "sgemm_double_buffering<128, 128, 8, 32, 64, 8, 8, 2>"
    if name == "min_blocks_1":
        other = _exp_08_09(default[:-2] + "1>")
    else:
        other = _exp_08_09(default, S09_ABLATIONS[name])
    return 100.0 * (1 - other / _exp_08_09(default))


S0809_ROWS = {   # exp_08_09.json's rows the notebooks cite, by a short name: (expr, variant)
    "07": ("sgemm_vectorized<128, 128, 8, 8, 8>", None),
    "08_bk8": ("sgemm_warp_tiling<128, 128, 8, 32, 64, 8, 8>", None),
    "09": ("sgemm_double_buffering<128, 128, 8, 32, 64, 8, 8, 2>", None),
    "09_checked": ("sgemm_double_buffering<128, 128, 8, 32, 64, 8, 8, 2>", S09_ABLATIONS["checked"]),
    "async_128x256_2": ("sgemm_async_copy<128, 256, 8, 64, 64, 8, 16, 2, 1>", None),
    "async_128x128_3": ("sgemm_async_copy<128, 128, 8, 32, 64, 8, 8, 3, 2>", None)}


def _s0809_sweep(arg: str) -> float:
    """'SIZE/KERNEL' (KERNEL 08, 09db, 09async or cublas): TFLOP/s in exp_08_09.json's sweep."""
    size, _, kernel = arg.partition("/")
    row = next(r for r in results_files.read_json(STAGES_06_09 / "exp_08_09.json")["sweep"]["rows"]
               if r["size"] == int(size))
    return next(v for k, v in row["tflops"].items() if k.split()[0] == kernel)


FACTS.update({
    "s0809_tflops": ("stages_06_09_h200_2026-11-22/exp_08_09.json", lambda name: _exp_08_09(*S0809_ROWS[name])),
    "s0809_sweep": ("stages_06_09_h200_2026-11-22/exp_08_09.json", _s0809_sweep),
})


def _s10_wmma(kind: str, name: str) -> float:
    """TFLOP/s or % of cuBLAS TF32 of a wmma configuration in exp_10.json (the notebook's table)."""
    data = results_files.read_json(S10_EXP)
    row = next(r for r in tensor_cores.committed_configs(data) if r["kernel"] == S10_WMMA[name])
    return row["TFLOP/s"] if kind == "tflops" else row["% of cuBLAS (same precision)"]


def _s10_wmma_cost(name: str) -> float:
    """How much slower the default (ROUND = 1) ran than ROUND = 0, or ROUND = 2 than the default, in %."""
    if name == "round1":
        return 100.0 * (1 - _s10_wmma("tflops", "default") / _s10_wmma("tflops", "round0"))
    return 100.0 * (1 - _s10_wmma("tflops", "round2") / _s10_wmma("tflops", "default"))


def _s10_pipe(arg: str) -> float:
    """'DAY/KERNEL': the tensor pipe's % busy in the Nsight Compute run of results/stage_10_h200_DAY/."""
    day, _, kernel = arg.partition("/")
    rows = tensor_cores.committed_ncu(RESULTS_DIR / f"stage_10_h200_{day}")
    return next(r["tensor pipe active (%)"] for r in rows if r["kernel"].startswith(S10_NCU[kernel]))


def _s10_wgmma_rounds() -> list[dict]:
    return tensor_cores.wgmma_rounds(results_files.read_json(S10_WGMMA))


def _s10_wgmma(kind: str, arg: str = "") -> float:
    """kind 'min'/'max'/'median' TFLOP/s over the rounds; 'pct' ARG: % of cuBLAS TF32 in round ARG, or the median."""
    rounds = _s10_wgmma_rounds()
    if kind == "pct":
        pcts = [r["10_wgmma % of cuBLAS TF32"] for r in rounds]
        return pcts[int(arg) - 1] if arg else _mid(pcts)
    values = [r["10_wgmma TFLOP/s"] for r in rounds]
    return {"min": min, "max": max, "median": _mid}[kind](values)


def _s10_wgmma_sweep_pct(size: str) -> float:
    """10_wgmma's % of cuBLAS TF32 at one size of the committed sweep."""
    row = next(r for r in tensor_cores.wgmma_sweep(results_files.read_json(S10_WGMMA)) if r["size"] == int(size))
    return 100.0 * row["10_wgmma"] / row["cublas_tf32"]


def _s10_h100(rounding: str) -> float:
    """'0' or '1': the mean TFLOP/s of 10_wgmma's default tiles with that ROUND on the H100 (exp_10_wgmma_round.json);
    'cost': how much slower ROUND = 1 ran, in %."""
    data = results_files.read_json(S10_H100_ROUND)
    with results_files.reading(S10_H100_ROUND):
        def mean(r):
            xs = [row["tflops"] for row in data["rows"] if row["config"] == f"sgemm_wgmma<256, 128, 4, {r}>"]
            return sum(xs) / len(xs)
    return 100.0 * (1 - mean(1) / mean(0)) if rounding == "cost" else mean(int(rounding))


FACTS.update({
    "s0709_min_tflops": ("the H200 runs of facts.H200_RUNS_07_09", lambda arg: _runs_stat("min_tflops", arg)),
    "s0709_max_tflops": ("the H200 runs of facts.H200_RUNS_07_09", lambda arg: _runs_stat("max_tflops", arg)),
    "s0709_min_pct": ("the H200 runs of facts.H200_RUNS_07_09", lambda arg: _runs_stat("min_pct", arg)),
    "s0709_max_pct": ("the H200 runs of facts.H200_RUNS_07_09", lambda arg: _runs_stat("max_pct", arg)),
    "s0709_cublas_min": ("the H200 runs of facts.H200_RUNS_07_09", lambda: _runs_cublas("min")),
    "s0709_cublas_max": ("the H200 runs of facts.H200_RUNS_07_09", lambda: _runs_cublas("max")),
    "s0709_cublas": ("the H200 runs of facts.H200_RUNS_07_09", lambda run: h200_runs_07_09()[run]["cublas"]),
    "s0709_runs": ("the H200 runs of facts.H200_RUNS_07_09", lambda: len(H200_RUNS_07_09)),
    "s0709_runs_met": ("the H200 runs of facts.H200_RUNS_07_09", _runs_met),
    "s07_tflops": ("stages_06_09_h200_2026-11-22/exp_06_07.json", _exp_06_07),
    "s07_gain_over_06_pct": ("stages_06_09_h200_2026-11-22/exp_06_07.json", _s07_gain_over_06),
    "s08_bk8_loss_pct": ("stages_06_09_h200_2026-11-22/exp_08_09.json", _s08_bk8_loss),
    "s09_gain_over_08_min_pct": ("the H200 runs of facts.H200_RUNS_07_09", lambda: _gain_over_08("min")),
    "s09_gain_over_08_max_pct": ("the H200 runs of facts.H200_RUNS_07_09", lambda: _gain_over_08("max")),
    "s09_ablation_pct": ("stages_06_09_h200_2026-11-22/exp_08_09.json", _s09_ablation),
    "s10_wmma_tflops": ("stage_10_h200_2026-11-23/exp_10.json", lambda name: _s10_wmma("tflops", name)),
    "s10_wmma_pct": ("stage_10_h200_2026-11-23/exp_10.json", lambda name: _s10_wmma("pct", name)),
    "s10_wmma_cost_pct": ("stage_10_h200_2026-11-23/exp_10.json", _s10_wmma_cost),
    "s10_pipe_pct": ("stage_10_h200_*/ncu_10*_metrics.csv", _s10_pipe),
    "s10_wgmma_min_tflops": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", lambda: _s10_wgmma("min")),
    "s10_wgmma_max_tflops": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", lambda: _s10_wgmma("max")),
    "s10_wgmma_median_tflops": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", lambda: _s10_wgmma("median")),
    "s10_wgmma_pct": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", lambda arg="": _s10_wgmma("pct", arg)),
    "s10_wgmma_sweep_pct": ("stage_10_h200_2026-11-24/measure_10_wgmma.json", _s10_wgmma_sweep_pct),
    "s10_h100_wgmma": ("stage_10_h100_2026-11-24/exp_10_wgmma_round.json", _s10_h100),
})


def _cpu_gemm() -> dict:
    """The newest committed CPU benchmark of stage 01 (tools/cpu_gemm_bench.py)."""
    found = sorted(RESULTS_DIR.glob("cpu_gemm_*.json"), key=lambda p: p.stem[-10:])
    if not found:
        raise results_files.ResultsFileError("no results/cpu_gemm_*.json: run tools/cpu_gemm_bench.py and commit it")
    return results_files.read_json(found[-1])


def _s01_row(arg: str, key: str, rows: str = "rows") -> float:
    """'VERSION/SIZE': one row of the benchmark at SIZE^3 (rows='default': the default-vector-width run)."""
    version, _, size = arg.partition("/")
    data = _cpu_gemm()
    table = data["default_vector_width"]["rows"] if rows == "default" else data["rows"]
    return next(r[key] for r in table if r["version"] == version and r["M"] == int(size))


def _s01_ceiling(name: str) -> float:
    """'fma_peak', 'one_chain' (GFLOP/s) or a copy level 'L1', 'L2', 'DRAM' (GB/s) of the benchmark's ceilings."""
    c = _cpu_gemm()["ceilings"]
    return {"fma_peak": c["fma_peak_gflops"], "one_chain": c["fma_one_chain_gflops"]}.get(name) or c["copy_gbs"][name]


FACTS.update({
    "s01_gflops": ("the newest cpu_gemm_*.json", lambda arg: _s01_row(arg, "gflops")),
    "s01_pct_openblas": ("the newest cpu_gemm_*.json", lambda arg: _s01_row(arg, "pct_openblas")),
    "s01_default_gflops": ("the newest cpu_gemm_*.json", lambda arg: _s01_row(arg, "gflops", "default")),
    "s01_ceiling": ("the newest cpu_gemm_*.json", _s01_ceiling),
})


def _h200_ceiling(arg: str) -> float:
    """'cublas_min', 'cublas_max' (cuBLAS FP32 at 4096³) or 'peak' (FP32 peak) over every committed H200 ceilings file."""
    found = [*RESULTS_DIR.glob("ceilings_h200_*.json"), *RESULTS_DIR.glob("gpu_h200_*/ceilings.json")]
    values = [results_files.read_json(p)["ceilings"]["fp32_peak_tflops" if arg == "peak" else "cublas_tflops"] for p in found]
    return min(values) if arg == "cublas_min" else max(values)


FACTS["h200_ceiling"] = ("results/ceilings_h200_*.json and gpu_h200_*/ceilings.json", _h200_ceiling)
FACTS["ratio"] = ("the files of facts A and B", lambda arg: value(arg.partition(":")[0]) / value(arg.partition(":")[2]))
FACTS.update(hopper.FACTS)   # stage 12's, computed in helpers/measure/hopper.py beside its readers
FACTS.update(steps.FACTS)    # a stage's one-idea steps (tools/measure_steps.py): `steps_gain_pct/07/07_runs_of_four`
FACTS.update(FACTS_10)       # more of notebook 10's, in helpers/measure/facts_10.py


def value(name: str) -> float:
    """The number a fact's name stands for, computed now from its results file."""
    key, _, arg = name.partition("/")
    if key not in FACTS:
        raise KeyError(f"no fact {key!r}: facts are {', '.join(FACTS)} (helpers/measure/facts.py)")
    return FACTS[key][1](arg) if arg else FACTS[key][1]()


def agrees(text: str, fact: float, power: str = "") -> bool:
    """Whether the number as written (e.g. '11', '236.9', '1,089'; with power '⁻⁴', '2.61' for 2.61 × 10⁻⁴) is the
    fact rounded to its decimals."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = 10.0 ** int(power.translate(SUPERSCRIPTS)) if power else 1.0
    return round(float(fact) / scale, decimals) == float(text.replace(",", ""))


SUPERSCRIPTS = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")

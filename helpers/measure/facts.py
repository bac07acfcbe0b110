"""Numbers that notebooks state in prose, each computed from a committed results file.

A notebook's Markdown cannot run code, so a measured number in its prose is text. To keep that text true, each
such number carries a marker naming the fact it states, right after it:

    `06_transposed_a` gained 11%<!-- fact: gain_pct/06_transposed_a --> with a 128 x 256 block tile

The marker is an HTML comment: Jupyter does not show it. `tests/course/test_numbers_in_prose.py` reads every
marker of every notebook, computes the fact from its results file and checks the number before the marker,
rounded as written; in the notebooks of ENFORCED it also fails on a number followed by "TFLOP/s" or "%" that has
no marker (a computed number, not a measurement, says so: `<!-- not measured: why -->`).

FACTS maps a name to (the results file it reads, a function computing the number). A name with a slash takes an
argument after it: `gain_pct/08_warp_tiling`.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Callable

from helpers.core import results_files
from helpers.core.paths import RESULTS_DIR
from helpers.measure import autotune, dispatch_table

AUTOTUNE_STAGES_03_09 = RESULTS_DIR / "autotune_h200_2026-11-22.json"
AUTOTUNE_WGMMA = RESULTS_DIR / "autotune_h200_2026-11-24.json"
ENFORCED = ("11",)   # notebooks (stage ids) whose every TFLOP/s and % in prose carries a marker
MARKER = re.compile(r"(?P<number>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>%|TFLOP/s)?\s*<!--\s*fact:\s*(?P<name>[\w/.-]+)\s*-->")


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


def value(name: str) -> float:
    """The number a fact's name stands for, computed now from its results file."""
    key, _, arg = name.partition("/")
    if key not in FACTS:
        raise KeyError(f"no fact {key!r}: facts are {', '.join(FACTS)} (helpers/measure/facts.py)")
    return FACTS[key][1](arg) if arg else FACTS[key][1]()


def agrees(text: str, fact: float) -> bool:
    """Whether the number as written (e.g. '11', '236.9', '1,089') is the fact rounded to its decimals."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(float(fact), decimals) == float(text.replace(",", ""))

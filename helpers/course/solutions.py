"""The right answer to every checked exercise, for teachers (python -m helpers teacher).

Each entry gives the arguments of the checker call, computed the way its checker computes what it
expects (from traces of the kernel files, the intensity model, the occupancy calculator, this
machine's caches for stage 01), so an edited kernel gets answers that fit the edit.
tests/test_teacher.py runs every checker on its solution: an exercise without a solution here,
or a solution its checker refuses, fails there.

Where several answers are right (exercises 3 and 4 of stage 02 accept any block shape that
does it), the solution is one of them.
"""

from __future__ import annotations

import inspect
import re
from typing import Callable
from helpers.measure import accesses
from helpers.core import configs
from helpers.core import arch
from helpers.course import exercises
from helpers.course import exercises as e
from helpers.core.configs import CoalescedConfig
from helpers.core import stages
from helpers.measure import pipeline
from helpers.course import cpu_gemm as g
from helpers.core.paths import ROOT

CHECKER = re.compile(r"check_(\d\d)_exercise_(\d+)$")


def _ex(name: str):
    return getattr(exercises, name)


def _02_2():
    return (CoalescedConfig(*e.EX2_BLOCK).grid(e.EX2_M, e.EX2_N)[:2],)


def _03_1():
    t = e.EX03_1_TILE
    return ((e._loads_per_element("03_smem_tiling", {"tile": t}),
             e._loads_per_element("02_naive_coalesced", {"block_x": t, "block_y": t})),)


def _words_and_wavefronts(view):
    return ((view.distinct_words, view.report.wavefronts),)


def _04_1():
    c = stages.variant("04_1d_thread_tiling").default
    occ = arch.occupancy(e.EX04_1_ARCH, c.threads(), e.EX04_1_REGISTERS, c.static_shared_bytes())
    return ((occ.active_blocks, occ.active_warps),)


def _05_1():
    return (tuple(round(e._fmas_per_shared_load(tm, tn), 4) for tm, tn in e.EX05_1_TILES),)


def _06_1():
    return ({p for p in e.EX06_1_PADS
             if e._first_shared_load("06_padded", dict(e.EX06_1_CONFIG, PAD=p), "As").report.ways == 1},)


def _06_2():
    return (tuple(e._first_shared_store("06_transposed_a", f, "As").report.ways for f in e.EX06_2_FIELDS),)


def _07_1():
    return (tuple(e._stage07_global_loads(*s, first_tile=True)["A"][0] for s in e._ex07_1_shapes()),)


def _07_3():
    w06, w07, _, _ = e._ex07_3_wavefronts()
    return ((w06, w07),)


def _08_1():
    c = configs.WarpTileConfig(**e.EX08_1_CONFIG)
    return (((c.BM // c.WM) * (c.BN // c.WN), c.WM // c.TM),)


def _shared_bytes(variant_name: str, config_type: str, fields: str) -> tuple:
    config = getattr(stages, config_type)(**getattr(e, fields))
    return (sum(a.size for a in e._trace_of(variant_name, config).shared_variables),)


def _09_2():
    s = pipeline.kernel_schedule(stages.variant("09_double_buffering"), tiles=e.EX09_2_TILES)
    return (sum(1 for i in s.intervals if i.computed and (i.loading or i.in_flight)),)


def _09_3():
    race = e._ex09_3_races()[0]
    return ((race.first[1], race.second[1]),)


def _11_1():
    space = e._ex11_1_space()
    return ((len(space.configs), len(space.rejected)),)


def _11_2():
    return ({k for k, rule in e._ex11_2_rules().items() if rule is None},)


def _11_3():
    best = max((s for s in e._ex11_3_steps() if s["speedup"] is not None), key=lambda s: s["speedup"])
    return (best["variant"][:2],)


def _01_1():
    return (round(2 * g.EX1_MR * g.EX1_NR / ((g.EX1_MR + g.EX1_NR) * g.FLOAT_BYTES), 4),)


def _01_2():
    per_row = g.EX2_NR // 16
    return ((g.VECTOR_REGISTERS - per_row - 1) // per_row,)


def _01_3():
    l1 = g.cache_sizes().get("L1", 32 * 1024)
    return ((l1 // 2) // (g.EX3_NR * g.FLOAT_BYTES) // 16 * 16,)


def _wgmma_bm() -> int:
    return stages.variant("10_wgmma").default.BM


def _first_load(variant: str, config_name: str, array: str, size_name: str | None = None):
    def solve():
        size = getattr(e, size_name) if size_name else accesses.TRACE_SIZE
        return _words_and_wavefronts(e._first_shared_load(variant, getattr(e, config_name), array, size))
    return solve


# checker name -> the arguments that make it say "Correct"
SOLUTIONS: dict[str, Callable[[], tuple]] = {
    "check_01_exercise_1": _01_1,
    "check_01_exercise_2": _01_2,
    "check_01_exercise_3": _01_3,
    "check_02_exercise_1": lambda: ("02_naive_coalesced",),
    "check_02_exercise_2": _02_2,
    "check_02_exercise_3": lambda: (1, 32),     # blockDim.x = 1: the 32 lanes of warp 0 lie in 32 rows
    "check_02_exercise_4": lambda: (1, 32),     # blockDim.x = 1: warp 0 stores one row of 32 columns
    "check_03_exercise_1": _03_1,
    "check_03_exercise_2": lambda: _words_and_wavefronts(_ex("_as_load")(_ex("EX03_2_TILE"))),
    "check_04_exercise_1": _04_1,
    "check_04_exercise_2": _first_load("04_1d_thread_tiling", "EX04_2_CONFIG", "As"),
    "check_05_exercise_1": _05_1,
    "check_05_exercise_2": _first_load("05_2d_thread_tiling", "EX05_2_CONFIG", "Bs", "EX05_2_SIZE"),
    "check_06_exercise_1": _06_1,
    "check_06_exercise_2": _06_2,
    "check_07_exercise_1": _07_1,
    "check_07_exercise_2": lambda: (_ex("_ex07_2_wide")(),),
    "check_07_exercise_3": _07_3,
    "check_08_exercise_1": _08_1,
    "check_08_exercise_2": lambda: _shared_bytes("08_warp_tiling", "WarpTileConfig", "EX08_1_CONFIG"),
    "check_09_exercise_1": lambda: _shared_bytes("09_async_copy", "AsyncCopyConfig", "EX09_1_CONFIG"),
    "check_09_exercise_2": _09_2,
    "check_09_exercise_3": _09_3,
    "check_10_exercise_1": lambda: (_ex("stages").TensorCoreConfig(**_ex("EX10_1_CONFIG")).shared_bytes(),),
    "check_10_exercise_2": lambda: ((lambda f, h: f // h)(*_ex("_ex10_2_counts")()),),
    "check_10_exercise_3": lambda: (round(_ex("_ex10_3_ratio")(), 2),),
    "check_10_exercise_4": lambda: ((64 * _wgmma_bm() * 8, _wgmma_bm() * 8 * 4),),
    "check_11_exercise_1": _11_1,
    "check_11_exercise_2": _11_2,
    "check_11_exercise_3": _11_3,
}


def checker_modules() -> list[str]:
    """The modules of helpers that define checkers (found by reading the files, importing nothing)."""
    pattern = re.compile(r"^def check_\d\d_exercise_\d+\(", re.M)
    return sorted(f"helpers.{p.stem}" for p in (ROOT / "helpers").glob("*.py") if pattern.search(p.read_text()))


def checkers() -> dict[str, Callable]:
    """Every checker of the course, by name: {'check_05_exercise_1': function, ...}."""
    import importlib
    found = {}
    for module in checker_modules():
        m = importlib.import_module(module)
        found.update({n: f for n, f in vars(m).items() if CHECKER.match(n) and inspect.isfunction(f)})
    return dict(sorted(found.items()))


def solution(check_name: str) -> tuple:
    """The arguments that make `check_name` say "Correct". KeyError if there is none."""
    if check_name not in SOLUTIONS:
        raise KeyError(f"no solution for {check_name} in helpers/solutions.py (SOLUTIONS): add one computed the "
                       f"way the checker computes its answer.")
    return SOLUTIONS[check_name]()


def as_source(args: tuple) -> str:
    """The arguments as Python source, as they go between the parentheses of the call."""
    def one(a):
        if isinstance(a, (set, frozenset)):
            return "{" + ", ".join(one(x) for x in sorted(a)) + "}" if a else "set()"
        if isinstance(a, tuple):
            return "(" + ", ".join(one(x) for x in a) + ("," if len(a) == 1 else "") + ")"
        if hasattr(a, "item"):            # a numpy scalar
            a = a.item()
        return repr(a)
    return ", ".join(one(a) for a in args)

"""The solution registry: per checker, the arguments that make it say "Correct", computed the way the checker
computes its answer (from traces of the kernel files, the course's models, the committed measurements, this
machine's caches for stage 01), so an edited kernel gets answers that fit the edit.

The teacher kit reads it (teacher copies, helpers/teach/copies.py) and the maintainers' answers-on-screen
check (helpers/maintain/answers_on_screen.py). It lives apart from the checkers, in a folder of its own,
because the grader's sandbox leaves this folder out (helpers/teach/sandbox.py, HIDDEN): a notebook being
graded cannot import it, reload it or read it by any route. The learner's course never imports it.
"""

from __future__ import annotations

from typing import Callable

from helpers.core import configs
from helpers.core.configs_tensor_cores import TensorCoreConfig
from helpers.course.exercises import (CHECKER_NAME, stage01, stage02, stage03, stage04, stage05, stage06, stage07,
                                      stage08, stage09, stage10, stage11, stage12)
from helpers.course.exercises.traces import first_shared_load, traced_shared_bytes, words_and_wavefronts

# checker name -> the arguments that make it say "Correct" (call it: some read traces or this machine)
SOLUTIONS: dict[str, Callable[[], tuple]] = {
    # ---- stage 01: the third depends on this machine's L1
    "check_01_exercise_1": lambda: (round(stage01._ex1_intensity(), 4),),
    "check_01_exercise_2": lambda: (stage01._ex2_largest_mr(),),
    "check_01_exercise_3": lambda: (stage01._ex3_largest_kc(),),
    # ---- stage 02: exercises 3 and 4 accept any block shape that does it; the solution is one of them
    "check_02_exercise_1": lambda: ("02_naive_coalesced",),
    "check_02_exercise_2": lambda: (stage02._ex2_grid(),),
    "check_02_exercise_3": lambda: (1, 32),   # blockDim.x = 1: the 32 lanes of warp 0 lie in 32 rows
    "check_02_exercise_4": lambda: (1, 32),   # blockDim.x = 1: warp 0 stores one row of 32 columns
    "check_02_prediction": lambda: (stage02._prediction_answer(),),
    # ---- stage 03
    "check_03_exercise_1": lambda: (stage03._ex03_1_counts(),),
    "check_03_exercise_2": lambda: words_and_wavefronts(stage03._as_load(stage03.EX03_2_TILE)),
    "check_03_prediction": lambda: (stage03._prediction_answer(),),
    # ---- stage 04
    "check_04_exercise_1": lambda: (stage04._ex04_1_want(),),
    "check_04_exercise_2": lambda: words_and_wavefronts(
        first_shared_load("04_1d_thread_tiling", stage04.EX04_2_CONFIG, "As")),
    "check_04_prediction": lambda: (stage04._prediction_answer(),),
    # ---- stage 05
    "check_05_exercise_1": lambda: (tuple(round(stage05._fmas_per_shared_load(tm, tn), 4)
                                          for tm, tn in stage05.EX05_1_TILES),),
    "check_05_exercise_2": lambda: words_and_wavefronts(
        first_shared_load("05_2d_thread_tiling", stage05.EX05_2_CONFIG, "Bs", stage05.EX05_2_SIZE)),
    "check_05_prediction": lambda: (stage05._prediction_answer(),),
    # ---- stage 06
    "check_06_exercise_1": lambda: (stage06._ex06_1_pads(),),
    "check_06_exercise_2": lambda: (tuple(v.report.ways for v in stage06._ex06_2_views()),),
    "check_06_prediction": lambda: (stage06._prediction_answer(),),
    # ---- stage 07
    "check_07_exercise_1": lambda: (tuple(requests for requests, _ in stage07._ex07_1_loads_of_a()),),
    "check_07_exercise_2": lambda: (stage07.ex07_2_wide_matrices(),),
    "check_07_exercise_3": lambda: (stage07.ex07_3_wavefronts()[:2],),
    "check_07_prediction": lambda: (stage07._pred07_answer(),),
    # ---- stage 08
    "check_08_exercise_1": lambda: (stage08._ex08_1_want(),),
    "check_08_exercise_2": lambda: (traced_shared_bytes("08_warp_tiling",
                                                        configs.WarpTileConfig(**stage08.EX08_1_CONFIG)),),
    "check_08_prediction": lambda: (stage08._pred08_answer(),),
    # ---- stage 09
    "check_09_exercise_1": lambda: (traced_shared_bytes("09_async_copy",
                                                        configs.AsyncCopyConfig(**stage09.EX09_1_CONFIG)),),
    "check_09_exercise_2": lambda: (stage09._overlapping(stage09._ex09_2_schedule()),),
    "check_09_exercise_3": lambda: (stage09._ex09_3_first_race(),),
    "check_09_prediction": lambda: (stage09._pred09_answer(),),
    # ---- stage 10
    "check_10_exercise_1": lambda: (TensorCoreConfig(**stage10.EX10_1_CONFIG).shared_bytes(),),
    "check_10_exercise_2": lambda: (stage10._ex10_2_fmas_per_hmma(),),
    "check_10_exercise_3": lambda: (round(stage10._ex10_3_ratio(), 2),),
    "check_10_exercise_4": lambda: (stage10._ex10_4_want(),),
    "check_10_prediction": lambda: (stage10._pred10_answer(),),
    # ---- stage 11
    "check_11_exercise_1": lambda: (stage11._ex11_1_counts(),),
    "check_11_exercise_2": lambda: (stage11._candidates(stage11._ex11_2_rules()),),
    "check_11_exercise_3": lambda: (stage11._ex11_3_best(stage11._ex11_3_steps())["variant"][:2],),
    "check_11_exercise_5": lambda: (stage11._ex11_5_answer(),),
    # ---- stage 12
    "check_12_exercise_1": lambda: (stage12._stage_bytes(stage12.EX12_1_CONFIG),),
    "check_12_exercise_2": lambda: (stage12._worst_shape(),),
    "check_12_prediction": lambda: (stage12._prediction_answer(),),
}


def solution(check_name: str) -> tuple:
    """The arguments that make `check_name` say "Correct". KeyError if there is none."""
    if check_name not in SOLUTIONS:
        m = CHECKER_NAME.match(check_name)
        where = f"stage{m.group(1)}.py" if m else "its stage's module"
        raise KeyError(f"no solution for {check_name}: add it to SOLUTIONS in helpers/course/exercises/solutions/"
                       f"__init__.py, computed the way the checker in helpers/course/exercises/{where} computes its "
                       f"answer.")
    return SOLUTIONS[check_name]()

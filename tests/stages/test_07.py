"""Stage 07 (vectorized access): what notebook 07 claims, computed from traces of the kernel
files, and its exercise checkers (the right answer, each wrong answer they recognise, malformed
input). The traces run on the CPU emulator on every machine."""

import dataclasses

import pytest

from helpers.measure import accesses, facts, steps
from helpers.views import display
from helpers.course.exercises import stage07 as ex
from helpers.measure import memory
from helpers.core import stages
from helpers.measure import verify

pytestmark = pytest.mark.emulator

V07 = stages.variant("07_vectorized")
V06 = stages.variant("06_transposed_a")
SAME = dataclasses.asdict(V07.default)       # 06 with 07's tile sizes


def global_loads(variant, config, M, N, K):
    """{array: (requests, bytes per lane of the widest, sectors, ideal sectors)} of block 0's loads."""
    out = {}
    for q in memory.requests(accesses.kernel_trace(variant, config, M, N, K), "global"):
        if q.op != "load":
            continue
        n, width, got, ideal = out.get(q.array, (0, 0, 0, 0))
        s, i = memory.sectors(q)
        out[q.array] = (n + 1, max(width, q.size), got + s, ideal + i)
    return out


# ---- claims of the notebook --------------------------------------------------------------------
@pytest.mark.parametrize("M, N, K, wide", [
    (128, 128, 64, {"A", "B", "C"}),
    (128, 128, 63, {"B", "C"}),       # K % 4 != 0: A's rows leave the 16-byte grid
    (128, 128, 62, {"B", "C"}),
    (128, 127, 64, {"A"}),            # N % 4 != 0: B and C
    (127, 128, 64, {"A", "B", "C"}),  # M plays no part
])
def test_the_trace_shows_which_matrices_take_16_byte_loads(M, N, K, wide):
    loads = global_loads(V07, V07.default, M, N, K)
    assert {a for a, (_, width, _, _) in loads.items() if width == 16} == wide
    assert {a for a, (_, width, _, _) in loads.items() if width == 4} == {"A", "B", "C"} - wide


def test_the_4_byte_fallback_takes_four_times_the_requests_and_more_sectors_each():
    (n16, _, s16, i16), (n4, _, s4, i4) = (global_loads(V07, V07.default, 128, 128, K)["A"] for K in (64, 63))
    assert n4 == 4 * n16
    assert s16 == i16 == 16 * n16                    # 16-byte path: 16 sectors per request, all used
    assert s4 / n4 > 4 * (i4 / n4)                   # fallback: lanes 16 bytes apart, rows off the sector grid


def test_16_byte_copies_take_a_quarter_of_the_requests_for_the_same_sectors():
    l06 = global_loads(V06, V06.config(**SAME), 128, 128, 64)
    l07 = global_loads(V07, V07.default, 128, 128, 64)
    for array in ("A", "B"):
        assert l07[array][0] * 4 == l06[array][0]
        assert l07[array][2] == l06[array][2]
    assert l06["C"][2] / l06["C"][0] == 32 and l07["C"][2] / l07["C"][0] == 16   # 06: a sector per lane


def test_runs_of_4_make_the_16_byte_shared_loads_conflict_free():
    t06 = accesses.kernel_trace(V06, V06.config(**SAME), 128, 128, 64)
    t07 = accesses.kernel_trace(V07, V07.default, 128, 128, 64)
    merged = {q.array: memory.banks(dataclasses.replace(q, size=16)) for q in accesses.shared_requests(t06)}
    assert (merged["Bs"].ways, merged["Bs"].wavefronts) == (2, 8)       # 8 contiguous columns: 2-way
    for q in accesses.shared_requests(t07):
        b = memory.banks(q)
        assert q.size == 16 and b.ways == 1 and b.wavefronts == b.ideal == 4


def test_the_kernel_issues_what_the_configuration_says():
    c, K = V07.default, 64
    tiles, warps = K // c.BK, c.threads() // 32
    got = memory.per_line(accesses.kernel_trace(V07, c, 128, 128, K)).groupby(["space", "op", "array"])["requests"].sum()
    assert got[("global", "load", "A")] == tiles * c.BM * c.BK // 4 // 32
    assert got[("global", "load", "B")] == tiles * c.BK * c.BN // 4 // 32
    assert got[("shared", "load", "As")] == tiles * warps * c.BK * c.TM // 4
    assert got[("shared", "load", "Bs")] == tiles * warps * c.BK * c.TN // 4


@pytest.mark.parametrize("M, N, K", [(260, 136, 129), (136, 258, 130), (133, 131, 131), (129, 257, 132),
                                     (260, 132, 68)])
def test_correct_for_every_residue_of_K_and_N_modulo_4(M, N, K, cpu_backend):
    check = verify.check(V07, verify.Shape("residue", M, N, K))
    assert check.ok, check.details()


# ---- exercise 1 --------------------------------------------------------------------------------
def ex1_want():
    c = ex.ex07_1_config()
    n16 = c.BM * c.BK // 4 // 32
    return n16, 4 * n16, c.threads() // 32


def test_exercise_1_right_answer():
    n16, n4, _ = ex1_want()
    f = ex.check_07_exercise_1((n16, n4))
    assert f.ok and "four times as many" in f.message
    assert ex.check_07_exercise_1([n16, n4]).ok


@pytest.mark.parametrize("make, words", [
    (lambda n16, n4, w: (n4, n16), "swapped"),
    (lambda n16, n4, w: (n16 // w, n4 // w), "one warp"),
    (lambda n16, n4, w: (32 * n16, 32 * n4), "lanes' accesses"),
    (lambda n16, n4, w: (2 * n16, 2 * n4), "both tiles"),
    (lambda n16, n4, w: (n16, n16), "cannot take as few"),
    (lambda n16, n4, w: (n16, 2 * n16), "16-byte count is right"),
    (lambda n16, n4, w: (n16 + 1, n4), "4-byte count is right"),
    (lambda n16, n4, w: (n16 + 3, n4 + 5), "count runs of 4 floats"),
])
def test_exercise_1_wrong_answers_say_what_is_wrong(make, words):
    f = ex.check_07_exercise_1(make(*ex1_want()))
    assert not f.ok and words in f.message, f.message


@pytest.mark.parametrize("answer, words", [(("?", "?"), "placeholder"), (None, "placeholder"),
                                           ("sixteen", "two whole numbers"), ((1, 2, 3), "exactly two"),
                                           ((1.5, 6), "whole numbers")])
def test_exercise_1_malformed(answer, words):
    f = ex.check_07_exercise_1(answer)
    assert not f.ok and words in f.message, f.message


# ---- exercise 2 --------------------------------------------------------------------------------
def test_exercise_2_rule_from_the_trace():
    M, N, K = ex.EX07_2_SIZE
    assert ex.ex07_2_wide_matrices() == {m for m, n in (("A", K), ("B", N), ("C", N)) if n % 4 == 0} == {"A"}


@pytest.mark.parametrize("answer", ["A", "a", {"A"}, ["a"], ("A",), " A "])
def test_exercise_2_right_answer(answer):
    f = ex.check_07_exercise_2(answer)
    assert f.ok and "M plays no part" in f.message


@pytest.mark.parametrize("answer, words", [
    ({"A", "B", "C"}, "even is not enough"),
    ({"B", "C"}, "swapped"),
    (set(), "each matrix on its own"),
    ("none", "each matrix on its own"),
    ({"A", "B"}, "both or neither"),
    ("AC", "both or neither"),
    ({"C"}, "both or neither"),
])
def test_exercise_2_wrong_answers_say_what_is_wrong(answer, words):
    f = ex.check_07_exercise_2(answer)
    assert not f.ok and words in f.message, f.message


@pytest.mark.parametrize("answer, words", [("?", "placeholder"), (None, "placeholder"), ({"D"}, "not one of"),
                                           ([1], "with strings"), (5, "set of names")])
def test_exercise_2_malformed(answer, words):
    f = ex.check_07_exercise_2(answer)
    assert not f.ok and words in f.message, f.message


# ---- exercise 3 --------------------------------------------------------------------------------
def test_exercise_3_answer_from_the_traces():
    assert ex.ex07_3_wavefronts() == (16, 4, 4, 1)    # TN = 16: 4-way in 06's layout, none in 07's


def test_exercise_3_right_answer():
    f = ex.check_07_exercise_3((16, 4))
    assert f.ok and "quarter warp" in f.message


@pytest.mark.parametrize("answer, words", [
    ((4, 16), "swapped"),
    ((4, 1), "ways of the worst conflict"),
    ((2, 1), "at least 4 wavefronts"),
    ((16, 16), "32 consecutive words"),
    ((8, 4), "07's count is right"),
    ((4, 4), "07's count is right"),
])
def test_exercise_3_wrong_answers_say_what_is_wrong(answer, words):
    f = ex.check_07_exercise_3(answer)
    assert not f.ok and words in f.message, f.message


@pytest.mark.parametrize("answer, words", [(("?", 4), "placeholder"), ("16, 4", "two whole numbers"),
                                           ((16,), "exactly two")])
def test_exercise_3_malformed(answer, words):
    f = ex.check_07_exercise_3(answer)
    assert not f.ok and words in f.message, f.message


# ---- the three steps, one idea each -----------------------------------------------------------
STEPS = stages.stage("07").variants


def changed_lines(old, new) -> int:
    """Code lines (comments and blanks left out) added or removed from one kernel file to the next."""
    return sum(1 for ln in display.diff_text(old, new, 0, code_only=True).splitlines()
               if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


def test_the_steps_chain_from_06_transposed_a_to_the_stage_kernel():
    assert [v.name for v in STEPS] == ["07_float4_copies", "07_runs_of_four", "07_vectorized"]
    assert [v.parent for v in STEPS] == ["06_transposed_a", "07_float4_copies", "07_runs_of_four"]
    assert len({v.default for v in STEPS}) == 1, "the steps share one configuration, so each gain is its idea alone"


def code_lines(name) -> set[str]:
    """The kernel file's lines, stripped (a line is kept whole, with any comment after the code)."""
    return {ln.split("  //")[0].strip() for ln in stages.variant(name).path.read_text().splitlines()}


def test_each_step_changes_one_part_of_the_kernel():
    """Step 1 rewrites the global accesses and leaves 06's multiply loop as it was; step 2 rewrites the multiply
    loop and leaves step 1's copy; step 3 adds the unchecked loop and leaves step 2's multiply loop."""
    whole = changed_lines("06_transposed_a", "07_vectorized")
    per_step = [changed_lines(v.parent, v.name) for v in STEPS]
    assert per_step[0] < whole and per_step[1] + per_step[2] < whole / 2, (whole, per_step)
    multiply_06 = "for (int i = 0; i < TM; ++i) a[i] = As[k][threadRow * TM + i];"
    copy_b = "vb[i] = row < K ? load4(p, N - col, alignedB) : zero;"
    multiply_runs = "const float4 v = *reinterpret_cast<const float4*>(&Bs[k][g * 4 * THREAD_COLS + threadCol * 4]);"
    assert multiply_06 in code_lines("06_transposed_a") and multiply_06 in code_lines("07_float4_copies")
    assert copy_b in code_lines("07_float4_copies") and copy_b in code_lines("07_runs_of_four")
    assert multiply_runs in code_lines("07_runs_of_four") and multiply_runs in code_lines("07_vectorized")


def test_step_1_keeps_06s_conflict_and_step_2_removes_it():
    """Step 1 changes the global accesses only: its shared loads (merged into 16-byte ones, as ptxas does and
    results/ncu_h200_2026-11-27 shows) conflict 2-way on Bs as 06's do; step 2's runs of four do not."""
    copies, runs = STEPS[0], STEPS[1]
    merged = {q.array: memory.banks(dataclasses.replace(q, size=16))
              for q in accesses.shared_requests(accesses.kernel_trace(copies, copies.default, 128, 128, 64))}
    assert (merged["Bs"].ways, merged["Bs"].wavefronts) == (2, 8)
    for q in accesses.shared_requests(accesses.kernel_trace(runs, runs.default, 128, 128, 64)):
        assert q.size == 16 and memory.banks(q).ways == 1
    l06 = global_loads(V06, V06.config(**SAME), 128, 128, 64)
    l1 = global_loads(copies, copies.default, 128, 128, 64)
    assert all(l1[a][0] * 4 == l06[a][0] and l1[a][1] == 16 for a in ("A", "B"))   # the global loads: step 1's idea


def test_the_committed_steps_measurement_reads_back():
    t = steps.table("07").set_index("kernel")
    assert list(t.index[-3:]) == [v.name for v in STEPS]
    for v in STEPS:   # a step's gain is the median of its rounds' gains, which the tflops column roughly repeats
        gain = facts.value(f"steps_gain_pct/07/{v.name}")
        assert gain > 0 and abs(t.loc[v.name, "gain over the row above, %"] - round(gain, 1)) < 0.06
    assert facts.value("steps_tflops/07/parent") == pytest.approx(t.iloc[-4]["TFLOP/s"], abs=0.05)

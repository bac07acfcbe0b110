import pytest
"""Stage 09 in two steps, one idea each: 09_two_buffers (the next tiles' global loads in flight during
the math, two shared buffers) and 09_double_buffering (each step's shared loads a step ahead, into a
second set of registers). Each kernel's diff against its parent is its idea; the schedule read from the
emulator's trace shows what step 1 changes."""

from helpers.core import stages
from helpers.measure import pipeline
from helpers.views import display

pytestmark = pytest.mark.emulator

STEPS = [v for v in stages.stage("09").variants if v.name in ("09_two_buffers", "09_double_buffering")]


def changed_lines(old: str, new: str) -> int:
    """Code lines (comments and blanks left out) added or removed from one kernel file to the next."""
    return sum(1 for ln in display.diff_text(old, new, 0, code_only=True).splitlines()
               if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


def code_lines(name) -> set[str]:
    """The kernel file's lines, stripped (a line is kept whole, with any comment after the code)."""
    return {ln.split("  //")[0].strip() for ln in stages.variant(name).path.read_text().splitlines()}


def test_the_steps_chain_from_08_to_the_double_buffered_kernel():
    assert [v.name for v in STEPS] == ["09_two_buffers", "09_double_buffering"]
    assert [v.parent for v in STEPS] == ["08_warp_tiling", "09_two_buffers"]
    assert STEPS[0].default == STEPS[1].default and STEPS[0].alternatives == STEPS[1].alternatives, \
        "the steps share one configuration, so each gain is its idea alone"


def test_each_step_changes_one_part_of_the_kernel():
    """Step 1 doubles the shared tiles and splits 08's copy into loads before the math and stores after it,
    keeping 08's multiply loop; step 2 rewrites the multiply loop and keeps step 1's loads and stores."""
    whole = changed_lines("08_warp_tiling", "09_double_buffering")
    per_step = [changed_lines(v.parent, v.name) for v in STEPS]
    assert all(n < whole for n in per_step), (whole, per_step)
    fma_08 = "for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];"
    assert fma_08 in code_lines("08_warp_tiling") and fma_08 in code_lines("09_two_buffers")
    assert fma_08 not in code_lines("09_double_buffering")
    load_b = "vb[i] = !checked ? *reinterpret_cast<const float4*>(p) : row < K ? load4(p, N - col, alignedB) : zero;"
    store_b = "*reinterpret_cast<float4*>(&Bs[s][e / (BN / 4)][e % (BN / 4) * 4]) = vb[i];"
    for line in (load_b, store_b):
        assert line in code_lines("09_two_buffers") and line in code_lines("09_double_buffering")
    assert "auto load_values = [&](int s, int k, int f) {" in code_lines("09_double_buffering")


def test_step_1_overlaps_the_next_tiles_loads_with_the_math():
    """From the emulator's trace: 08 loads a tile and computes on it in separate intervals between barriers;
    step 1 issues tile t+1's global loads in the interval that computes tile t, one barrier per tile."""
    s08 = pipeline.kernel_schedule(stages.variant("08_warp_tiling"), tiles=4)
    s1 = pipeline.kernel_schedule(STEPS[0], tiles=4)
    assert not any(i.computed and i.loading for i in s08.intervals)
    overlapped = [(i.computed, i.loading) for i in s1.intervals if i.computed and i.loading]
    assert overlapped == [((t,), (t + 1,)) for t in range(3)]
    assert len(s1.intervals) < len(s08.intervals)
    # Step 2 changes nothing a schedule of tiles sees: its change lies inside an interval.
    s2 = pipeline.kernel_schedule(STEPS[1], tiles=4)
    assert [(i.computed, i.loading) for i in s2.intervals] == [(i.computed, i.loading) for i in s1.intervals]

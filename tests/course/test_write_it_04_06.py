"""Write it yourself, exercises 04-06 (helpers/course/write_it/stage04.py, stage05.py, stage06.py): what each
lesson measures in the learner's trace, and the correct kernels each one fails with its numbers: 04 reading
Bs once per multiply-add, 05 loading its operands one result at a time, 06 with its loads of As still
conflicting; and the three fixes of stage 06 (padding, transposing, swizzling) all pass.
(tests/course/test_write_it.py runs every exercise's solution, starter and barrier-less solution.)"""

from __future__ import annotations

import pytest

from helpers.course import write_it

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def _check(tmp_path, exercise_id: str, name: str, text: str):
    path = tmp_path / f"{exercise_id}_{name}.cu"
    path.write_text(text)
    return write_it.check(exercise_id, path), text


def _edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("exercise_id, numbers", [
    ("04", {"results per thread": 8, "As loads per thread per k": 8, "Bs loads per thread per k": 1,
            "multiply-adds": 64 ** 3, "shared loads": 294912, "multiply-adds per shared load": 8 / 9}),
    ("05", {"results per thread": 16, "As loads per thread per k": 4, "Bs loads per thread per k": 4,
            "shared loads per result per k": 0.5}),
    ("06", {"results per thread": 16, "shared loads per result per k": 0.5, "As load requests": 2048,
            "As max ways": 1, "As excess wavefronts": 0, "As conflicted requests": 0, "Bs max ways": 2}),
], ids=["04", "05", "06"])
def test_the_solutions_pass_with_the_numbers_of_their_lesson(exercise_id, numbers):
    ex = write_it.exercise(exercise_id)
    v = write_it.check(exercise_id, ex.solution_path)
    assert v.ok, str(v)
    assert {k: v.numbers[k] for k in numbers} == pytest.approx(numbers)
    lesson = next(s for s in v.steps if s.name == "lesson")
    assert lesson.lines[0].startswith(ex.lesson_text)


def test_04_reading_bs_for_every_multiply_add_fails_with_its_counts(tmp_path):
    ex = write_it.exercise("04")
    v, text = _check(tmp_path, "04", "bs_each_time", _edit(
        ex.solution_path.read_text(),
        ("      const float b = Bs[k][threadCol];\n", ""),
        ("acc[i] += As[threadRow * TM + i][k] * b;", "acc[i] += As[threadRow * TM + i][k] * Bs[k][threadCol];")))
    assert v.status == "failed" and v.failed_step == "lesson", str(v)
    assert "loads Bs 8 times per step k" in v.cause and "0.50 multiply-adds per shared load" in v.cause
    assert v.line == _line_of(text, "* Bs[k][threadCol];") and "once, into a register" in v.hint
    assert "[" not in v.hint and "=" not in v.hint          # the goal in words: the code is hint 3's, on request
    assert v.numbers["Bs loads per thread per k"] == 8 and v.numbers["multiply-adds per shared load"] == 0.5


def test_05_loading_the_operands_one_result_at_a_time_fails_with_2_loads_per_result(tmp_path):
    ex = write_it.exercise("05")
    v, text = _check(tmp_path, "05", "one_at_a_time", _edit(
        ex.solution_path.read_text(),
        ("      for (int i = 0; i < TM; ++i) a[i] = As[threadRow * TM + i][k];\n", ""),
        ("      for (int j = 0; j < TN; ++j) b[j] = Bs[k][threadCol * TN + j];\n", ""),
        ("acc[i][j] += a[i] * b[j];", "acc[i][j] += As[threadRow * TM + i][k] * Bs[k][threadCol * TN + j];")))
    assert v.status == "failed" and v.failed_step == "lesson", str(v)
    assert "2.00 shared loads per result per step k" in v.cause and "needs 0.50" in v.cause
    assert "As 16 times and Bs 16 times" in v.cause
    assert v.line == _line_of(text, "acc[i][j] += As[") and "each once" in v.hint and "[" not in v.hint
    assert v.numbers["shared loads per result per k"] == 2 and v.numbers["results per thread"] == 16


def test_06_a_correct_kernel_whose_loads_of_as_conflict_fails_naming_the_ways(tmp_path):
    ex = write_it.exercise("06")
    starter = ex.starter_path.read_text()
    done = "\n".join(line for line in starter.splitlines() if "TODO" not in line and "//         " not in line)
    v, text = _check(tmp_path, "06", "conflicted", done + "\n")
    assert v.status == "failed" and v.failed_step == "lesson", str(v)     # no TODO left: failed, not "not done yet"
    assert v.cause.startswith("the loads of As conflict 2-way: 2048 of block 0's 2048 warp requests")
    assert "lanes 0-15 -> word 0 (bank 0); lanes 16-31 -> word 32 (bank 0)" in v.cause
    assert v.line == _line_of(text, "a[i] = As[threadRow * TM + i][k];")
    assert v.numbers["As max ways"] == 2 and v.numbers["As excess wavefronts"] == 2048
    assert all(words in v.hint for words in ("pad each row", "transposed", "swizzle", "32 words apart"))


@pytest.mark.parametrize("fix", ["transposed", "swizzled"])
def test_06_transposing_or_swizzling_passes_as_padding_does(tmp_path, fix):
    starter = write_it.exercise("06").starter_path.read_text()
    edits = {
        "transposed": (("__shared__ float As[BM][BK];", "__shared__ float As[BK][BM];"),
                       ("As[r][c] = v;", "As[c][r] = v;"),
                       ("a[i] = As[threadRow * TM + i][k];", "a[i] = As[k][threadRow * TM + i];")),
        "swizzled": (("As[r][c] = v;", "As[r][c ^ (r / TM % 8)] = v;"),
                     ("a[i] = As[threadRow * TM + i][k];", "a[i] = As[threadRow * TM + i][k ^ (threadRow % 8)];")),
    }[fix]
    v, _ = _check(tmp_path, "06", fix, _edit(starter, *edits))
    assert v.ok, str(v)
    assert v.numbers["As max ways"] == 1 and v.numbers["As excess wavefronts"] == 0
    # the verdict says what the learner did: the layout, as the trace shows it
    lesson = next(s for s in v.steps if s.name == "lesson")
    assert {"transposed": "your layout of A's tile in As: transposed", "swizzled": "in another order (a swizzle"}[fix] \
        in "\n".join(lesson.lines)

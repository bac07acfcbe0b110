"""Honest checks (issue 30, point 5): the four messages a learner was given wrong, each with the case that
showed it, and a different correct design that achieves the lesson passes, described as what the learner did.

- a load past the end of As (06) was reported as past the end of Bs, at Bs's declaration: the emulator names the
  array the ADDRESS falls after; the check names the array the line indexes;
- "NOT DONE YET: lines ... still say TODO" after those blocks were written (the TODO comment stays above an
  edited line): a block is open only while its code is still the starter's;
- 05's column-strided mapping passed, described as "each thread 4 x 4": it achieves the lesson (each value read
  once per step feeds a row or column of products) and is described as it is, columns 16 apart;
- a wrong index (`As[threadRow + i]`, TM forgotten) got a generic hint and no line: the check names the line that
  hands a thread an operand that is not its own.
(06 transposed or swizzled, not padded, passes: tests/course/test_write_it_04_06.py.)"""

from __future__ import annotations

import pytest

from helpers.course import write_it
from helpers.course.write_it import diagnose

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


def test_a_load_past_the_end_of_as_is_named_as_as_at_its_declaration_not_bs(tmp_path):
    """06 with A's tile declared transposed but read as before: the index into As runs far past As, past Bs too."""
    starter = write_it.exercise("06").starter_path.read_text()
    v, text = _check(tmp_path, "06", "as_oob", _edit(starter, ("__shared__ float As[BM][BK];",
                                                               "__shared__ float As[BK][BM];"),
                                                     ("As[r][c] = v;", "As[c][r] = v;")))
    assert v.failed_step == "safe" and "OutOfBoundsError" in v.cause, str(v)
    assert v.line == _line_of(text, "a[i] = As[threadRow * TM + i][k];")
    assert "line {} indexes As, not Bs".format(v.line) in v.cause
    assert v.hint.startswith("the index into the __shared__ array As runs past its declared size")
    assert f"`As[BK][BM]` at line {_line_of(text, '__shared__ float As[BK][BM];')}" in v.hint
    assert "Bs[BK][BN]" not in v.hint


def test_an_index_past_the_last_array_named_by_its_own_line_still_names_that_array():
    cause = ("k: thread (1,0,0) of block (0,0,0) loads byte 4096 of the __shared__ array Bs (4 bytes), past its end: "
             "Bs has 1024 bytes (valid byte offsets 0 to 1023).")
    text = "__shared__ float As[16][16];\n__shared__ float Bs[16][16];\n  acc += Bs[ty + 16][tx];\n"
    line, words, hint = diagnose.runtime_error(cause + "\n  at k.cu:3:  acc", __import__("pathlib").Path("k.cu"), text)
    assert line == 3 and words == cause and "array Bs runs past" in hint and "`Bs[16][16]` at line 2" in hint


def test_a_todo_block_written_under_its_comment_is_not_called_not_done():
    starter = write_it.exercise("06").starter_path.read_text()
    assert len(diagnose.todo_lines(starter, starter)) == 3
    edited = _edit(starter, ("__shared__ float As[BM][BK];", "__shared__ float As[BM][BK + 1];"),
                   ("      As[r][c] = v;", "      As[r][c + 1] = v;"))            # the TODO comments stay
    open_ = diagnose.todo_lines(edited, starter)
    assert open_ == (_line_of(edited, "// TODO 3"),)                            # only the block left as it was
    empty = write_it.exercise("04").starter_path.read_text()                  # a TODO block with no code under it
    written = empty.replace("    // TODO 2:", "    for (int k = 0; k < BK; ++k) acc[0] += 0.0f;\n    // TODO 2:", 1)
    assert len(diagnose.todo_lines(written, empty)) == 2                        # code above it: still open
    under = _edit(empty, ("shared load costs an instruction: at each step k all TM results of the thread need the "
                          "same\n    //         value of B, so read it once per step, keep it in a register, and use "
                          "it TM times.\n", "shared load costs an instruction: at each step k all TM results of the "
                          "thread need the same\n    //         value of B, so read it once per step, keep it in a "
                          "register, and use it TM times.\n    for (int k = 0; k < BK; ++k) acc[0] += 0.0f;\n"))
    assert len(diagnose.todo_lines(under, empty)) == 1                         # TODO 1 only


def test_a_failing_kernel_whose_todo_blocks_are_all_written_fails_and_is_not_not_done(tmp_path):
    starter = write_it.exercise("06").starter_path.read_text()
    v, _ = _check(tmp_path, "06", "edited", _edit(starter, ("__shared__ float As[BM][BK];",
                                                            "__shared__ float As[BM][BK + 1];"),
                                                  ("      As[r][c] = v;", "      As[r][c + 1] = v;"),
                                                  ("a[i] = As[threadRow * TM + i][k];",
                                                   "a[i] = As[threadRow * TM + i][k + 2];")))   # not where it put it
    assert v.status == "failed" and "NOT DONE" not in v.last_line(), str(v)
    assert v.todo_lines == ()


def test_05s_column_strided_mapping_passes_and_is_described_with_what_it_costs(tmp_path):
    solution = write_it.exercise("05").solution_path.read_text()
    v, _ = _check(tmp_path, "05", "strided", _edit(solution, (
        "auto colOf = [&](int j) { return threadCol * TN + j; };",
        "auto colOf = [&](int j) { return threadCol + j * (BN / TN); };"),
        ("b[j] = Bs[k][threadCol * TN + j];", "b[j] = Bs[k][threadCol + j * (BN / TN)];")))
    assert v.ok, str(v)
    lesson = "\n".join(next(s for s in v.steps if s.name == "lesson").lines)
    assert "each thread 4 × 4 (rows × columns): 4 neighbouring rows, 4 columns 16 apart" in lesson
    assert v.numbers["thread tile column step"] == 16
    # what the spread costs, measured: its 16 neighbouring columns per thread row read Bs without a conflict and store
    # C in 4 sectors, where the course's blocks of neighbours pay 2 wavefronts and 16 sectors (tests/course/
    # test_write_it_mapping.py has the whole table)
    assert "loads of Bs: 1 wavefront per warp request, the conflict-free minimum; the course's 05_2d_thread_tiling: 2" \
        in lesson
    assert "stores of C: 4 sectors per warp request, as few as its bytes need; the course's 05_2d_thread_tiling: 16" \
        in lesson
    plain = write_it.check("05", write_it.exercise("05").solution_path)
    assert "4 neighbouring rows, 4 neighbouring columns" in str(plain) and "spread" not in str(plain)


@pytest.mark.slow  # over 6 s on 2 cores
def test_a_wrong_index_names_its_line_and_the_rows_the_thread_owns(tmp_path):
    solution = write_it.exercise("05").solution_path.read_text()
    v, text = _check(tmp_path, "05", "tm_forgotten", _edit(solution, ("a[i] = As[threadRow * TM + i][k];",
                                                                      "a[i] = As[threadRow + i][k];")))
    assert v.failed_step == "correct" and v.line == _line_of(text, "a[i] = As[threadRow + i][k];"), str(v)
    assert "gives thread" in v.hint and "value of A from row" in v.hint and "(through As)" in v.hint
    assert "stores rows" in v.hint and "index into As" in v.hint
    # B's index wrong in 04 instead: the column is named
    four = write_it.exercise("04").solution_path.read_text()
    v, text = _check(tmp_path, "04", "col", _edit(four, ("const float b = Bs[k][threadCol];",
                                                         "const float b = Bs[k][threadCol / 2];")))
    assert v.failed_step == "correct" and v.line == _line_of(text, "Bs[k][threadCol / 2]"), str(v)
    assert "value of B from column" in v.hint and "stores columns" in v.hint

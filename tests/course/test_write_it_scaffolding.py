"""Scaffolding that fades (issue 30, point 2): starters 04 and up give the contract and what is not the lesson,
and their TODO blocks state goals in words, never an index expression; hints come in levels (the idea, what each
thread computes, the code only when asked for by number), each one recorded; and `%%kernel NN --from-mine`
starts an exercise from the learner's own kernel of the one before (the course's where theirs is missing)."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from helpers.course import write_it
from helpers.course.write_it import hints, magic, record

exercise_module = importlib.import_module("helpers.course.write_it.exercise")   # (write_it.exercise is the function)

FADED = [ex for ex in write_it.exercises() if int(ex.id) >= 4]
# An index expression: brackets, an assignment, or arithmetic on a name (t / BK, threadRow * TM, e + THREADS, k - 1).
INDEX = re.compile(r"\[|\]|=|(?:\b[A-Za-z_]\w*|\))\s*(?:[*/%+]|\s-\s)\s*[\w(]|[\w)]\s*(?:[*/%+]|\s-\s)\s*[A-Za-z_(]")
TODO = re.compile(r"//\s*TODO\b")


def todo_comment_lines(text: str) -> list[tuple[int, str]]:
    """(line, comment) of every comment line of every TODO block: the TODO line and the comment lines under it."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        if not TODO.search(lines[i]):
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip().startswith("//") and (j == i or not TODO.search(lines[j])):
            out.append((j + 1, lines[j].split("//", 1)[1]))
            j += 1
        i = j
    return out


def index_expressions(text: str) -> list[str]:
    return [f"line {n}: {comment.strip()}" for n, comment in todo_comment_lines(text) if INDEX.search(comment)]


@pytest.mark.parametrize("ex", FADED, ids=[ex.id for ex in FADED])
def test_no_comment_line_of_a_todo_block_in_starters_04_and_up_writes_an_index_expression(ex):
    text = ex.starter_path.read_text()
    assert todo_comment_lines(text), "a starter without TODO blocks"
    assert index_expressions(text) == []


def test_the_rule_catches_what_the_old_starters_wrote():
    old = ("  // TODO 3: for each k = 0 .. BK - 1, read Bs[k][threadCol] ONCE into a register, then add its products\n"
           "  //         with As[threadRow * TM + i][k] to acc[i].\n"
           "  // TODO 1: copy element (t / BK, t % BK) of A's tile\n"
           "  // TODO 2: store tile t+1 into the other buffer\n")
    assert len(index_expressions(old)) == 4
    assert index_expressions("  // TODO 1: a 64 x 64 tile, 16-byte loads, row-major, TM neighbouring rows.\n") == []


def test_starters_04_and_up_leave_the_lessons_code_to_the_learner():
    """The lines the solution writes under the TODO blocks are not in the starter (a starter passed by copying
    itself would teach nothing), and every solution line a TODO block asks for is the learner's to write."""
    for ex in FADED:
        starter = {ln.strip() for ln in ex.starter_path.read_text().splitlines()}
        written = [ln.strip() for ln in hints.code_hint(ex).splitlines()
                   if ln.strip() and not ln.startswith(("TODO", "```")) and not ln.strip().startswith("//")]
        trivial = ("}", "{", "const int t = threadIdx.x;", "if (tid == 0) {")   # braces, one thread: no answer
        assert written and not [ln for ln in written if ln in starter and ln not in trivial], ex.id


@pytest.fixture
def mine(tmp_path, monkeypatch):
    monkeypatch.setenv(record.FOLDER_VARIABLE, str(tmp_path / "my_kernels"))
    return tmp_path / "my_kernels"


def test_hints_come_in_levels_and_the_code_only_when_asked_for(mine):
    first, second, again = write_it.hint("05"), write_it.hint("05"), write_it.hint("05")
    assert "hint 1 of 3: the idea" in first and "hint 2 of 3: what each thread computes" in second
    assert "hint 2 of 3" in again and "```cpp" not in again                  # never the code by default
    code = write_it.hint("05", 3)
    assert "hint 3 of 3: the code" in code and "```cpp" in code and "a[i] * b[j]" in code
    assert [e["level"] for e in record.events("05", "hint")] == [1, 2, 2, 3]
    text, meta = code._repr_markdown_()
    assert meta[record.METADATA]["hints"] == [1, 2, 3] and text == str(code)
    assert record.notes(record.history("05")) == "hints seen: levels 1, 2, 3 (level 3 is the code)"
    with pytest.raises(write_it.ExerciseError, match="hint levels are 1"):
        write_it.hint("05", 4)


def test_hint_3_in_a_copy_without_solutions_says_where_the_code_is(mine, monkeypatch, tmp_path):
    monkeypatch.setattr(exercise_module, "SOLUTIONS", tmp_path / "no-solutions")
    with pytest.raises(write_it.ExerciseError, match="no solutions"):
        write_it.hint("04", 3)
    assert "hint 1 of 3" in write_it.hint("04", 1)


def test_every_exercise_has_two_hints_in_words_and_one_in_code():
    for ex in write_it.exercises():
        assert len(ex.hints) == 2 and all(len(h) > 80 for h in ex.hints), ex.id
        assert "```cpp" in hints.code_hint(ex)


def test_the_record_survives_a_damaged_file(mine):
    mine.mkdir(parents=True)
    (mine / record.NAME).write_text("{not json")
    assert record.events("04") == []
    record.add("04", "hint", level=1)
    assert json.loads((mine / record.NAME).read_text())[0]["level"] == 1


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    write_it.enable(ip)
    return ip


@pytest.mark.emulator
@pytest.mark.usefixtures("cpu_backend")
def test_from_mine_starts_05_from_the_learners_passing_04(mine, shell):
    ex4 = write_it.exercise("04")
    mine_04 = ex4.solution_path.read_text().replace("// The solution:", "// my own 04:")
    assert shell.run_cell_magic("kernel", "04", mine_04).ok
    shell.rl_next_input = None
    assert shell.run_cell("%%kernel 05 --from-mine\n").success
    cell = shell.rl_next_input
    head, body = cell.split("\n", 1)
    assert head == "%%kernel 05" and "// my own 04:" in body
    assert "sgemm_2d(" in body and "sgemm_1d" not in body                      # renamed for 05's contract
    assert body.startswith("// Exercise 05 · 2D thread tiling, grown from yours (04). Its contract:")
    assert "const float* A" in body and "each of its 256 threads computes a TM × TN = 4 × 4 tile" in body
    assert record.history("05")["started_from"] == "yours (04)"


@pytest.mark.emulator
@pytest.mark.usefixtures("cpu_backend")
def test_from_mine_without_a_passing_04_takes_the_courses_or_the_starter(mine, monkeypatch, tmp_path):
    source, origin = write_it.from_mine("05")
    assert origin.startswith("the course's 04 (yours: nothing is saved") and "sgemm_2d(" in source
    monkeypatch.setattr(exercise_module, "SOLUTIONS", tmp_path / "no-solutions")
    source, origin = write_it.from_mine("05")
    assert origin.startswith("the starter") and source == write_it.exercise("05").starter_path.read_text()
    with pytest.raises(write_it.ExerciseError, match="grows from no other"):
        write_it.from_mine("02")
    with pytest.raises(write_it.ExerciseError, match="does not know --frm-mine"):
        magic.run_cell("05 --frm-mine", "")

"""Which `%%kernel NN` cell a grade judges, and what a student copy puts back in each (fast: no kernel runs).

Notebooks 05-09 give an exercise two cells: the starter (`%%kernel 05`, first) and `%%kernel 05 --from-mine`
below it, which fills itself with the learner's own earlier kernel when run (Jupyter then holds it as
`%%kernel 05` and the kernel). The teacher expects the learner's kernel graded, whichever cell they wrote it in."""

import json

import nbformat
import pytest

from helpers.core import paths
from helpers.teach import copies
from helpers.teach.grading import kernel_cells, notebook

STARTER = (paths.ROOT / "helpers" / "course" / "write_it" / "starters" / "05.cu").read_text()
MINE = "__global__ void sgemm_2d(int M) { /* mine, grown from my 04 */ }"
OTHER = "__global__ void sgemm_2d(int M) { /* an attempt I left */ }"


def _cell(source, count=None):
    cell = nbformat.v4.new_code_cell(source)
    cell.execution_count = count
    return cell


def _judged(*cells) -> str:
    """The kernel source the grader judges for exercise 05, without its heading comment."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 05 · test"), *cells])
    return kernel_cells.KernelCells().chosen_cells(nb)["05"].split("\n", 1)[1]


def test_the_learners_kernel_is_judged_in_whichever_cell_it_is():
    starter_cell = _cell("%%kernel 05\n" + STARTER)
    # written in the starter's cell, the --from-mine cell left as handed out
    assert _judged(_cell("%%kernel 05\n" + MINE, 3), _cell("%%kernel 05 --from-mine")) == MINE
    # grown from 04 in the --from-mine cell (Jupyter replaced its line), the starter left untouched: either order
    assert _judged(starter_cell, _cell("%%kernel 05\n" + MINE, 7)) == MINE
    assert _judged(_cell("%%kernel 05\n" + MINE, 7), starter_cell) == MINE
    # the starter untouched but run after the learner's cell: still the learner's (the magic keeps it saved too)
    assert _judged(_cell("%%kernel 05\n" + MINE, 2), _cell("%%kernel 05\n" + STARTER, 9)) == MINE
    # a starter with trailing spaces and blank lines is still the untouched starter
    assert _judged(_cell("%%kernel 05\n\n" + STARTER.replace("\n", "  \n") + "\n\n", 9), _cell("%%kernel 05\n" + MINE)) == MINE


def test_of_two_kernels_of_its_own_the_one_run_last_is_judged_in_either_order():
    for a, b in ((MINE, OTHER), (OTHER, MINE)):
        assert _judged(_cell("%%kernel 05\n" + a, 4), _cell("%%kernel 05\n" + b, 12)) == b
        assert _judged(_cell("%%kernel 05\n" + a, 12), _cell("%%kernel 05\n" + b, 4)) == a
        assert _judged(_cell("%%kernel 05\n" + a), _cell("%%kernel 05\n" + b, 4)) == b      # never run: not chosen
        assert _judged(_cell("%%kernel 05\n" + a), _cell("%%kernel 05\n" + b)) == b         # none ran: the last one


def test_an_untouched_exercise_is_judged_on_its_starter_or_found_empty():
    # the starter is judged (its check says "not done yet": not attempted), never the empty --from-mine cell
    assert _judged(_cell("%%kernel 05\n" + STARTER), _cell("%%kernel 05 --from-mine")).strip() == STARTER.strip()
    assert _judged(_cell("%%kernel 05 --from-mine"), _cell("%%kernel 05\n" + STARTER)).strip() == STARTER.strip()
    assert _judged(_cell("%%kernel 05 --from-mine")) == ""                                 # judged: not attempted


def test_the_execution_counts_and_outputs_handed_in_reach_the_grader(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[_cell("%%kernel 05\n" + MINE, 3), _cell("%%kernel 05\n" + OTHER, 1)])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="PASSED")]
    data = json.loads(nbformat.writes(nb))
    data["cells"][1]["execution_count"] = True            # not a count: read as none
    data["cells"][1]["outputs"] = "junk"                  # not a list: read as none
    path = tmp_path / "alice_05.ipynb"
    path.write_text(json.dumps(data))
    read, _ = notebook.read(path)
    assert [c.execution_count for c in read.cells] == [3, None]
    assert "".join(read.cells[0].outputs[0]["text"]) == "PASSED" and read.cells[1].outputs == []
    assert kernel_cells.KernelCells().chosen_cells(read)["05"].endswith(MINE)


def test_a_from_mine_cell_keeps_its_line_and_a_plain_one_gets_the_starter():
    kind = kernel_cells.KernelCells()
    assert kind.starter_source("%%kernel 05 --from-mine") == "%%kernel 05 --from-mine"
    assert kind.starter_source("%%kernel 05 --from-mine\n__global__ void the_solution() {}") == \
        "%%kernel 05 --from-mine"
    assert kind.starter_source("%%kernel 05\n__global__ void the_solution() {}") == "%%kernel 05\n" + STARTER.rstrip()


@pytest.mark.parametrize("path", sorted(paths.NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem[:2])
def test_a_student_copy_keeps_every_from_mine_cell_and_starts_every_other_kernel_cell_on_its_starter(path):
    original = nbformat.read(path, as_version=4)
    student = copies.student_copy(original, known={})
    kind = kernel_cells.KernelCells()
    pairs = [(a.source, b.source) for a, b in zip(original.cells, student.cells)
             if a.cell_type == "code" and a.source.lstrip().startswith("%%kernel")]
    for before, after in pairs:
        line = before.strip().splitlines()[0]
        if "--from-mine" in line:
            assert after == before.strip(), (path.name, after[:200])
        else:
            ex_id = line.split()[1]
            starter = (paths.ROOT / kind.starters / f"{ex_id}.cu").read_text().rstrip("\n")
            assert after == f"{line}\n{starter}", path.name

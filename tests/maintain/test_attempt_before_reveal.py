"""Attempt before reveal (issue 30): in the notebooks of stages 02-12 the learner's `%%kernel NN` cell comes before
any cell that shows the course's kernel of that stage (its source, a diff to it, `write_it.reveal`, side by side).

A cell shows a stage's kernel when it calls one of SHOWS and names one of the stage's kernels: by the variant's name
(`"04_1d_thread_tiling"`) or by a variable the notebook bound to it (`tiling1d = stages.variant("04_1d_thread_tiling")`),
or when it calls write_it's reveal or side by side for the stage. Earlier stages' kernels may be shown before: a stage
teaches its idea with the instruments pointed at the kernel it is built from.
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.core import stages
from helpers.core.paths import NOTEBOOKS

SHOWS = re.compile(r"\bdisplay\.(?:kernel_source|kernel_diff|lesson_diff|diff_text)\s*\(")
WRITTEN = ("02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")


def _code_cells(stage_id: str) -> list[str]:
    nb = json.loads(stages.stage(stage_id).notebook.read_text())
    return ["".join(c["source"]) if c["cell_type"] == "code" else "" for c in nb["cells"]]


def shows_course_kernel(source: str, stage_id: str, bound: set[str]) -> bool:
    if re.search(rf"write_it\.(?:reveal|side_by_side)\(\s*['\"]{stage_id}['\"]", source):
        return True
    if not SHOWS.search(source):
        return False
    names = {v.name for v in stages.stage(stage_id).variants}
    return any(f'"{n}"' in source or f"'{n}'" in source for n in names) or \
        any(re.search(rf"\b{re.escape(b)}\b", source) for b in bound)


def bound_names(cells: list[str], stage_id: str) -> set[str]:
    """Variables the notebook binds to one of the stage's kernels: `x = stages.variant("04_...")`, or through the
    stage (`stage = stages.stage("04")`, then `a, b = stage.variants` or `x = stage.variants[0]`)."""
    found, holders = set(), set()
    text = "\n".join(cells)
    for m in re.finditer(r"^\s*(\w+)\s*=\s*stages\.stage\(\s*['\"](\d\d)['\"]\s*\)", text, re.M):
        if m.group(2) == stage_id:
            holders.add(m.group(1))
    for m in re.finditer(r"^\s*(\w+)\s*=\s*stages\.variant\(\s*['\"](\w+)['\"]", text, re.M):
        if m.group(2).startswith(f"{stage_id}_"):
            found.add(m.group(1))
    for holder in [*(re.escape(h) for h in holders), rf"stages\.stage\(\s*['\"]{stage_id}['\"]\s*\)"]:
        for m in re.finditer(rf"^\s*([\w\s,()]+?)\s*=\s*{holder}\.variants\b", text, re.M):
            found |= {n for n in re.split(r"[\s,()]+", m.group(1)) if n}
    return found


def first_cells(stage_id: str) -> tuple[int | None, int | None]:
    """(the first `%%kernel NN` cell, the first cell showing the course's kernel of the stage)."""
    cells = _code_cells(stage_id)
    bound = bound_names(cells, stage_id)
    kernel = next((i for i, s in enumerate(cells) if re.match(rf"\s*%%kernel\s+{stage_id}\b", s)), None)
    shown = next((i for i, s in enumerate(cells) if shows_course_kernel(s, stage_id, bound)), None)
    return kernel, shown


def test_the_rule_reads_cells_as_the_docstring_says():
    bound = bound_names(['tiling1d = stages.variant("04_1d_thread_tiling")'], "04")
    assert bound == {"tiling1d"}
    assert bound_names(['stage = stages.stage("02")\nnaive, coalesced = stage.variants', "x = 1"], "02") == \
        {"naive", "coalesced"}
    assert bound_names(['st = stages.stage("10")\ntc = st.variants[0]'], "10") == {"tc"}
    assert bound_names(['padded, transposed, swizzled = stages.stage("06").variants'], "06") == \
        {"padded", "transposed", "swizzled"}
    assert shows_course_kernel("display.kernel_source(tiling1d.name)", "04", bound)
    assert shows_course_kernel('display.lesson_diff("04_1d_thread_tiling")', "04", set())
    assert shows_course_kernel('write_it.reveal("04")', "04", set())
    assert not shows_course_kernel('display.kernel_source("03_smem_tiling")', "04", bound)
    assert not shows_course_kernel("print(tiling1d.name)", "04", bound)


@pytest.mark.parametrize("stage_id", WRITTEN)
def test_the_learner_writes_before_the_course_shows(stage_id):
    kernel, shown = first_cells(stage_id)
    assert kernel is not None, f"notebook {stage_id} has no %%kernel {stage_id} cell"
    assert shown is None or kernel < shown, (
        f"notebook {stage_id}: cell {shown} shows the course's kernel before the learner's %%kernel cell {kernel}: "
        f"move the reveal after the attempt (write_it.reveal('{stage_id}'))")

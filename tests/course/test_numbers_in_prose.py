"""Numbers in notebook prose tied to results/ (issue 21, point 5): every `<!-- fact: NAME -->` marker's number is
the fact computed now from its committed results file, rounded as written; in the notebooks of facts.ENFORCED every
number followed by TFLOP/s, GFLOP/s, GB/s or % carries a marker (a measured fact, or `<!-- not measured: why -->`)."""

import re

import nbformat
import pytest

from helpers.core.paths import NOTEBOOKS
from helpers.measure import facts

NOTEBOOK_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
UNMARKED = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(%|TFLOP/s|GFLOP/s|GB/s)(?!\s*<!--\s*(fact|not measured):)")


def _markdown(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_every_marked_number_is_its_fact(path):
    for text in _markdown(path):
        for m in facts.MARKER.finditer(text):
            fact = facts.value(m["name"])
            assert facts.agrees(m["number"], fact), (
                f"{path.name}: the prose says {m['number']} where {m['name']} ({facts.FACTS[m['name'].split('/')[0]][0]}) "
                f"is {fact:.4g}: change the text, or the results file if the text was right.")


@pytest.mark.parametrize("path", [p for p in NOTEBOOK_PATHS if p.name[:2] in facts.ENFORCED], ids=lambda p: p.stem)
def test_enforced_notebooks_mark_every_measured_number(path):
    unmarked = [f"{m[1]} {m[2]}: …{text[max(0, m.start() - 50):m.end() + 10]}…"
                for text in _markdown(path) for m in UNMARKED.finditer(text)]
    assert not unmarked, f"{path.name}: numbers with no fact marker (helpers/measure/facts.py): {unmarked}"


def test_the_check_catches_a_wrong_number_and_an_unmarked_one():
    m = facts.MARKER.search("gained 12%<!-- fact: gain_pct/06_transposed_a --> with")
    assert m and not facts.agrees(m["number"], facts.value(m["name"]))
    assert facts.agrees("11", facts.value("gain_pct/06_transposed_a"))
    assert facts.agrees("236.9", 236.89) and not facts.agrees("236.8", 236.89) and facts.agrees("1,089", 1089)
    assert UNMARKED.search("ran at 48.3 TFLOP/s on") and not UNMARKED.search("48.3 TFLOP/s<!-- fact: x -->")
    assert UNMARKED.search("copies at 9 GB/s from") and UNMARKED.search("at 1.2 GFLOP/s at")
    assert facts.MARKER.search("at 9 GB/s<!-- fact: s01_ceiling/DRAM -->")["name"] == "s01_ceiling/DRAM"
    with pytest.raises(KeyError, match="no fact"):
        facts.value("no_such_fact")

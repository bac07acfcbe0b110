"""Numbers in notebook prose tied to results/ (issue 21, point 5): every `<!-- fact: NAME -->` marker's number is
the fact computed now from its committed results file, rounded as written; in the notebooks of facts.ENFORCED every
number followed by TFLOP/s, GFLOP/s, GB/s or %, and every number with a decimal point (a ratio "1.8 times", a bare
"(56.9)", "2.61 × 10⁻⁴"), carries a marker: a measured fact, or `<!-- not measured: why -->` for a computed number,
a band to choose from or a target. Inline code, link targets and tool versions ("ptxas 12.9") are not prose."""

import importlib
import pkgutil
import re

import nbformat
import pytest

from helpers.core.paths import NOTEBOOKS
from helpers.measure import facts

NOTEBOOK_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
UNMARKED = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(%|TFLOP/s|GFLOP/s|GB/s)(?!\s*<!--\s*(fact|not measured):)")
# A number with a decimal point (not a version "14.2.0", not C's "0.0f"), its unit if any, and no marker after them
# (possessive, so that leaving the unit out cannot make the marker seem absent).
DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\d.]*\d|\w)\s*+(?:" + facts.UNITS.replace("?P<power>", "") + r")?+"
                     r"(?!\s*<!--\s*(fact|not measured):)")
NOT_PROSE = re.compile(r"(?:ptxas|CUDA|driver|capability|CuPy)(?:\]\([^)]*\))?\s+\d+\.\d+|`[^`\n]*`|\]\([^)]*\)|<[a-z][^>]*>")
COMMENT = re.compile(r"<!--\s*(fact|not measured):.*?-->", re.S)


def _markdown(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def _prose(text):
    """The text a reader sees as prose, with each marker kept as an empty one (its reason may hold numbers)."""
    return NOT_PROSE.sub(" ", COMMENT.sub(lambda m: f"<!-- {m[1]}: -->", text))


def unmarked(text):
    """Each measured-looking number of a Markdown text that carries no marker, with its surroundings."""
    text = _prose(text)
    found = [m for pattern in (UNMARKED, DECIMAL) for m in pattern.finditer(text)]
    spans = sorted({(m.start(), m.end()) for m in found})
    return [f"{text[a:b]}: …{text[max(0, a - 50):b + 10]}…".replace("\n", " ") for a, b in spans]


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_every_marked_number_is_its_fact(path):
    for text in _markdown(path):
        for m in facts.MARKER.finditer(text):
            fact = facts.value(m["name"])
            assert facts.agrees(m["number"], fact, m["power"] or ""), (
                f"{path.name}: the prose says {m['number']} where {m['name']} ({facts.FACTS[m['name'].split('/')[0]][0]}) "
                f"is {fact:.4g}: change the text, or the results file if the text was right.")


@pytest.mark.parametrize("path", [p for p in NOTEBOOK_PATHS if p.name[:2] in facts.ENFORCED], ids=lambda p: p.stem)
def test_enforced_notebooks_mark_every_measured_number(path):
    found = [hit for text in _markdown(path) for hit in unmarked(text)]
    assert not found, f"{path.name}: numbers with no fact marker (docs/numbers.md): {found}"


def test_the_check_catches_a_wrong_number_and_an_unmarked_one():
    m = facts.MARKER.search("gained 12%<!-- fact: autotune_gain_pct/06_transposed_a --> with")
    assert m and not facts.agrees(m["number"], facts.value(m["name"]))
    assert facts.agrees("11", facts.value("autotune_gain_pct/06_transposed_a"))
    assert facts.agrees("236.9", 236.89) and not facts.agrees("236.8", 236.89) and facts.agrees("1,089", 1089)
    assert UNMARKED.search("ran at 48.3 TFLOP/s on") and not UNMARKED.search("48.3 TFLOP/s<!-- fact: x -->")
    assert UNMARKED.search("copies at 9 GB/s from") and UNMARKED.search("at 1.2 GFLOP/s at")
    assert facts.MARKER.search("at 9 GB/s<!-- fact: cpu_copy_gbs/DRAM -->")["name"] == "cpu_copy_gbs/DRAM"
    # decimals in any form need a marker; versions, code and integers with no unit do not
    for text in ("1.8 times 09", "slower (56.9): the", "RMS 2.61 × 10⁻⁴ of", "0.25 FLOP/B", "ran 1.3 times<!-- x -->"):
        assert unmarked(text), text
    for text in ("ptxas 12.9 for sm_90", "[ptxas](../docs/glossary.md#ptxas) 12.9 kept", "CuPy 14.2.0,", "`0.5f`", "a 4 x 64 block, 16 times", "0.0f",
                 "1.8 times<!-- fact: x -->", "(56.9<!-- not measured: computed, 1.2 / 3.4 -->)",
                 "2.61 × 10⁻⁴<!-- fact: x -->", "48.3 TFLOP/s <!-- fact: x -->"):
        assert not unmarked(text), text
    ratio = facts.MARKER.search("ran 1.3 times<!-- fact: ratio/tuning_run_tflops/04_1d_thread_tiling/BM64,BN64,BK8,TM16:"
                                 "tuning_run_tflops/04_1d_thread_tiling/BM64,BN64,BK8,TM8 -->")
    assert ratio["unit"] == "times" and facts.agrees("1.3", facts.value(ratio["name"]))
    assert facts.agrees("2.61", 2.612e-4, "⁻⁴") and not facts.agrees("2.61", 2.62e-4, "⁻⁴")
    with pytest.raises(KeyError, match="no fact"):
        facts.value("no_such_fact")
    # a configuration names every field of the kernel's, so that a name cannot silently mean another row
    with pytest.raises(KeyError, match="leaves out TM"):
        facts.value("tuning_run_tflops/04_1d_thread_tiling/BM64,BN64,BK16")
    with pytest.raises(KeyError, match="not one of"):
        facts.value("tuning_run_tflops/04_1d_thread_tiling/BM64,BN64,BK16,TM16,TN4")
    with pytest.raises(KeyError, match="takes"):
        facts.value("tuning_run_tflops/04_1d_thread_tiling")


def test_every_facts_module_is_in_the_registry():
    """A notebook's module left out of facts.MODULES would leave its markers failing as unknown facts."""
    package = importlib.import_module("helpers.measure.facts")
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"helpers.measure.facts.{info.name}")
        if hasattr(module, "FACTS"):
            assert module in facts.MODULES, f"{module.__name__} has FACTS but is not in facts.MODULES"
            assert all(facts.FACTS[name] is f for name, f in module.FACTS.items())

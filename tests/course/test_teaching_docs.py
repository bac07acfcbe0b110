"""The teacher's guide and the reference pages stay in step with the course.

TEACHING.md lists every notebook (and only notebooks that exist); every `results/` path the three pages cite
exists; every link to a heading (`glossary.md#ffma`, `#anchor`, `references.md#...`) lands on a heading of
the page it names, by GitHub's rule for heading anchors; the glossary has the terms the notebooks use; README
links the three pages; in every notebook, the first use of each glossary term links to its entry. Pure text
checks: nothing is executed."""

import re
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.maintain import glossary_links

ROOT = paths.ROOT
TEACHING = ROOT / "TEACHING.md"
GLOSSARY = ROOT / "docs" / "glossary.md"
REFERENCES = ROOT / "docs" / "references.md"
DOCS = (TEACHING, GLOSSARY, REFERENCES)

# The terms the notebooks use that the glossary must define, as GitHub anchors of its headings.
REQUIRED_TERMS = (
    "ptxas", "nvrtc", "sass", "lds", "lds128", "sts", "ffma", "occupancy", "register-spill", "warp", "block", "sm",
    "wave", "tile-quantization", "coalescing", "sector", "bank-conflict", "shared-memory", "l2", "dram", "roofline",
    "arithmetic-intensity", "ridge-point", "tflops", "cublas", "tf32", "tensor-core", "wmma", "mmasync", "wgmma",
    "cpasync", "double-buffering", "split-k", "launch-bounds", "emulator", "trace",
)


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def without_code_blocks(markdown: str) -> str:
    """The Markdown with fenced code blocks blanked (a `# comment` in a code block is no heading)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, `_` and `-` kept),
    each space a hyphen."""
    heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for line in without_code_blocks(text(path)).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        found.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return found


def test_slugs_follow_githubs_rule():
    assert github_slug("FFMA") == "ffma"
    assert github_slug("LDS.128") == "lds128"
    assert github_slug("cp.async") == "cpasync"
    assert github_slug("TFLOP/s") == "tflops"
    assert github_slug("LDG, STG") == "ldg-stg"
    assert github_slug("siboehm's worklog") == "siboehms-worklog"
    assert github_slug("1 · The notebooks at a glance") == "1--the-notebooks-at-a-glance"
    assert all(glossary_links.slug(h) == github_slug(h) for h in ("LDS.128", "LDG, STG", "TFLOP/s", "mbarrier"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_pages_exist(doc):
    assert doc.is_file(), f"{doc.relative_to(ROOT)} is missing"


def test_teaching_lists_every_notebook_and_only_notebooks_that_exist():
    listed = set(re.findall(r"\b\d\d[a-z]?_[A-Za-z0-9_]+\.ipynb\b", text(TEACHING)))
    present = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert present, "no notebooks found"
    assert not listed - present, f"TEACHING.md names notebooks that do not exist: {sorted(listed - present)}"
    assert not present - listed, (f"notebooks missing from TEACHING.md (add each to its table, section 2 and the "
                                  f"lesson plans): {sorted(present - listed)}")


def cited_results(markdown: str) -> set[str]:
    """Every `results/...` path a page names (file or folder; `*` allowed), trailing punctuation dropped."""
    found = set()
    for m in re.finditer(r"(?<![\w/])results/[A-Za-z0-9_.*\-/]*", markdown):
        found.add(m.group(0).rstrip(".,;:/") or "results")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_cited_results_path_exists(doc):
    missing = []
    for path in sorted(cited_results(text(doc))):
        if "*" in path:
            if not list(ROOT.glob(path)):
                missing.append(path)
        elif not (ROOT / path).exists():
            missing.append(path)
    assert not missing, f"{doc.name} cites results that are not committed: {missing}"


def test_teaching_cites_results_files():
    assert len({p for p in cited_results(text(TEACHING)) if "." in Path(p).name}) >= 10


def links(markdown: str) -> list[tuple[str, str]]:
    """(file, anchor) of every link to a heading: Markdown links `](file.md#a)` and `](#a)`, and a
    `glossary.md#a` / `references.md#a` / `TEACHING.md#a` written anywhere (in text or code)."""
    found = [(f, a) for f, a in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", markdown)]
    found += re.findall(r"(?<![\w/.(])((?:docs/)?(?:glossary|references)\.md|TEACHING\.md)#([\w\-]+)", markdown)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_heading_link_resolves(doc):
    broken = []
    for target, anchor in links(without_code_blocks(text(doc))):
        if target == "":
            page = doc
        elif target in ("glossary.md", "docs/glossary.md"):
            page = GLOSSARY
        elif target in ("references.md", "docs/references.md"):
            page = REFERENCES
        else:
            page = (doc.parent / target).resolve()
        if not page.is_file():
            broken.append(f"{target}#{anchor} (no such file)")
        elif anchor not in anchors(page):
            broken.append(f"{target or doc.name}#{anchor}")
    assert not broken, f"{doc.name} links to headings that do not exist: {broken}"


def test_file_links_resolve():
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)", without_code_blocks(text(doc))):
            if re.match(r"[a-z]+://", target):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.name}: {target}")
    assert not broken, f"links to files that do not exist: {broken}"


def test_glossary_defines_the_terms_the_notebooks_use():
    have = anchors(GLOSSARY)
    missing = [t for t in REQUIRED_TERMS if t not in have]
    assert not missing, f"docs/glossary.md has no heading for: {missing}"


def test_every_glossary_entry_says_where_it_is_first_used():
    entries = re.split(r"^## ", without_code_blocks(text(GLOSSARY)), flags=re.M)[1:]
    assert len(entries) >= len(REQUIRED_TERMS)
    unplaced = [e.splitlines()[0] for e in entries if "First used:" not in e]
    assert not unplaced, f"glossary entries without 'First used:': {unplaced}"


def test_readme_links_the_three_pages():
    readme = text(ROOT / "README.md")
    for page in ("TEACHING.md", "docs/references.md", "docs/glossary.md"):
        assert f"]({page})" in readme, f"README.md does not link {page}"


# ---- every first use of a glossary term in a notebook links to its entry (issue 21, point 4) --------------------
NOTEBOOK_PATHS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells(path: Path) -> list:
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_every_glossary_link_of_a_notebook_lands_on_an_entry(path):
    have = anchors(GLOSSARY)
    sources = [c.source for c in _cells(path) if c.cell_type == "markdown"]
    hrefs = [h for s in sources for h in re.findall(r"\]\(([^)\s]*glossary\.md)#([^)\s]+)\)", s)]
    broken = [f"{target}#{anchor}" for target, anchor in hrefs
              if target != "../docs/glossary.md" or anchor not in have]
    assert not broken, f"{path.name} links to glossary entries that do not exist: {broken}"


def _unlinked_first_uses(cells, matcher) -> list[str]:
    pairs = [(c.cell_type, c.source) if hasattr(c, "cell_type") else c for c in cells]
    return [f"cell {u.cell}: {pairs[u.cell][1][u.start:u.end]!r} (#{u.anchor})"
            for u in matcher.first_uses(pairs).values() if not u.linked]


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_the_first_use_of_each_glossary_term_links_to_its_entry(path):
    """Terms: the glossary's headings (and glossary_links.ALIASES), whole words, case-insensitive, in the Markdown
    outside headings, code, comments, links and raw HTML; glossary_links.EXEMPT says which are never asked for."""
    unlinked = _unlinked_first_uses(_cells(path), glossary_links.Matcher())
    assert not unlinked, (f"{path.name}: first uses of glossary terms with no link to their entry "
                          f"(python -m tools.glossary_links notebooks/{path.name} links them): {unlinked}")


def test_an_unlinked_first_use_is_caught_and_a_linked_one_passes():
    matcher = glossary_links.Matcher()
    linked = "Its [occupancy](../docs/glossary.md#occupancy) is low; occupancy is a means, not a goal."
    planted = "Occupancy first, unlinked. Its [occupancy](../docs/glossary.md#occupancy) is low."
    assert _unlinked_first_uses([("markdown", linked)], matcher) == []
    assert _unlinked_first_uses([("markdown", planted)], matcher) == ["cell 0: 'Occupancy' (#occupancy)"]
    # an earlier cell counts first; code cells do not count
    assert _unlinked_first_uses([("code", "occupancy = 1"), ("markdown", "the occupancy"), ("markdown", linked)],
                                matcher) == ["cell 1: 'occupancy' (#occupancy)"]
    # a code span that is the term (with modifiers) is a use; one that only contains it is not
    assert _unlinked_first_uses([("markdown", "`LDS.128` and `LDS.64`, not `helpers.ptxas_report`")], matcher) == \
        ["cell 0: '`LDS.128`' (#lds128)", "cell 0: '`LDS.64`' (#lds)"]
    assert _unlinked_first_uses([("markdown", "[`LDS.128`](../docs/glossary.md#lds128)")], matcher) == []
    # left alone: headings, fences, comments, other links, raw HTML, a number's unit, exempt words
    alone = ("## 4 · Occupancy\n\n```\noccupancy\n```\n<!-- occupancy -->\n[occupancy](04_x.ipynb)\n\n"
             "<details><summary>Hint</summary>occupancy</details>\n\n365.2 TFLOP/s<!-- fact: x --> in one block")
    assert _unlinked_first_uses([("markdown", alone)], matcher) == []
    # the linker links exactly the first use, keeping code as code, and then the check passes
    fixed = matcher.link([("markdown", "occupancy, occupancy; `LDS.128`")])
    assert fixed == ["[occupancy](../docs/glossary.md#occupancy), occupancy; [`LDS.128`](../docs/glossary.md#lds128)"]
    assert _unlinked_first_uses([("markdown", fixed[0])], matcher) == []


def test_a_glossary_link_to_no_entry_is_caught(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("[occupancy](../docs/glossary.md#occupancyy)")])
    nbformat.write(nb, tmp_path / "99_planted.ipynb")
    with pytest.raises(AssertionError, match="occupancyy"):
        test_every_glossary_link_of_a_notebook_lands_on_an_entry(tmp_path / "99_planted.ipynb")

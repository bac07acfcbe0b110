"""The teacher's guide and the reference pages stay in step with the course.

TEACHING.md lists every notebook (and only notebooks that exist); every `results/` path the three pages cite
exists; every link to a heading (`glossary.md#ffma`, `#anchor`, `references.md#...`) lands on a heading of
the page it names, by GitHub's rule for heading anchors; the glossary has the terms the notebooks use; README
links the three pages. Pure text checks: nothing is executed."""

import re
from pathlib import Path

import pytest

from helpers.core import paths

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

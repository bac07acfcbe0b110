"""The first use of each glossary term in a notebook links to its entry (issue 21, point 4).

The terms are the headings of docs/glossary.md (and the few other spellings in ALIASES), matched as whole words,
case-insensitive, a plural `s`/`es` allowed, a space inside a term matching any whitespace or a hyphen (prose
wraps lines; "shared-memory" is the same term). Where two terms start at the same place the longer one wins
("LDS.128" over "LDS", "bank conflict" over "bank").

Only a notebook's Markdown cells count, and in them not: headings, fenced code, HTML comments (the fact markers),
raw HTML blocks (a `<details><summary>` line runs to the next blank line, where Markdown is not rendered), links
and images (their text and address), bare addresses, a number's unit (`365.2 TFLOP/s`, which a fact marker
follows: linking it would part the number from its marker), and code spans, except a code span that is a term
itself, or a term with dotted modifiers (`LDS.128`, `wgmma.mma_async`): that one counts and is linked whole,
[`LDS.128`](../docs/glossary.md#lds128). Nor do the write-it exercises' contracts, which a notebook must state
word for word as the exercise registry writes them.

A term in EXEMPT is never asked for: its everyday or course-wide sense (a block of C, stage 05, a register of
the CPU) would make most first uses a link to the wrong idea, or its link would say nothing a learner needs there.

    Matcher().first_uses(cells)   per anchor, its first use in a notebook's Markdown cells, and whether it is linked
    Matcher().link(cells)         the cells' sources, every unlinked first use linked (tools/glossary_links.py)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.paths import NOTEBOOKS, ROOT
from helpers.course import write_it

GLOSSARY = ROOT / "docs" / "glossary.md"
HREF = "../docs/glossary.md#"   # from notebooks/

# Anchors whose first uses are not linked, and why (see the module's docstring).
EXEMPT = {
    "block": "a block of C, of a matrix, of the cache long before a thread block (01 is all CPU blocks)",
    "grid": "a grid of plots, of sliders and of tiles as often as a launch's grid",
    "register": "the CPU's registers in 01, and a word every reader of the course knows",
    "stage": "the course's stages: in every notebook's first line",
    "lane": "FP32 lanes of an SM (00) as often as a warp's lanes; warp's entry says what a lane is",
}

# Other spellings of an entry that the notebooks use, beside its heading.
ALIASES = {
    "ldg-stg": ("LDG", "STG"),
    "tma": ("Tensor Memory Accelerator",),
    "persistent-kernel": ("persistent tile",),
    "sm": ("streaming multiprocessor",),
    "ilp": ("instruction-level parallelism",),
    "unchecked-interior-loop": ("unchecked loop",),
}

PROTECTED = re.compile("|".join((
    r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[^\n]*$|\Z)",     # fenced code
    r"^[ \t]{0,3}#{1,6}[ \t][^\n]*",                                        # a heading
    r"<!--.*?-->",                                                          # comments: the fact markers
    r"^[ \t]{0,3}</?[A-Za-z][^\n]*(?:\n(?![ \t]*\n)[^\n]*)*",               # a raw HTML block, to a blank line
    r"<[A-Za-z/][^>\n]*>",                                                  # an inline HTML tag
    r"https?://[^\s)>]+",                                                   # a bare address
    r"\d[\d,]*(?:\.\d+)?\s*TFLOP/s",                                        # a number's unit
)), re.S | re.M)
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]*(?:\([^()\s]*\))?[^()\s]*)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (as tests/course/test_teaching_docs.py checks it)."""
    heading = re.sub(r"<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def terms(glossary: str | None = None) -> dict[str, tuple[str, ...]]:
    """Anchor -> the spellings that name it: every `## ` heading of the glossary, LDG, STG for "LDG, STG"."""
    glossary = GLOSSARY.read_text(encoding="utf-8") if glossary is None else glossary
    found = {}
    for heading in re.findall(r"^## +(.+?)\s*$", glossary, re.M):
        anchor = slug(heading)
        names = ALIASES.get(anchor, ()) if "," in heading else (heading, *ALIASES.get(anchor, ()))
        found[anchor] = tuple(names)
    return found


def _pattern(name: str) -> str:
    words = [re.escape(w) for w in re.split(r"[ -]", name)]
    plural = "(?:e?s)?" if name[-1].isalpha() else ""
    return r"(?:\s+|-)".join(words) + plural


@dataclass(frozen=True)
class Use:
    cell: int          # index among the notebook's cells
    start: int         # span in the cell's source: the words, or the whole code span, or the whole link
    end: int
    anchor: str
    linked: bool       # a link to the anchor's entry


class Matcher:
    def __init__(self, glossary: str | None = None, exempt=EXEMPT, verbatim=None):
        # Texts a notebook must hold word for word: the write-it contracts (tests/course/test_write_it.py).
        self.verbatim = [ex.contract() for ex in write_it.exercises()] if verbatim is None else list(verbatim)
        self.terms = {a: n for a, n in terms(glossary).items() if a not in exempt}
        names = sorted(((n, a) for a, ns in self.terms.items() for n in ns), key=lambda na: -len(na[0]))
        self.anchor_of = {}
        parts = []
        for i, (name, anchor) in enumerate(names):
            self.anchor_of[f"t{i}"] = anchor
            parts.append(f"(?P<t{i}>{_pattern(name)})")
        alternatives = "|".join(parts)
        self.words = re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w])", re.I)
        self.code = re.compile(rf"(?:{alternatives})(?:\.[\w.]+)?", re.I)

    def _anchor(self, m: re.Match) -> str:
        return self.anchor_of[m.lastgroup]

    def uses(self, source: str, cell: int = 0) -> list[Use]:
        """Every countable use of a term in one Markdown source, in order."""
        uses, blank = [], [False] * len(source)

        def hide(a, b):
            blank[a:b] = [True] * (b - a)

        for m in PROTECTED.finditer(source):
            hide(m.start(), m.end())
        for words in self.verbatim:
            at = source.find(words)
            while at >= 0:
                hide(at, at + len(words))
                at = source.find(words, at + 1)
        codes = [m for m in CODE.finditer(source) if not blank[m.start()]]
        in_code = [False] * len(source)
        for m in codes:
            in_code[m.start():m.end()] = [True] * (m.end() - m.start())
        for m in LINK.finditer(source):
            if blank[m.start()] or in_code[m.start()]:
                continue
            href = m.group(2)
            if "glossary.md#" in href:
                uses.append(Use(cell, m.start(), m.end(), href.split("#", 1)[1], True))
            hide(m.start(), m.end())
        for m in codes:
            if blank[m.start()]:
                continue
            whole = self.code.fullmatch(m.group(2).strip())
            if whole:
                uses.append(Use(cell, m.start(), m.end(), self._anchor(whole), False))
            hide(m.start(), m.end())
        text = "".join("\0" if b else ch for ch, b in zip(source, blank))
        for m in self.words.finditer(text):
            uses.append(Use(cell, m.start(), m.end(), self._anchor(m), False))
        return sorted(uses, key=lambda u: u.start)

    def first_uses(self, cells) -> dict[str, Use]:
        """Per anchor, its first use in the Markdown cells of `cells` (nbformat cells or (type, source) pairs)."""
        first = {}
        for i, (kind, source) in enumerate(_pairs(cells)):
            if kind != "markdown":
                continue
            for use in self.uses(source, i):
                first.setdefault(use.anchor, use)
        return first

    def link(self, cells) -> list[str]:
        """Every cell's source, with each unlinked first use made a link to its entry."""
        pairs = _pairs(cells)
        sources = [s for _, s in pairs]
        todo = sorted((u for u in self.first_uses(cells).values() if not u.linked),
                      key=lambda u: (u.cell, -u.start))
        for u in todo:
            s = sources[u.cell]
            sources[u.cell] = f"{s[:u.start]}[{s[u.start:u.end]}]({HREF}{u.anchor}){s[u.end:]}"
        return sources


def _pairs(cells) -> list[tuple[str, str]]:
    return [c if isinstance(c, tuple) else (c.cell_type, c.source) for c in cells]


def glossary_hrefs(source: str) -> list[str]:
    """The anchors of every link to the glossary in a Markdown source."""
    return [m.group(2).split("#", 1)[1] for m in LINK.finditer(source) if "glossary.md#" in m.group(2)]


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))

"""Every repository path the prose names exists: README.md, TEACHING.md, docs/, tools/README.md, the notebooks'
Markdown and the committed outputs of their checked cells (04 printed `helpers/intensity.py` until commit 685bdc1, after it had moved), the
comments and docstrings of tests/ and kernels/, and every string of helpers/ and tools/ (their
messages name files to the learner: "add one to helpers/measure/intensity.py").

A path is named when it starts with a top folder of the repository (`helpers/emulator/compiler.py`) or is a root
file (`TEACHING.md`). Not checked: patterns and placeholders (`kernels/*.cu`, `results/gpu_<gpu>_<date>/`,
`notebooks/NN_slug.ipynb`, `tools/NAME.py`), a path the text dates (`tools/experiments/race_09.py until commit
6313ef7`: history, found with `git show COMMIT:PATH`), string literals in tests (they name missing files on purpose), and
results/**/README.md, each a record of a run at the commit it names.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from helpers.core.paths import ROOT

TOP = ("helpers", "kernels", "notebooks", "results", "figures", "tests", "tools", "docs", ".ci")
ROOT_FILES = ("README.md", "TEACHING.md", "requirements.txt", "pytest.ini", ".importlinter", "conftest.py")
NAMED = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*[\w/]|(?:%s))(?![\w(])" % (
    "|".join(re.escape(t) for t in TOP), "|".join(re.escape(f) for f in ROOT_FILES)))
PLACEHOLDER = re.compile(r"NN|NAME|FOLDER|DATE|stage99")
DATED = re.compile(r"[^.;]{0,40}?\b(?:at|until|before)\s+commit\s+[0-9a-f]{7,40}\b")
FSTRING_MIDDLE = getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)   # f-strings are tokens of their own from 3.12
C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _prose(path: Path) -> str:
    """The text of `path` a reader takes as prose: all of a Markdown file, a notebook's Markdown cells, the comments
    and docstrings of tests and kernels, every string and comment of helpers/ and tools/."""
    text = path.read_text(errors="replace")
    if path.suffix == ".md":
        return text
    if path.suffix == ".ipynb":   # its Markdown, and what its checked cells print (a helper's message, a table's file)
        cells = json.loads(text)["cells"]
        return "\n".join(["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"] +
                         ["".join(o.get("text", "")) for c in cells for o in c.get("outputs", [])])
    if path.suffix == ".py":
        messages = path.relative_to(ROOT).parts[0] in ("helpers", "tools")
        out = []
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for i, tok in enumerate(tokens):
            if tok.type == tokenize.COMMENT:
                out.append(tok.string)
            elif tok.type in (tokenize.STRING, FSTRING_MIDDLE) and (messages or i == 0 or tokens[i - 1].type in (
                    tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT)):
                out.append(tok.string)   # a docstring, a bare string standing as a comment, or a message
        return "\n".join(out)
    return "\n".join(C_COMMENT.findall(text))


def _documents() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    keep = []
    for name in listed:
        p = Path(name)
        if name.startswith("results/") or p.suffix not in (".md", ".ipynb", ".py", ".cu", ".cuh", ".h", ".cpp"):
            continue
        if p.suffix == ".md" or p.suffix == ".ipynb" or p.parts[0] in ("helpers", "tests", "tools", "kernels") \
                or name == "conftest.py":
            keep.append(ROOT / p)
    return keep


def named_paths(text: str) -> set[str]:
    found = set()
    for m in NAMED.finditer(text):
        path = m.group(1).rstrip("./")
        rest = text[m.end():m.end() + 1]
        if rest in ("*", "<", "{") or PLACEHOLDER.search(path) or DATED.match(text, m.end()):
            continue   # a pattern, a placeholder, or history
        found.add(path)
    return found


def test_the_scanner_finds_paths_and_skips_patterns():
    text = ("see `helpers/core/paths.py`, kernels/03_smem_tiling.cu: and TEACHING.md. Not kernels/*.cu, "
            "results/gpu_<gpu>_<date>/, tools/NAME.py, notebooks/NN_slug.ipynb, nor myhelpers/x.py, nor "
            "tools/gone.py (until commit 6313ef7)")
    assert named_paths(text) == {"helpers/core/paths.py", "kernels/03_smem_tiling.cu", "TEACHING.md"}


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_named_exists(document):
    missing = sorted(p for p in named_paths(_prose(document)) if not (ROOT / p).exists())
    assert missing == [], f"{document.relative_to(ROOT)} names paths that do not exist: {missing}"

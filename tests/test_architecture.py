"""helpers/ stays layered: import-linter's contracts, no import circles (imports inside functions
count), no helpers import hidden in a function, small modules, one place for the root path, and
each kernel's parent in the registry is the one its header names."""

import ast
import re
import sys
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

from helpers.core import stages
from helpers.core.paths import ROOT

MAX_LINES = 500
# The one import written inside a function on purpose: the GPU backend imports CuPy, which a
# machine without a GPU may not have. It is not there to dodge a circle (the graph has none).
LAZY_IMPORTS = {("helpers/run/backend.py", "helpers.run")}


def _modules():
    return sorted(p for p in (ROOT / "helpers").rglob("*.py"))


def test_import_linter_contracts_are_kept(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status = lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True)
    out = capsys.readouterr().out
    assert status == 0, out[-3000:]
    assert "3 kept, 0 broken" in out


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), over every import grimp sees."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return found


def test_no_import_circle_among_helpers_modules():
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    graph = grimp.build_graph("helpers", include_external_packages=False, cache_dir=None)
    assert _cycles(graph) == []


def test_a_circle_would_be_found():
    """The circle finder itself: a graph with a circle of three modules reports exactly it."""
    g = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        g.add_import(importer=a, imported=b)
    assert _cycles(g) == [["p.a", "p.b", "p.c"]]


def test_no_helpers_import_inside_a_function():
    inside = []
    for path in _modules():
        rel = str(path.relative_to(ROOT))
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    module = getattr(node, "module", None) if isinstance(node, ast.ImportFrom) else None
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                    if (module or "").startswith("helpers") or getattr(node, "level", 0) or \
                            any(n.startswith("helpers") for n in names):
                        if (rel, module) not in LAZY_IMPORTS:
                            inside.append(f"{rel}:{node.lineno}")
    assert inside == [], f"move these imports to the top of their module: {inside}"


def test_no_module_over_500_lines():
    big = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}, f"split by what each part is about: {big}"


def test_the_repository_root_is_computed_in_one_place():
    pattern = re.compile(r"__file__\)\.resolve\(\)\.(parent\.parent|parents\[)")
    places = [str(p.relative_to(ROOT)) for p in [*_modules(), *(ROOT / "tools").rglob("*.py")]
              if pattern.search(p.read_text())]
    assert places == ["helpers/core/paths.py"]


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_parent_is_the_kernel_the_header_names(variant):
    header = variant.path.read_text().split("__global__")[0]
    named = re.findall(r"What changed from (\w+):", header)
    assert named == ([variant.parent] if variant.parent else []), \
        f"{variant.path.name}'s header names {named}; the registry says parent={variant.parent!r}"
    if variant.parent:
        assert stages.variant(variant.parent).path.is_file()


def test_the_notebook_surface_resolves_to_layered_modules():
    import importlib

    import helpers
    for name, module in helpers.SURFACE.items():
        assert module.split(".")[1] in ("core", "run", "measure", "views", "course"), module
        assert getattr(helpers, name) is importlib.import_module(module)
    for name, module in helpers.FUNCTIONS.items():
        assert callable(getattr(helpers, name)) and getattr(helpers, name).__module__ == module
    with pytest.raises(AttributeError, match="notebook surface"):
        helpers.no_such_module  # noqa: B018


def test_notebooks_import_only_the_surface():
    import json

    import helpers
    used = set()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for names in re.findall(r"^\s*from helpers import ([\w, ]+)$", "".join(cell["source"]), re.M):
                used |= {n.strip() for n in names.split(",")}
    surface = set(helpers.SURFACE) | set(helpers.FUNCTIONS)
    assert used and used <= surface, sorted(used - surface)

"""Google Colab: every notebook has the current "Open in Colab" badge and the same first code cell;
the badge tool is idempotent; the first cell clones the course on Colab and changes nothing
elsewhere; the panels use only what ipywidgets 7.7 (Colab's) has."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from helpers.core import paths
from helpers.course import colab
from helpers.maintain import notebooks

ROOT = paths.ROOT
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOOL = ROOT / "tools" / "colab_badges.py"


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


# ---- every notebook, including ones added later ---------------------------------------------------
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_opens_with_the_current_colab_badge(path):
    nb = nbformat.read(path, as_version=4)
    assert colab.is_badge_cell(nb.cells[0]) and nb.cells[0].source == colab.badge(path.name), (
        f"{path.name}: the first cell is not the current Colab badge; run python tools/colab_badges.py")
    assert sum(colab.is_badge_cell(c) for c in nb.cells) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_starts_with_the_shared_setup_cell(path):
    code = _code_cells(nbformat.read(path, as_version=4))
    assert code and code[0].source == colab.first_cell() == notebooks.FIRST_CELL, (
        f"{path.name}: the first code cell differs from helpers.colab.first_cell(); run python tools/colab_badges.py")


def test_all_notebooks_share_one_first_code_cell():
    firsts = {_code_cells(nbformat.read(p, as_version=4))[0].source for p in NOTEBOOKS}
    assert len(NOTEBOOKS) >= 10 and len(firsts) == 1


def test_badge_and_clone_name_the_one_repository():
    assert colab.colab_url("05_2d_thread_tiling") == colab.colab_url("notebooks/05_2d_thread_tiling.ipynb") == (
        f"https://colab.research.google.com/github/{colab.GITHUB_REPO}/blob/{colab.BRANCH}"
        f"/notebooks/05_2d_thread_tiling.ipynb")
    assert colab.badge("x.ipynb").startswith("[![Open In Colab](https://colab.research.google.com/assets/")
    assert f'"{colab.repo_url()}"' in colab.first_cell() and f'"-b", "{colab.BRANCH}"' in colab.first_cell()
    assert colab.GITHUB_REPO not in TOOL.read_text()   # the tool reads it from helpers/course/colab.py


# ---- the tool ---------------------------------------------------------------------------------
OLD_SETUP = """\
# Every notebook of the course starts with this cell: it finds the course's root (the folder
# holding helpers/) and says which backend runs the kernels, and on what.
import sys
from pathlib import Path
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "helpers" / "stages.py").is_file())
sys.path.insert(0, str(ROOT))
from helpers.run import backend
print(backend.banner())"""


def _old_notebook(path: Path, first_code: str = OLD_SETUP):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 12 · Something new"), nbformat.v4.new_code_cell(first_code),
                nbformat.v4.new_code_cell("print(1)")]
    nbformat.write(nb, path)


def _tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_tool_adds_badge_and_setup_cell_once(tmp_path):
    path = tmp_path / "12_new.ipynb"
    _old_notebook(path)
    assert _tool("--check", path).returncode == 1
    r = _tool(path)
    assert r.returncode == 0 and "updated badge, first code cell" in r.stdout
    once = path.read_text()
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].source == colab.badge("12_new.ipynb") and nb.cells[1].source == "# 12 · Something new"
    assert _code_cells(nb)[0].source == colab.first_cell() and _code_cells(nb)[1].source == "print(1)"
    assert nbformat.validate(nb) is None
    r = _tool(path)
    assert r.returncode == 0 and r.stdout == "" and path.read_text() == once   # idempotent
    assert _tool("--check", path).returncode == 0


def test_tool_moves_a_stale_badge_to_the_top_and_updates_it(tmp_path):
    path = tmp_path / "12_new.ipynb"
    _old_notebook(path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(colab.badge("12_new.ipynb").replace(colab.GITHUB_REPO, "me/old")))
    nbformat.write(nb, path)
    assert _tool(path).returncode == 0
    nb = nbformat.read(path, as_version=4)
    assert [colab.is_badge_cell(c) for c in nb.cells] == [True, False, False, False]
    assert nb.cells[0].source == colab.badge("12_new.ipynb")


def test_tool_leaves_a_foreign_first_code_cell_alone(tmp_path):
    path = tmp_path / "12_new.ipynb"
    _old_notebook(path, first_code="import helpers")
    r = _tool(path)
    assert r.returncode == 1 and "not the course's setup cell" in r.stderr
    assert _code_cells(nbformat.read(path, as_version=4))[0].source == "import helpers"


# ---- the setup cell, run as Python --------------------------------------------------------------
def _run_cell(cwd: Path, env: dict, clone_dir: Path | None = None):
    code = colab.FIRST_CELL_TEMPLATE.format(clone_dir=clone_dir or colab.CLONE_DIR, branch=colab.BRANCH,
                                            url=colab.repo_url())
    code += "\nprint('ROOT=' + str(ROOT)); print('CWD=' + os.getcwd())"
    base = {k: v for k, v in os.environ.items() if k not in ("COLAB_RELEASE_TAG", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**base, "TBT_BACKEND": "cpu", **env},
                          capture_output=True, text=True, timeout=120)


def test_setup_cell_outside_colab_finds_the_course_from_a_notebook_folder():
    r = _run_cell(ROOT / "notebooks", {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Backend: CPU emulator") and f"ROOT={ROOT}\n" in r.stdout
    assert "Colab" not in r.stdout   # nothing installed, nothing cloned


def test_setup_cell_outside_colab_without_the_course_says_where_to_start(tmp_path):
    r = _run_cell(tmp_path, {})
    assert r.returncode != 0 and "FileNotFoundError" in r.stderr and "start Jupyter in the course's folder" in r.stderr


def test_setup_cell_on_colab_clones_the_course_and_runs_from_it(tmp_path):
    """COLAB_RELEASE_TAG set, no course around: the cell clones (a fake git copying this checkout),
    moves to the clone's notebooks/ and prints the banner; run again, it does not clone twice."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    fake_git = bin_dir / "git"
    fake_git.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$@" >> {log}
        for dest; do :; done
        mkdir -p "$dest/notebooks" && cp -r {ROOT}/helpers {ROOT}/kernels {ROOT}/requirements.txt "$dest"
        """))
    fake_git.chmod(0o755)
    clone = tmp_path / "content" / "tile-by-tile"
    env = {"COLAB_RELEASE_TAG": "test", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TBT_BACKEND": ""}
    if colab.missing():  # e.g. a GPU machine with its own CuPy build: the cell would pip-install them
        pytest.skip(f"this environment lacks course packages {colab.missing()}: the setup cell would install them")
    for _ in range(2):
        r = _run_cell(tmp_path, env, clone_dir=clone)
        assert r.returncode == 0, r.stderr
        assert f"ROOT={clone}\n" in r.stdout and f"CWD={clone / 'notebooks'}\n" in r.stdout
        if r.stdout.startswith("Backend: CPU emulator"):
            assert "Runtime > Change runtime type" in r.stdout   # the emulator's advice, for Colab
    assert log.read_text().splitlines() == [f"clone -q --depth=1 -b {colab.BRANCH} {colab.repo_url()} {clone}"]


def test_missing_lists_only_what_is_not_installed(tmp_path, monkeypatch):
    req = tmp_path / "requirements.txt"
    req.write_text("numpy==1.0  # pinned\nsurely-not-a-package-here==2.5\n# tqdm==9\n")
    monkeypatch.setattr(colab, "NOTEBOOK_PACKAGES", ("numpy", "surely-not-a-package-here", "another-absent-one"))
    assert colab.missing(req) == ["surely-not-a-package-here==2.5", "another-absent-one"]
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    assert colab.install_missing() == []   # not on Colab: nothing, not even a look


# ---- ipywidgets 7.7 (Colab) ---------------------------------------------------------------------
API_77 = json.loads((ROOT / "tests" / "ipywidgets_7_7_api.json").read_text())


def _own_nodes(scope):
    """The nodes of a module or function, without those of the functions defined inside it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _widget_uses(tree) -> list[tuple[str, str, list[str]]]:
    """(name, 'attr' or 'call', keyword names) for each use of ipywidgets in a module; an import
    counts in its own function (where `w` is ipywidgets in one function, it may be a warp in another)."""
    uses = []
    for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        uses += _scope_uses(scope)
    return uses


def _scope_uses(scope) -> list[tuple[str, str, list[str]]]:
    aliases, imported = set(), {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "ipywidgets"}
        elif isinstance(node, ast.ImportFrom) and node.module == "ipywidgets":
            imported |= {a.asname or a.name: a.name for a in node.names}
    uses = []
    for node in _own_nodes(scope):
        target = node.func if isinstance(node, ast.Call) else node
        name = None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in aliases:
            name = target.attr
        elif isinstance(target, ast.Name) and target.id in imported and isinstance(node, ast.Call):
            name = imported[target.id]
        if name:
            kws = [k.arg for k in node.keywords if k.arg] if isinstance(node, ast.Call) else []
            uses.append((name, "call" if isinstance(node, ast.Call) else "attr", kws))
    return uses


def _course_sources():
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text()
    for path in NOTEBOOKS:
        for i, cell in enumerate(_code_cells(nbformat.read(path, as_version=4))):
            yield f"{path.name} code cell {i}", cell.source


def test_widget_code_uses_only_what_ipywidgets_7_7_has():
    assert API_77["ipywidgets"].startswith("7.7")
    traits, params = API_77["widget_traits"], API_77["function_parameters"]
    used, problems = set(), []
    for where, text in _course_sources():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue   # IPython magics; none of the course's cells use ipywidgets directly
        for name, how, kws in _widget_uses(tree):
            used.add(name)
            if name not in API_77["names"]:
                problems.append(f"{where}: ipywidgets.{name} does not exist in {API_77['ipywidgets']}")
            allowed = traits.get(name) or params.get(name)
            for k in kws:
                if allowed is not None and k not in allowed:
                    problems.append(f"{where}: ipywidgets.{name}(..., {k}=...) is not a {API_77['ipywidgets']} argument")
    assert not problems, "\n".join(problems)
    assert {"interactive_output", "SelectionSlider", "VBox", "HBox"} <= used   # the scan sees the panels


def test_the_scan_catches_an_ipywidgets_8_only_name():
    tree = ast.parse("import ipywidgets as w\nw.TagsInput(value=[])\nw.SelectionSlider(options=[1], bogus=2)")
    uses = _widget_uses(tree)
    assert ("TagsInput", "call", ["value"]) in uses and "TagsInput" not in API_77["names"]
    assert "bogus" not in API_77["widget_traits"]["SelectionSlider"]

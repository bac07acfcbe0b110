"""Running a few of a notebook's code cells in this process, without Jupyter, to read what they show: the cells
that print committed results or a kernel's source, and the cells whose names they need (found with `ast`), so that
a check of what a learner sees need not execute the whole notebook (nothing else runs: no trace, no timing, no
widget, unless a needed cell makes one).

The outputs come back as nbformat outputs (a stream for what was printed, an execute_result with the mimebundle
IPython would show for the last expression), so the checks read them as they read a run's outputs. A DataFrame also
gets a "text/plain" with every row on one line and every column (the learner's HTML table shows a row on a line;
pandas' plain text would wrap it).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re

from helpers.core.paths import NOTEBOOKS

MAGIC = re.compile(r"^\s*[%!]", re.M)


class CellError(RuntimeError):
    """A cell the runner was asked for (or one it needs) failed, or cannot run outside Jupyter."""


def _tree(source: str) -> ast.Module | None:
    if MAGIC.search(source):
        return None      # a %%kernel cell or a shell line: Jupyter's, not Python's
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _bound(target, out: set) -> None:
    if isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            _bound(t, out)
    elif isinstance(target, ast.Starred):
        _bound(target.value, out)


def defines(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level (what later cells can use)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                _bound(t, out)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            _bound(node.target, out)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _bound(node.optional_vars, out)
        elif isinstance(node, ast.NamedExpr):
            _bound(node.target, out)
    return out


def uses(tree: ast.Module) -> set[str]:
    """The names a cell reads and does not bind itself: what it needs from the cells above."""
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - defines(tree)


def needed(nb, targets) -> list[int]:
    """The code cells to run, in order, for the target cells: each target and, for every name it needs, the
    latest cell above it that binds the name, and so on for those."""
    trees = {i: _tree(c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    todo, keep = list(targets), set()
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        if trees.get(i) is None:
            raise CellError(f"cell {i} is not Python this runner can run (a magic, or not code)")
        keep.add(i)
        for name in uses(trees[i]):
            source = next((j for j in sorted(trees, reverse=True)
                           if j < i and trees[j] is not None and name in defines(trees[j])), None)
            if source is not None:
                todo.append(source)
    return sorted(keep)


def _rows_on_lines(value) -> str | None:
    """A DataFrame (or a Styler of one) as text with each row on one line and every column."""
    try:
        import pandas as pd
    except ImportError:
        return None
    frame = getattr(value, "data", None) if type(value).__name__ == "Styler" else value
    if not isinstance(frame, pd.DataFrame):
        return None
    with pd.option_context("display.multi_sparse", False):
        return frame.to_string(max_rows=None, max_cols=None, line_width=None)


def _result(value) -> dict | None:
    if value is None:
        return None
    from IPython.core.formatters import DisplayFormatter
    data, _ = DisplayFormatter().format(value)
    flat = _rows_on_lines(value)
    if flat is not None:
        data = dict(data, **{"text/plain": flat})
    return {"output_type": "execute_result", "data": data, "metadata": {}}


def _run_one(source: str, namespace: dict, index: int) -> list[dict]:
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    value = None
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, f"<cell {index}>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), f"<cell {index}>", "eval"), namespace)
    outputs = [{"output_type": "stream", "name": "stdout", "text": printed.getvalue()}] if printed.getvalue() else []
    result = _result(value)
    return outputs + ([result] if result else [])


def run(nb, targets, on_figure=None) -> dict[int, list[dict]]:
    """Runs the target cells of `nb` (with the cells they need) in a fresh namespace, the working directory the
    notebooks' folder, figures drawn off screen; returns cell index -> its outputs, for every cell run.
    on_figure(index, figure) is called for each figure a cell leaves open (what Jupyter would show)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    namespace: dict = {"__name__": "__main__"}
    outputs = {}
    here = os.getcwd()
    os.chdir(NOTEBOOKS)
    try:
        for i in needed(nb, targets):
            try:
                outputs[i] = _run_one(nb.cells[i].source, namespace, i)
                for number in plt.get_fignums() if on_figure else ():
                    on_figure(i, plt.figure(number))
            except Exception as e:   # the cell's own error, with the cell named
                raise CellError(f"cell {i} failed outside Jupyter: {type(e).__name__}: {e}") from e
            finally:
                plt.close("all")
    finally:
        os.chdir(here)
    return outputs

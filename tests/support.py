"""What several test folders share: running the command line as a learner does, and small notebooks made up for a
check of what a learner sees."""

import os
import subprocess
import sys

from helpers.core.paths import ROOT


def helpers_cli(*args, timeout=300, env=None, prefix=()):
    """`python -m helpers ARGS` in the repository; `env`: variables set on top of this process's;
    `prefix`: a command it runs under (e.g. unshare)."""
    return subprocess.run([*prefix, sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def checked_notebook(*cells):
    """A notebook of Markdown cells (a str) and # NBVAL_CHECK_OUTPUT code cells ((source, printed text)): what a
    committed notebook stores, for the checks that read it without running it."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    for c in cells:
        if isinstance(c, str):
            nb.cells.append(nbformat.v4.new_markdown_cell(c))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(
                "# NBVAL_CHECK_OUTPUT\n" + c[0], outputs=[nbformat.v4.new_output("stream", name="stdout", text=c[1])]))
    return nb


def require_sandbox():
    """The grader's sandbox, or a skip that says why; in CI (CI set) its absence fails the test instead, so that
    the sandboxed grading tests cannot pass there by skipping."""
    import pytest

    from helpers.core.errors import SandboxUnavailableError
    from helpers.teach import sandbox
    try:
        sandbox.require()
    except SandboxUnavailableError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no sandbox on this machine: {e}")

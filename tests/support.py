"""What several test folders share: running the command line as a learner does."""

import os
import subprocess
import sys

from helpers.core.paths import ROOT


def helpers_cli(*args, timeout=300, env=None, prefix=()):
    """`python -m helpers ARGS` in the repository; `env`: variables set on top of this process's;
    `prefix`: a command it runs under (e.g. unshare)."""
    return subprocess.run([*prefix, sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})

"""Progress bars for the long runs: sweeps over sizes, configurations, kernels, notebooks.

tqdm.auto draws a widget in Jupyter and a text bar on a terminal. Bars are drawn where someone
watches: in a notebook, or when stderr is a terminal; not in CI logs or under pytest. TBT_PROGRESS=1
or 0 forces them on or off. A finished bar disappears (leave=False), so what a cell or a command
prints is the same with or without it; never use one in a cell marked # NBVAL_CHECK_OUTPUT.
"""

from __future__ import annotations

import os
import sys

ENV_VAR = "TBT_PROGRESS"


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def enabled() -> bool:
    setting = os.environ.get(ENV_VAR, "").strip().lower()
    if setting in ("0", "no", "off", "false"):
        return False
    if setting in ("1", "yes", "on", "true"):
        return True
    try:
        return _in_notebook() or sys.stderr.isatty()
    except (AttributeError, ValueError):   # a closed or replaced stderr
        return False


def bar(iterable=None, desc: str | None = None, total: int | None = None, unit: str = "it", **kwargs):
    """tqdm.auto.tqdm over `iterable` (or a manual bar with `total`), drawn only when `enabled()`."""
    from tqdm.auto import tqdm
    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, disable=not enabled(), **kwargs)


def write(*parts, file=None) -> None:
    """print() for text shown while a bar runs: the line goes above the bar instead of through it."""
    from tqdm.auto import tqdm
    tqdm.write(" ".join(str(p) for p in parts), file=file)

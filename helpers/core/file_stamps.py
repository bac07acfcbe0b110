"""What a file is now, cheaply: its stamp (inode, size, modification and change times, from one stat call), so
that what was read or built from it can be kept for the process and used again until the file changes.

    text = read_text_cached(path)     # opens the file the first time, and again only once its stamp changes

Kernel sources (helpers/core/kernel_source.py), the dispatch tables (helpers/run/dispatch.py) and the
library call's plans (helpers/run/sgemm.py) keep what they made from files this way: a repeated call stats
its files and opens none.
"""

from __future__ import annotations

import os
import threading

Stamp = tuple  # (st_ino, st_size, st_mtime_ns, st_ctime_ns), or None for a file that is not there


def absolute(path) -> str:
    """The path as an absolute string (relative paths are relative to the working directory now)."""
    path = os.fspath(path)
    return path if os.path.isabs(path) else os.path.abspath(path)


def stamp(path) -> Stamp | None:
    """The file's stamp, or None where it cannot be stat'ed. An edit changes it (the size or the times)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamps(paths) -> tuple:
    """((path, stamp), ...) of absolute paths: what a cached result depends on."""
    return tuple((p, stamp(p)) for p in paths)


def unchanged(recorded) -> bool:
    """Whether every file of stamps(...) still has its recorded stamp (a file that vanished has changed)."""
    for path, was in recorded:
        if was is None or stamp(path) != was:
            return False
    return True


_texts: dict[str, tuple[Stamp, str]] = {}
_lock = threading.Lock()


def read_text_cached(path) -> str:
    """The file's text, read once and again only after its stamp changed (its stamp is taken before the
    read, so an edit during the read is seen at the next call)."""
    key = absolute(path)
    now = stamp(key)
    hit = _texts.get(key)
    if hit is not None and now is not None and hit[0] == now:
        return hit[1]
    with open(key, encoding="utf-8") as f:
        text = f.read()
    with _lock:
        _texts[key] = (now, text)
    return text


def forget() -> None:
    """Drops every cached text (tests; a process that wants to re-read everything)."""
    with _lock:
        _texts.clear()

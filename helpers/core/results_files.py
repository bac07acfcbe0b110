"""The measured results under results/: every JSON file that says where it was measured, read so
that a damaged one (cut short, a timing NaN or zero, a key missing) stops with its name and what is
wrong (ResultsFileError) instead of a traceback from deep inside a reader."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from helpers.core.errors import ResultsFileError
from helpers.core.paths import RESULTS_DIR, rel

TIMINGS = ("median_ms", "tflops")


def _fix(path: Path) -> str:
    return (f"Fix: restore it (`git checkout -- {rel(path)}` for a committed one), or write it again with the "
            f"command in its provenance.")


def read_json(path: Path | str):
    """The JSON in a results file; ResultsFileError naming the file when it cannot be read or parsed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ResultsFileError(f"{rel(path)} cannot be read ({e.strerror or e}).") from None
    except UnicodeDecodeError as e:
        raise ResultsFileError(f"{rel(path)} is not UTF-8 text (byte {e.start}: {e.reason}): not a results file. "
                               f"{_fix(path)}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        where = f"line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        cut = isinstance(e, json.JSONDecodeError) and e.pos >= len(text.rstrip()) - 8   # (a number cut mid-way: at its end)
        raise ResultsFileError(f"{rel(path)} is not valid JSON ({getattr(e, 'msg', e)}, {where})"
                               + (": it ends early, cut short as it was written" if cut else "")
                               + f". {_fix(path)}") from None


def require(path: Path | str, data, key: str, kind: type | tuple = object, where: str = "its top level"):
    """data[key], or ResultsFileError naming the file, the place and the missing or mistyped key."""
    if not isinstance(data, dict) or key not in data:
        raise ResultsFileError(f"{rel(path)}: {where} has no {key!r}. {_fix(Path(path))}")
    if not isinstance(data[key], kind):
        raise ResultsFileError(f"{rel(path)}: {where}: {key!r} is {data[key]!r}, not a {getattr(kind, '__name__', kind)}. "
                               f"{_fix(Path(path))}")
    return data[key]


def timings_ok(row, keys=TIMINGS) -> bool:
    """Whether each of `keys` in the row is a positive finite number."""
    return isinstance(row, dict) and all(not isinstance(row.get(k), bool) and isinstance(row.get(k), (int, float))
                                         and 0 < row[k] < math.inf for k in keys)


def check_timings(path: Path | str, row: dict, where: str, keys=TIMINGS) -> dict:
    """The row, when each of `keys` is a positive finite number; else ResultsFileError saying which."""
    for key in keys:
        value = require(path, row, key, where=where)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:  # and NaN
            raise ResultsFileError(f"{rel(path)}: {where}: {key} is {value!r}; a measured time or rate is a "
                                   f"positive number. {_fix(Path(path))}")
    return row


@contextlib.contextmanager
def reading(path: Path | str):
    """Around the code that takes a results file's data apart: a key missing, or a value of another
    kind than the reader expects, becomes ResultsFileError naming the file."""
    try:
        yield
    except KeyError as e:
        raise ResultsFileError(f"{rel(path)} has no {e.args[0]!r} where the course reads one. {_fix(Path(path))}") from None
    except (TypeError, AttributeError, IndexError) as e:
        raise ResultsFileError(f"{rel(path)} is not in the form the course reads ({e}). {_fix(Path(path))}") from None


def with_provenance(directory: Path | str = RESULTS_DIR) -> list[tuple[Path, dict]]:
    """(path, data) of each results file whose top level holds a "provenance" dict, sorted by name."""
    directory = Path(directory)
    out = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        data = read_json(path)
        if isinstance(data, dict) and isinstance(data.get("provenance"), dict):
            out.append((path, data))
    return out

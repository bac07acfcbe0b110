"""The learner's record of the exercises, beside their saved kernels: my_kernels/record.json (the folder
TBT_MY_KERNELS names, else my_kernels/ at the course's root; git-ignored). One event per line of history:

    {"exercise": "04", "event": "check", "status": "passed", "source": "<sha256 of the kernel>", "at": "..."}
    {"exercise": "04", "event": "hint", "level": 2, "at": "..."}
    {"exercise": "04", "event": "reveal", "before_passing": true, "at": "..."}
    {"exercise": "05", "event": "start", "from": "yours (04)", "at": "..."}

A %%kernel cell adds its check, write_it.hint its hint, write_it.reveal its reveal, `%%kernel 05 --from-mine`
where the kernel started. What a reveal or a hint displays carries the exercise's history in its output's
metadata (key METADATA), so that a notebook handed in keeps it, and the teacher's grader reads it there
(notes_from_outputs): "asked to see the course's kernel before passing", "hints seen: 1, 2". A learner can
edit either; the record is the learner's own account, for a teacher to read beside the grade, not a proof.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path

from helpers.core.markdown import Markdown
from helpers.core.paths import ROOT

FOLDER_VARIABLE = "TBT_MY_KERNELS"
NAME = "record.json"
METADATA = "tile_by_tile"       # the key of an output's metadata that holds an exercise's history


def folder() -> Path:
    """Where saved kernels and the record go: TBT_MY_KERNELS, else my_kernels/ at the course's root."""
    return Path(os.environ.get(FOLDER_VARIABLE) or ROOT / "my_kernels")


def path() -> Path:
    return folder() / NAME


def fingerprint(text: str) -> str:
    """A kernel's source, as the record knows it: sha256 of its lines without trailing spaces."""
    body = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return hashlib.sha256(body.encode()).hexdigest()


def events(exercise_id: str | None = None, event: str | None = None) -> list[dict]:
    """The record's events, oldest first (of one exercise, of one kind); [] where there is none or it is
    unreadable (a record is never worth an exception in a learner's notebook)."""
    try:
        data = json.loads(path().read_text())
    except (OSError, ValueError):
        return []
    rows = data if isinstance(data, list) else []
    return [e for e in rows if isinstance(e, dict) and (exercise_id is None or e.get("exercise") == exercise_id)
            and (event is None or e.get("event") == event)]


def add(exercise_id: str, event: str, **fields) -> dict:
    """Appends one event (and returns it)."""
    row = {"exercise": exercise_id, "event": event, **fields,
           "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    rows = events()
    rows.append(row)
    path().parent.mkdir(parents=True, exist_ok=True)
    path().write_text(json.dumps(rows, indent=0) + "\n")
    return row


def passed(exercise_id: str, source: str) -> bool:
    """Whether a check of exactly this source (fingerprint) passed."""
    mine = fingerprint(source)
    return any(e.get("status") == "passed" and e.get("source") == mine for e in events(exercise_id, "check"))


def ever_passed(exercise_id: str) -> str | None:
    """When a check of any source of the exercise first passed (ISO time), or None."""
    return next((e.get("at") for e in events(exercise_id, "check") if e.get("status") == "passed"), None)


def history(exercise_id: str) -> dict:
    """What a reveal's or a hint's output carries in its metadata: the exercise's hints and reveals and when
    it first passed."""
    reveals = events(exercise_id, "reveal")
    return {"exercise": exercise_id, "first_passed": ever_passed(exercise_id),
            "hints": sorted({int(e.get("level", 0)) for e in events(exercise_id, "hint")}),
            "revealed_before_passing": next((e.get("at") for e in reveals if e.get("before_passing")), None),
            "revealed": bool(reveals),
            "started_from": next((e.get("from") for e in reversed(events(exercise_id, "start"))), None)}


def notes(h: dict) -> str:
    """A history (history(), or as an output's metadata holds it) in a teacher's words; "" for nothing to say."""
    out = []
    if h.get("revealed_before_passing"):
        out.append(f"asked to see the course's kernel before passing ({h['revealed_before_passing']})")
    if h.get("hints"):
        levels = ", ".join(map(str, h["hints"]))
        out.append(f"hints seen: level{'s' if len(h['hints']) > 1 else ''} {levels}"
                   + (" (level 3 is the code)" if 3 in h["hints"] else ""))
    if h.get("started_from"):
        out.append(f"started from {h['started_from']}")
    return "; ".join(out)


def _histories(value) -> list[dict]:
    """Every METADATA history inside an output's metadata (any depth: Jupyter nests it under the mime type)."""
    if isinstance(value, dict):
        found = [value[METADATA]] if isinstance(value.get(METADATA), dict) else []
        return found + [h for k, v in value.items() if k != METADATA for h in _histories(v)]
    return []


def notes_from_outputs(cells) -> dict[str, str]:
    """exercise id -> the teacher's words, from the outputs of a notebook's code cells (nbformat cells, or their
    JSON as dicts): the last history each exercise's reveals and hints left there."""
    last: dict[str, dict] = {}
    for cell in cells:
        for output in (cell.get("outputs") or []) if hasattr(cell, "get") else []:
            for h in _histories(output.get("metadata") if hasattr(output, "get") else None):
                ex = h.get("exercise")
                if isinstance(ex, str):
                    merged = last.setdefault(ex, {"exercise": ex, "hints": []})
                    merged["hints"] = sorted(set(merged["hints"]) | {int(x) for x in h.get("hints", [])
                                                                     if isinstance(x, int)})
                    for key in ("revealed_before_passing", "started_from"):
                        if isinstance(h.get(key), str):
                            merged[key] = merged.get(key) or h[key]
    return {ex: text for ex, h in last.items() if (text := notes(h))}


class Shown(Markdown):
    """Markdown that Jupyter renders with the exercise's history in the output's metadata (METADATA), so that a
    notebook handed in keeps the record of its hints and reveals for the teacher's grader."""

    def __new__(cls, text: str, history: dict):
        self = super().__new__(cls, text)
        self.history = history
        return self

    def _repr_markdown_(self):
        return str(self), {METADATA: self.history}

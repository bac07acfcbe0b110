"""The measured results under results/: every JSON file that says where it was measured."""

from __future__ import annotations

import json
from pathlib import Path
from helpers.core.paths import RESULTS_DIR



def with_provenance(directory: Path | str = RESULTS_DIR) -> list[tuple[Path, dict]]:
    """(path, data) of each results file whose top level holds a "provenance" dict, sorted by name."""
    directory = Path(directory)
    out = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("provenance"), dict):
            out.append((path, data))
    return out

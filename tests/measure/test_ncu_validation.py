"""The emulator's memory figures against Nsight Compute's counters on a real GPU.

results/ncu_*/ holds what `tools/ncu_run.sh` measured on a GPU (ncu.csv, the SASS, provenance).
Here, on any machine, the emulator traces the same launches again, and every metric must match
the hardware within 5 %, except where the GPU compiler merged scalar shared-memory accesses into
wide instructions (LDS.64/128 in the SASS), which lowers the hardware's request count, and the
differences listed, with their status, in the run's known_differences.json.
"""

import json

import pytest

from helpers.core import paths
from helpers.measure import ncu

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

RUNS = sorted(paths.RESULTS_DIR.glob("ncu_*/ncu.csv"))


@pytest.mark.parametrize("csv_path", RUNS, ids=lambda p: p.parent.name)
def test_emulator_matches_nsight_compute(csv_path, cpu_backend):
    folder = csv_path.parent
    result = ncu.compare(csv_path.read_text(), ncu.read_sass(folder), (folder / "ncu.log").read_text())
    known_file = folder / "known_differences.json"
    known = {(d["case"], d["metric"], d["gpu"], d["emulator"])
             for d in (json.loads(known_file.read_text())["differences"] if known_file.exists() else [])}
    bad = [r for r in result["rows"] if r["verdict"] == "MISMATCH"
           and (r["case"], r["metric"], r["gpu"], r["emulator"]) not in known]
    assert not bad, "\n".join(f"{r['case']}: {r['metric']} GPU {r['gpu']} vs emulator {r['emulator']}" for r in bad)
    listed = [r for r in result["rows"] if (r["case"], r["metric"], r["gpu"], r["emulator"]) in known]
    assert len(listed) == len(known), "known_differences.json lists a difference the run no longer shows"
    merged = [r for r in result["rows"] if r["verdict"] not in ("match", "MISMATCH") and r not in listed]
    for r in merged:  # a merge can only lower the instruction count the hardware sees
        assert r["metric"].startswith("shared") and r["gpu"] < r["emulator"], r
        assert result["wide_shared_instructions"][r["case"]], r
    global_rows = [r for r in result["rows"] if r["metric"].startswith("global") and r not in listed]
    assert global_rows and all(r["verdict"] == "match" for r in global_rows)


def test_every_registered_kernel_configuration_was_profiled():
    assert RUNS, "no results/ncu_*/ncu.csv: run tools/ncu_run.sh on a GPU and commit its folder"
    profiled = {c.label for run in RUNS for c in ncu.profiled_cases((run.parent / "ncu.log").read_text())}
    missing = [c.label for c in ncu.cases() if c.label not in profiled]
    assert not missing, f"not yet profiled with Nsight Compute (run tools/ncu_run.sh on a GPU): {missing}"

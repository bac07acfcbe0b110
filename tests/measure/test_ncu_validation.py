"""The emulator's memory figures against Nsight Compute's counters on a real GPU.

results/ncu_*/ holds what `tools/ncu_run.sh` measured on a GPU (ncu.csv, the SASS, provenance).
Here, on any machine, the emulator traces the same launches again, and every metric must match
the hardware within 5 %, except where the GPU compiler merged scalar shared-memory accesses into
wide instructions (LDS.64/128 in the SASS), which lowers the hardware's request count, and the
differences listed, with their status, in the run's known_differences.json.
"""

import collections
import json
import re

import pytest

from helpers.core import paths
from helpers.core.kernel_source import KernelSource
from helpers.measure import ncu
from helpers.run import toolchain

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


# The workspace store line of kernels/11_stream_k.cu (its 8-byte stores are checked below).
WORKSPACE_STORE_LINE = "__stcg(reinterpret_cast<float2*>(&w["


def _global_stores_by_line(ptx: str, file_index: int = 1) -> dict[int, list[str]]:
    """The st.global instructions of a PTX text by the source line (.loc, from -lineinfo) of file `file_index`."""
    out, line = collections.defaultdict(list), None
    for text in ptx.splitlines():
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", text)
        if loc:
            line = int(loc.group(2)) if int(loc.group(1)) == file_index else None
        elif line is not None and (op := re.match(r"\s*(st\.global[.\w]*)", text)):
            out[line].append(op.group(1))
    return out


def test_the_workspace_stores_of_11_stream_k_are_8_byte_stores():
    """Each float2 store of a partial tile to the workspace is one 8-byte store, as the trace counts it. NVRTC 12.9
    compiled the same store written through `&w[...]` into two 4-byte st.global.f32, and the H100 counted twice the
    trace's global store requests and sectors (results/ncu_h100_2026-11-28_stream_k/README.md): the kernel now
    stores through __stcg (one st.global.cg.v2.f32), and this keeps it so."""
    for case in ncu.cases(("11_stream_k",)):
        if case.config.SK_WAVES == 0:
            continue
        source = KernelSource.read(case.variant.path)
        assert source.text.count(WORKSPACE_STORE_LINE) == 1
        line = source.text[:source.text.index(WORKSPACE_STORE_LINE)].count("\n") + 1
        ptx, _ = toolchain.nvrtc_ptx(source.text, case.variant.name_expression(case.config), source.required_arch(),
                                     source.path.name, source.include_dirs)
        stores = _global_stores_by_line(ptx)
        # BM / 4 float2 stores a thread (unrolled), each one st.global.cg.v2.f32
        assert stores[line] == ["st.global.cg.v2.f32"] * (case.config.BM // 4), (case.label, line,
                                                                                 collections.Counter(stores[line]))


def test_every_registered_kernel_configuration_was_profiled():
    assert RUNS, "no results/ncu_*/ncu.csv: run tools/ncu_run.sh on a GPU and commit its folder"
    profiled = {c.label for run in RUNS for c in ncu.profiled_cases((run.parent / "ncu.log").read_text())}
    missing = [c.label for c in ncu.cases() if c.label not in profiled]
    assert not missing, f"not yet profiled with Nsight Compute (run tools/ncu_run.sh on a GPU): {missing}"

"""Checking the emulator's memory figures against Nsight Compute's hardware counters.

The same launches (every registered kernel, default and alternative configurations, at a small
size) are profiled on a GPU with `ncu` and traced here in full (every block) by the emulator.
Per launch we compare: shared-memory load and store instructions (requests), their wavefronts
and bank conflicts, and global load and store requests and sectors. Where the GPU compiler
merged several scalar accesses of the source into one wide instruction (LDS.64/LDS.128 in the
SASS), request counts differ by design; the comparison says so and points at the SASS.

    on a GPU:  tools/ncu_run.sh OUT [VARIANT ...]   (ncu CSV and the SASS of every kernel, or of those named)
    anywhere:  python -m helpers ncu compare OUT > OUT/comparison.json   (OUT/sass.txt or sass.txt.gz)
"""

from __future__ import annotations

import csv
import functools
import io
import re
import dataclasses
import sys
from dataclasses import dataclass

import numpy as np

from helpers.core import configs
from helpers.measure import memory
from helpers.measure import request_table
from helpers.core import stages
from helpers.core import results_files
from helpers.measure import trace
from helpers.measure import verify
from helpers.core.stages import Variant
from helpers.core.paths import RESULTS_DIR, rel
from helpers.run import backend
from helpers.run import gemm
from helpers.core.kernel_source import KernelSource

SIZE = 64  # small enough to trace every block on the CPU, large enough to fill several blocks

METRICS = {
    "shared load requests": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared store requests": "smsp__sass_inst_executed_op_shared_st.sum",
    "shared load wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared store wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared load bank conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared store bank conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "global load requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global load sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global store requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "global store sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
}


@dataclass(frozen=True)
class Case:
    variant: Variant
    config: configs.KernelConfig

    @property
    def label(self) -> str:
        return f"{self.variant.name} ({self.config.label()})"


def cases(only: tuple[str, ...] = ()) -> list[Case]:
    """Every registered kernel (or those named in `only`), with its default and alternative
    configurations."""
    return [Case(v, c) for v in stages.variants() if not only or v.name in only for c in (v.default, *v.alternatives)]


def launch_all(only: tuple[str, ...] = ()) -> None:
    """On a GPU: one launch of every case (or of the variants named), in order (ncu profiles each)."""
    backend.use("gpu")
    rng = np.random.default_rng(0)
    s = verify.Shape("ncu", SIZE, SIZE, SIZE)
    A, B, C = verify.random_operands(s, rng)
    for case in cases(only):
        out = gemm.run(case.variant, A, B, C, s.alpha, s.beta, case.config)
        ref, tol = verify.reference(A, B, C, s.alpha, s.beta, case.variant.precision)
        assert verify.compare(out, C, ref, tol, s).ok, case.label
        print(f"launched {case.label}", file=sys.stderr)


def emulator_counts(case: Case) -> dict[str, float]:
    """The same quantities from a full trace of the launch on the emulator. Several committed runs profile the same
    configurations, so each is traced once per kernel source (the file's text is part of the key)."""
    return dict(_emulator_counts(case, case.variant.path.read_text()))


@functools.lru_cache(maxsize=None)
def _emulator_counts(case: Case, source: str) -> tuple[tuple[str, float], ...]:
    g = case.config.launch_grid(SIZE, SIZE, backend.EMULATED_SMS)  # as launched: a persistent grid's every block
    t = trace.capture_variant(case.variant, case.config, SIZE, SIZE, SIZE, blocks=range(g[0] * g[1] * g[2]))
    if t.dropped:
        raise RuntimeError(f"{case.label}: the trace overflowed; use a smaller SIZE")
    return tuple(trace_counts(_without_async_copy_stores(t)).items())


def trace_counts(t: trace.Trace) -> dict[str, float]:
    """The METRICS of every request of a trace, as the emulator counts them (all requests at once:
    request_table; the same as summing memory.sectors and memory.banks over memory.requests)."""
    table = request_table.request_table(t)
    is_global = table.space == trace.SPACES.index("global")
    is_load = table.op == trace.OPS.index("load")
    touched, _ = request_table.sector_counts(table)
    banks = request_table.bank_counts(table)
    counts = {k: 0.0 for k in METRICS}
    for kind, of_kind in (("load", is_load), ("store", ~is_load)):
        g, s = of_kind & is_global, of_kind & ~is_global
        counts[f"global {kind} requests"] = float(g.sum())
        counts[f"global {kind} sectors"] = float(touched[g].sum())
        counts[f"shared {kind} requests"] = float(s.sum())
        counts[f"shared {kind} wavefronts"] = float(banks.wavefronts[s].sum())
        counts[f"shared {kind} bank conflicts"] = float((banks.wavefronts - banks.ideal)[s].sum())
    return counts


def _without_async_copy_stores(t: trace.Trace) -> trace.Trace:
    """The trace without the shared-memory writes of asynchronous copies (cp.async, one instruction that reads
    global memory and writes shared memory: memory.async_copy_pcs). On the GPU such a copy is
    an LDGSTS, which Nsight Compute counts among global loads but not among shared-store instructions or
    wavefronts (the H200 counts none for a kernel whose only shared writes are copies)."""
    r = t.records
    copies = memory.async_copy_pcs(r)
    if copies.size == 0:
        return t
    is_shared_store = (r["space"] != trace.SPACES.index("global")) & (r["op"] == trace.OPS.index("store"))
    return dataclasses.replace(t, records=r[~(is_shared_store & np.isin(r["pc"], copies))])


def read_ncu_csv(text: str) -> list[dict[str, float]]:
    """ncu --csv output (one row per kernel and metric) -> one dict per profiled launch, in order."""
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    launches: dict[int, dict] = {}
    for r in rows:
        entry = launches.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})
        for label, metric in METRICS.items():
            if r["Metric Name"] == metric:
                entry[label] = float(r["Metric Value"].replace(",", ""))
    return [launches[i] for i in sorted(launches)]


def wide_shared_loads(sass: str, kernel: str) -> list[str]:
    """The wide shared-memory instructions in the SASS of one kernel (LDS.64, LDS.128, STS.128...)."""
    m = re.search(r"(\w+)\s*(?:<([^>]*)>)?\s*\(", kernel)  # "void sgemm<32>(int, ...)" -> sgemm, 32
    name, args = m.group(1), m.group(2)
    mangled_args = "".join(f"Li{a.strip()}E" for a in args.split(",")) if args else ""
    # the function's header is mangled: _Z17sgemm_smem_tilingILi32EEv...
    return [w for header, wide in _wide_per_function(sass)
            if f"{len(name)}{name}" in header and (not mangled_args or f"I{mangled_args}E" in header) for w in wide]


_WIDE = re.compile(r"\b(LDS|STS)\.(64|128)\b")


@functools.lru_cache(maxsize=4)
def _wide_per_function(sass: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(the `Function :` line, its wide shared-memory instructions) of each function in the SASS, in order: read
    once per SASS text, however many kernels are looked up in it."""
    out, header, wide = [], None, []
    for line in sass.splitlines():
        if "Function :" in line:
            if header is not None:
                out.append((header, tuple(wide)))
            header, wide = line, []
        elif header is not None and ("LDS." in line or "STS." in line) and _WIDE.search(line):
            wide.append(line.strip())
    if header is not None:
        out.append((header, tuple(wide)))
    return tuple(out)


def profiled_cases(log: str) -> list[Case]:
    """The cases of a run, in launch order, from the `launched ...` lines of its ncu.log."""
    by_label = {c.label: c for c in cases()}
    labels = [line.split("launched ", 1)[1].strip() for line in log.splitlines() if line.startswith("launched ")]
    missing = [label for label in labels if label not in by_label]
    if missing:
        raise ValueError(f"the run profiled configurations no longer registered: {missing}")
    return [by_label[label] for label in labels]


def compare(ncu_csv: str, sass: str, log: str, tolerance: float = 0.05) -> dict:
    """Side by side, per case and metric, with a verdict."""
    launches = read_ncu_csv(ncu_csv)
    all_cases = profiled_cases(log)
    if len(launches) != len(all_cases):
        raise ValueError(f"ncu profiled {len(launches)} launches, the log names {len(all_cases)}")
    rows = []
    for case, gpu in zip(all_cases, launches):
        emu = emulator_counts(case)
        wide = wide_shared_loads(sass, gpu["kernel"])
        for label in METRICS:
            g, e = gpu.get(label, float("nan")), emu[label]
            close = abs(g - e) <= tolerance * max(abs(g), abs(e), 1.0)
            verdict = "match" if close else ("compiler merged shared accesses (see SASS)" if wide and
                                             label.startswith("shared") else "MISMATCH")
            rows.append({"case": case.label, "kernel": gpu["kernel"], "metric": label, "gpu": g, "emulator": e,
                         "verdict": verdict})
    return {"size": SIZE, "cases": [c.label for c in all_cases], "rows": rows, "wide_shared_instructions": {
        c.label: wide_shared_loads(sass, g["kernel"]) for c, g in zip(all_cases, launches)}}


def disassemble(arch: str = "sm_90", only: tuple[str, ...] = ()) -> str:
    """On a machine with nvcc: the SASS of every case's kernel instantiation (or the named
    variants'), compiled as NVRTC compiles it for the course (the same ptxas back end; sm_90a for
    a kernel that needs it), for the wide-instruction check."""
    import subprocess
    import tempfile
    from pathlib import Path

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted({c.variant.path for c in cases(only)}):
            exprs = sorted({c.variant.name_expression(c.config) for c in cases(only) if c.variant.path == path})
            target = KernelSource.read(path).required_arch() or arch
            unit = Path(tmp) / "unit.cu"
            # host code that takes each kernel's address makes nvcc compile that instantiation
            unit.write_text(f'#include "{path}"\nvoid* tbt_keep[] = {{'
                            + ", ".join(f"(void*)&{e}" for e in exprs) + "};\n")
            cubin = Path(tmp) / "unit.cubin"
            subprocess.run(["nvcc", "-cubin", f"-arch={target}", "-O3", "-std=c++17", "-o", str(cubin), str(unit)],
                           check=True)
            out.append(subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True,
                                      check=True).stdout)
    return "\n".join(out)


def committed_runs(case_label: str):
    """(run folder, comparison data, rows of this configuration) of each committed Nsight Compute run
    that measured it, newest first."""
    for run in sorted(RESULTS_DIR.glob("ncu_*/comparison.json"), reverse=True):
        data = results_files.read_json(run)
        rows = [r for r in data["rows"] if r["case"] == case_label]
        if rows:
            yield run.parent, data, rows


def committed_figure(case_label: str, metric: str) -> int | None:
    """The GPU's count of `metric` for one configuration in the newest committed run that measured it."""
    for _, _, rows in committed_runs(case_label):
        for r in rows:
            if r["metric"] == metric:
                return int(r["gpu"])
    return None


def committed_source(case_label: str) -> str | None:
    """The folder of the newest committed run that measured the configuration ('results/ncu_h200_2026-11-23/'),
    the run committed_figure and committed read; None when none did."""
    for folder, _, _ in committed_runs(case_label):
        return f"{rel(folder)}/"
    return None


WIDE_SHOWN = 4   # wide instructions a table shows (the kinds and the count say the rest)


def committed(case_label: str) -> str:
    """A committed GPU run's figures for one configuration beside the emulator's, and the wide
    shared-memory instructions of its SASS: the table notebooks show."""
    for folder, data, rows in committed_runs(case_label):
        p = data.get("provenance", {})
        lines = [f"{case_label} at {data['size']}^3, every block; Nsight Compute on {p.get('gpu', '?')} "
                 f"({p.get('date', '?')[:10]}) beside the emulator's trace ({rel(folder)}/):",
                 f"  {'metric':<28} {'GPU':>10} {'emulator':>10}  verdict"]
        lines += [f"  {r['metric']:<28} {r['gpu']:>10.0f} {r['emulator']:>10.0f}  {r['verdict']}" for r in rows]
        wide = data["wide_shared_instructions"].get(case_label, [])
        if wide:   # the kinds and a few examples: the whole list is in sass.txt.gz
            kinds = sorted({w.split("*/", 1)[-1].split()[0] for w in wide})
            lines.append(f"  wide shared-memory instructions in its SASS: {len(wide)} ({', '.join(kinds)}), the first "
                         f"{min(len(wide), WIDE_SHOWN)}:")
            lines += ["    " + " ".join(w.split(";")[0].split("*/", 1)[-1].split()) for w in wide[:WIDE_SHOWN]]
        return "\n".join(lines)
    return f"No Nsight Compute run of {case_label} is committed yet (tools/ncu_run.sh on a GPU)."


def read_sass(folder) -> str:
    """A run's SASS: sass.txt, or sass.txt.gz (gzip keeps a whole run's disassembly small)."""
    import gzip
    from pathlib import Path
    folder = Path(folder)
    if (folder / "sass.txt").exists():
        return (folder / "sass.txt").read_text()
    return gzip.decompress((folder / "sass.txt.gz").read_bytes()).decode()

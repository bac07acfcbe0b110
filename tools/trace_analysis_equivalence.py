"""Records what the trace analysis (helpers/measure/memory.py and the modules that read its requests) says about
many traces, so that a rewrite of it can be shown to say exactly the same.

    # 1. traces: every registered kernel configuration traced in full at 64^3 (what the Nsight Compute
    #    comparison traces), and every trace the race, Hopper and write-it tests capture (their racy and wrong
    #    kernels)
    python -m tools.trace_analysis_equivalence capture DIR
    # 2. what the analysis says about each of them, and the Nsight Compute comparison of every committed run
    python -m tools.trace_analysis_equivalence record DIR before
    #    ... change the analysis ...
    python -m tools.trace_analysis_equivalence record DIR after
    # 3. the two must be identical
    python -m tools.trace_analysis_equivalence compare DIR before after

Each trace is pickled once (DIR/traces/), so the records compare the analysis on the very same records. The
comparison is exact: every request's lanes and offsets, every bank report and sector count, the per-line tables
(bit for bit, column order included), the races and unwritten reads at several limits, in order.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from helpers.core.paths import ROOT

KEEP_VARIABLE = "TBT_KEEP_TRACES"   # the pytest plugin below pickles every trace captured into this folder
TESTS = ["tests/stages/test_09_races.py", "tests/course/test_write_it.py", "tests/course/test_write_it_04_06.py",
         "tests/course/test_write_it_07_10.py", "tests/measure/test_memory.py",
         # the clocks' races: TMA copies, mbarriers, wgmma and the async proxy (Race.cause), in kernels with
         # mbarriers and without (where they stand beside the barrier intervals' races)
         "tests/emulator/test_async_copy.py", "tests/emulator/test_hopper_mutations.py", "tests/stages/test_12.py",
         "tests/course/test_write_it_11_12.py"]


@contextlib.contextmanager
def keeping_traces(folder: Path):
    """Every Trace that helpers.measure.trace.capture returns meanwhile is pickled into `folder`."""
    from helpers.measure import trace
    folder.mkdir(parents=True, exist_ok=True)
    original = trace.capture

    def capture(*args, **kwargs):
        t = original(*args, **kwargs)
        data = pickle.dumps(t)
        name = f"{t.kernel.split('<')[0]}-{hashlib.sha256(data).hexdigest()[:16]}.pkl"
        (folder / name).write_bytes(data)
        return t

    trace.capture = capture
    try:
        yield
    finally:
        trace.capture = original


# ---- pytest plugin: `pytest -p tools.trace_analysis_equivalence` with TBT_KEEP_TRACES set ----------------
_kept = None


def pytest_configure(config):
    global _kept
    if os.environ.get(KEEP_VARIABLE):
        _kept = keeping_traces(Path(os.environ[KEEP_VARIABLE]))
        _kept.__enter__()


def pytest_unconfigure(config):
    if _kept is not None:
        _kept.__exit__(None, None, None)


# ---- capture ------------------------------------------------------------------------------------------
def capture(folder: Path) -> None:
    from helpers.core import paths
    from helpers.measure import ncu
    from helpers.run import backend
    backend.use("cpu")
    traces = folder / "traces"
    with keeping_traces(traces):
        for case in ncu.cases():        # every registered configuration, every block at 64^3
            try:
                ncu.emulator_counts(case)
            except Exception as e:        # noqa: BLE001 - a configuration the emulator cannot trace is reported
                print(f"not traced: {case.label}: {e}", file=sys.stderr)
    env = dict(os.environ, **{KEEP_VARIABLE: str(traces)})
    subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "tools.trace_analysis_equivalence",
                    *TESTS], cwd=ROOT, env=env, check=False)
    print(f"{len(list(traces.glob('*.pkl')))} traces in {traces}; committed Nsight Compute runs: "
          f"{len(list(paths.RESULTS_DIR.glob('ncu_*/ncu.csv')))}")


# ---- record -------------------------------------------------------------------------------------------
def _frame(df) -> tuple:
    return (list(df.columns), [list(map(str, df.dtypes))], df.to_dict("split")["data"])


class Digest:
    """A running SHA-256 over values as their repr (types count: 1, 1.0 and np.int64(1) differ), with a count:
    hundreds of thousands of requests compared exactly without keeping them."""

    def __init__(self):
        self.h, self.n = hashlib.sha256(), 0

    def add(self, *values) -> None:
        for v in values:
            self.h.update((repr(v.tolist()) + str(v.dtype) if isinstance(v, np.ndarray) else repr(v)).encode())
            self.h.update(b"|")
        self.n += 1

    def value(self) -> str:
        return f"{self.n} items, sha256 {self.h.hexdigest()[:24]}"


def outputs(t) -> dict:
    """Everything the analysis says about one trace, as plain, comparable values (digests where they are many)."""
    from helpers.measure import accesses, memory, ncu, per_line
    out = {}
    reqs = memory.requests(t)
    d, banks, sectors = Digest(), Digest(), Digest()
    for q in reqs:
        d.add(q.block, q.warp, q.epoch, q.line, q.space, q.op, q.size, q.array, q.lanes, q.offsets)
        if q.space == "global":
            sectors.add(memory.sectors(q))
        else:
            b = memory.banks(q)
            banks.add(b.ways, b.wavefronts, b.ideal, b.excess, b.banks, b.conflicted)
    out["requests"], out["banks"], out["sectors"] = d.value(), banks.value(), sectors.value()
    for space in ("global", "shared", "dynamic shared"):
        d = Digest()
        for q in memory.requests(t, space):
            d.add(q.block, q.warp, q.line, q.op, q.lanes, q.offsets)
        out[f"requests {space}"] = d.value()
    for block in sorted(set(int(b) for b in t.blocks))[:2]:
        for warp in (0, 1):
            d = Digest()
            for q in memory.requests(t, block=block, warp=warp) if _has_filters(memory) else \
                    [q for q in reqs if q.block == block and q.warp == warp]:
                d.add(q.block, q.warp, q.epoch, q.line, q.space, q.op, q.size, q.array, q.lanes, q.offsets)
            out[f"requests of block {block} warp {warp}"] = d.value()
    out["per_line"] = _frame(memory.per_line(t))
    view = per_line.per_line_view(t)
    out["per_line_view"] = (view.title, view.rows, view.text(), view.text(all_lines=True))
    d = Digest()
    d.add(*_frame(memory.shared_words(t)))
    out["shared_words"] = d.value()
    for limit in (1, 3, 20, 200):
        out[f"races {limit}"] = [repr(r) for r in memory.races(t, limit)]
        out[f"unwritten {limit}"] = [repr(r) for r in memory.unwritten_reads(t, limit)]
    for space in ("global", "shared"):
        for warp in (0, 1):
            out[f"warp_accesses {space} {warp}"] = [repr(a) for a in accesses.warp_accesses(t, warp, space=space)]
    counts = {}
    for q in memory.requests(ncu._without_async_copy_stores(t)):   # noqa: SLF001 - what ncu counts
        kind = "load" if q.op == "load" else "store"
        if q.space == "global":
            counts[f"global {kind} requests"] = counts.get(f"global {kind} requests", 0) + 1
            counts[f"global {kind} sectors"] = counts.get(f"global {kind} sectors", 0) + memory.sectors(q)[0]
        else:
            b = memory.banks(q)
            for what, n in (("requests", 1), ("wavefronts", b.wavefronts), ("bank conflicts", b.excess)):
                counts[f"shared {kind} {what}"] = counts.get(f"shared {kind} {what}", 0) + n
    out["ncu counts"] = counts
    return out


def _has_filters(memory) -> bool:
    import inspect
    return "warp" in inspect.signature(memory.requests).parameters


def record(folder: Path, name: str) -> None:
    from helpers.core import paths
    from helpers.measure import ncu
    from helpers.run import backend
    backend.use("cpu")
    result, timings = {}, {}
    for path in sorted((folder / "traces").glob("*.pkl")):
        t = pickle.loads(path.read_bytes())
        start = time.perf_counter()
        result[path.name] = outputs(t)
        timings[path.name] = time.perf_counter() - start
    for csv_path in sorted(paths.RESULTS_DIR.glob("ncu_*/ncu.csv")):
        run = csv_path.parent
        start = time.perf_counter()
        result[f"ncu {run.name}"] = ncu.compare(csv_path.read_text(), ncu.read_sass(run), (run / "ncu.log").read_text())
        timings[f"ncu {run.name}"] = time.perf_counter() - start
    (folder / f"{name}.pkl").write_bytes(pickle.dumps(result))
    print(f"{len(result)} records in {folder / (name + '.pkl')}; analysis {sum(timings.values()):.1f} s, slowest: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(timings.items(), key=lambda kv: -kv[1])[:5]))


def _comparable(value) -> str:
    """repr, with the kernel file in a per-line view's title as `<kernel file>`: the title names it relative to the
    checkout that ran the record (records made from two checkouts name it differently), the rows do not."""
    return re.sub(r" in \S+\.cu: block", " in <kernel file>: block", repr(value))


def compare(folder: Path, a: str, b: str) -> int:
    before = pickle.loads((folder / f"{a}.pkl").read_bytes())
    after = pickle.loads((folder / f"{b}.pkl").read_bytes())
    bad = sorted(set(before) ^ set(after))
    for key in sorted(set(before) & set(after)):
        for field in sorted(set(before[key]) | set(after[key])):
            if _comparable(before[key].get(field)) != _comparable(after[key].get(field)):   # NaN equals NaN, types count
                bad.append(f"{key}: {field}")
    checked = sum(len(v) for v in before.values())
    print(f"{len(before)} traces and runs, {checked} outputs compared: "
          + ("identical" if not bad else f"{len(bad)} differ:\n  " + "\n  ".join(bad[:50])))
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("capture", "record", "compare"):
        print(__doc__)
        return 2
    folder = Path(argv[1])
    if argv[0] == "capture":
        capture(folder)
        return 0
    if argv[0] == "record":
        record(folder, argv[2])
        return 0
    return compare(folder, argv[2], argv[3])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

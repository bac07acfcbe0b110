"""Measures what grading one student's notebook costs on this machine: wall time and the peak memory of the whole
grading (the grader, the sandboxed Jupyter kernel, the emulator's compiler and runs, summed over every process),
and the CPU time of those processes (sampled every 0.1 s), per notebook, for TEACHING.md's table and what fits
Gradescope's defaults (768 MB, 10 minutes, half a vCPU).

Each notebook is graded as an honest student hands it in (every answer right, the course's kernel in its
`%%kernel` cell): `python -m helpers teacher grade` in a process of its own, one notebook at a time.

    python tools/grading_timings.py [NOTEBOOK ...] [--all-cells] [--no-sandbox]

Writes $OUT/grading_timings.json when OUT is set; prints a table. Needs the write-it solutions (a teacher's tree).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __spec__ is None:  # run by path, not as python -m tools.grading_timings: helpers/ is beside tools/
    sys.path.insert(0, str(Path(sys.path[0]).parent))

import nbformat  # noqa: E402

from helpers.core.paths import NOTEBOOKS, ROOT  # noqa: E402
from helpers.teach import copies  # noqa: E402


def honest_copy(path: Path, dest: Path) -> Path:
    nb = copies.teacher_copy(nbformat.read(path, as_version=4), machine="grading_timings")
    done = set()
    for cell in nb.cells:
        words = cell.source.split("\n", 1)[0].split() if cell.cell_type == "code" else []
        if words[:1] == ["%%kernel"] and len(words) == 2 and words[1] not in done:
            solution = ROOT / "helpers" / "course" / "write_it" / "solutions" / f"{words[1]}.cu"
            if solution.is_file():
                cell.source = f"%%kernel {words[1]}\n{solution.read_text()}"
                done.add(words[1])
    out = dest / path.name
    nbformat.write(nb, out)
    return out


def _tree(root_pid: int) -> dict[int, tuple[int, float]]:
    """{pid: (bytes resident, CPU seconds so far)} of root_pid and every process below it."""
    parents, usage = {}, {}
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
                fields = stat[stat.rindex(")") + 2:].split()
                parents[int(d)] = int(fields[1])
                usage[int(d)] = (int(fields[21]) * page, (int(fields[11]) + int(fields[12])) / tick)
            except (OSError, ValueError, IndexError):
                continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [root_pid]
    while todo:
        pid = todo.pop()
        if pid in usage:
            found[pid] = usage[pid]
        todo += children.get(pid, [])
    return found


def measure(path: Path, all_cells: bool, no_sandbox: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "grade.json"
        cmd = [sys.executable, "-m", "helpers", "teacher", "grade", str(path), "--json", str(result),
               "--backend", "cpu"]
        cmd += ([] if all_cells else ["--exercises-only"]) + (["--no-sandbox"] if no_sandbox else [])
        start, peak, cpu_by_pid = time.perf_counter(), 0, {}
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stop = threading.Event()

        def poll():     # every 0.1 s: the tree's resident memory, and each process's CPU time so far
            nonlocal peak
            while not stop.is_set():
                tree = _tree(proc.pid)
                peak = max(peak, sum(rss for rss, _ in tree.values()))
                cpu_by_pid.update({pid: cpu for pid, (_, cpu) in tree.items()})
                stop.wait(0.1)
        t = threading.Thread(target=poll, daemon=True)
        t.start()
        _, err = proc.communicate()
        seconds = time.perf_counter() - start
        stop.set()
        t.join()
        cpu = sum(cpu_by_pid.values())      # as last seen: a process's last 0.1 s before it ended is missed
        grade = json.loads(result.read_text())[0] if result.is_file() else {}
    return {"notebook": path.name, "mode": "all cells" if all_cells else "setup and exercise cells",
            "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mib": round(peak / 2 ** 20),
            "returncode": proc.returncode,
            "counts": grade.get("counts"), "problem": grade.get("problem"), "stderr_tail": err[-300:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--all-cells", action="store_true", help="grade every cell (default: setup and Exercises)")
    ap.add_argument("--no-sandbox", action="store_true", help="without bubblewrap (where it cannot start)")
    args = ap.parse_args()
    notebooks = args.notebooks or [p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p.name[:2] >= "02"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nb in notebooks:
            rows.append(measure(honest_copy(Path(nb), Path(tmp)), args.all_cells, args.no_sandbox))
            print(json.dumps(rows[-1]), flush=True)
    provenance = {"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "command": " ".join(sys.argv), "load_average": os.getloadavg()}
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "grading_timings.json").write_text(json.dumps({**provenance, "rows": rows}, indent=1))
    print(f"\n{'notebook':<28} {'seconds':>8} {'CPU s':>7} {'peak MiB':>9}  counts")
    for r in rows:
        print(f"{r['notebook']:<28} {r['seconds']:>8} {r['cpu_seconds']:>7} {r['peak_mib']:>9}  {r['counts']}")
    total, cpu = sum(r["seconds"] for r in rows), sum(r["cpu_seconds"] for r in rows)
    print(f"\n{len(rows)} notebooks in {total:.0f} s, {cpu:.0f} CPU s: {3600 * len(rows) / total:.0f} per hour one "
          f"at a time, {3600 * len(rows) / cpu:.0f} per CPU-hour, on {os.cpu_count()} cores "
          f"(load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

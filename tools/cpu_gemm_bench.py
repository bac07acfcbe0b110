"""Stage 01 benchmark: every CPU version of helpers/course/cpu_gemm/versions.py against single-threaded OpenBLAS.

    .venv/bin/python -m tools.cpu_gemm_bench                  # 1024^3 and 512^3, writes results/cpu_gemm_<cpu>_<date>.json
    .venv/bin/python -m tools.cpu_gemm_bench --sizes 1024 --repeat 7 --out FILE
    .venv/bin/python -m tools.cpu_gemm_bench --figures        # only redraw figures/01_* from the committed results
    (.venv/bin/python tools/cpu_gemm_bench.py ... works too, as the tests run it)

What it records: the machine (CPU model, logical CPUs, caches, Python, NumPy, Numba, llvmlite,
the vector width Numba's code uses, the BLAS threadpoolctl reports with its kernel, the OpenBLAS
environment variables, the load average before and after, date, command), this core's ceilings
(FMA peak, one FMA chain, copy bandwidth in L1, L2 and DRAM), and per version and size the
median, quartiles and minimum of --repeat timed runs after one untimed warm-up, in rounds that
time every contestant once each (helpers.course.cpu_gemm.benchmark). Unless --no-256, it also times the
versions at the largest size in a second process with Numba's default vector width (LLVM's
256-bit preference on AVX-512 cores), to show what that choice costs.

OpenBLAS: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, set on some machines for old OpenBLAS builds,
slow a current NumPy down. This tool restarts itself without them (and records that it did), so
NumPy runs the kernel OpenBLAS picks for this CPU; the JSON names that kernel. Tests and CI keep
the variables as they are.
"""

from __future__ import annotations

import os
import sys

_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_MARK = "TBT_BENCH_UNSET"
# Run as a script only: a module imported by another program (a test) must not replace it.
if __name__ == "__main__" and any(v in os.environ for v in _UNSET):  # before NumPy loads OpenBLAS
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env[_MARK] = ";".join(f"{k}={os.environ[k]}" for k in _UNSET if k in os.environ)
    again = ["-m", __spec__.name] if __spec__ else sys.argv[:1]  # as it was started: as a module or by path
    os.execve(sys.executable, [sys.executable, *again, *sys.argv[1:]], env)

import argparse          # noqa: E402
import datetime as _dt   # noqa: E402
import json              # noqa: E402
import re                # noqa: E402
import subprocess        # noqa: E402
from pathlib import Path  # noqa: E402

if __spec__ is None:  # run by path, not as python -m tools.cpu_gemm_bench: helpers/ is beside tools/
    sys.path.insert(0, str(Path(sys.path[0]).parent))

from helpers.core import progress  # noqa: E402
from helpers.core.paths import RESULTS_DIR, ROOT  # noqa: E402
from helpers.course import cpu_gemm  # noqa: E402


def machine_slug(model: str) -> str:
    s = re.sub(r"\((r|tm)\)|\bcpu\b|@.*$", "", model.lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "cpu"


def default_out(model: str) -> Path:
    return RESULTS_DIR / f"cpu_gemm_{machine_slug(model)}_{_dt.date.today().isoformat()}.json"


def rows_with_default_vectors(size: int, repeat: int) -> dict:
    """The versions at size^3 in a child process whose Numba uses its default vector width."""
    import llvmlite.binding as ll
    env = dict(os.environ, NUMBA_CPU_FEATURES=ll.get_host_cpu_features().flatten())
    out = subprocess.run([sys.executable, __file__, "--sizes", str(size), "--repeat", str(repeat), "--stdout",
                          "--no-256", "--no-ceilings"], env=env, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    return {"numba_vector_bits": data["machine"]["numba_vector_bits"], "rows": data["rows"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 512], help="M = N = K values (default 1024 512)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per version and size (default 5)")
    p.add_argument("--out", type=Path, help="the JSON file (default results/cpu_gemm_<cpu>_<date>.json)")
    p.add_argument("--stdout", action="store_true", help="print the JSON instead of writing a file")
    p.add_argument("--no-256", action="store_true", help="skip the run with Numba's default vector width")
    p.add_argument("--no-ceilings", action="store_true", help="skip the FMA and bandwidth measurements")
    p.add_argument("--figures", action="store_true", help="only redraw figures/01_* from committed results")
    args = p.parse_args(argv)

    if args.figures:
        import matplotlib
        matplotlib.use("Agg")
        for path in cpu_gemm.draw_figures():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0

    log = (lambda *a: progress.write(*a, file=sys.stderr))   # lines above the progress bar of the rounds
    how = "python tools/cpu_gemm_bench.py" if __spec__ is None else "python -m tools.cpu_gemm_bench"
    command = f"{how} " + " ".join(argv if argv is not None else sys.argv[1:])
    load_before = os.getloadavg()
    m = cpu_gemm.machine(command.strip())
    m["openblas_env_unset_by_tool"] = os.environ.get(_MARK, "")
    log(f"{m['cpu']}: Numba code uses {m['numba_vector_bits']}-bit vectors; BLAS {m['blas']}")
    data = {"machine": m}
    if not args.no_ceilings:
        log("measuring the FMA peak and copy bandwidth ...")
        data["ceilings"] = cpu_gemm.measure_ceilings()
        log(json.dumps(data["ceilings"]))
    data["rows"] = cpu_gemm.benchmark(tuple(args.sizes), args.repeat, log=log)
    if not args.no_256 and m["numba_vector_bits"] == 512:
        log("the versions again with Numba's default vector width ...")
        data["default_vector_width"] = rows_with_default_vectors(max(args.sizes), max(3, args.repeat - 2))
    m["load_average_before_after"] = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    text = json.dumps(data, indent=1)
    if args.stdout:
        print(text)
        return 0
    out = args.out or default_out(m["cpu"])
    out.write_text(text + "\n")
    log(f"wrote {out}")
    data["file"] = str(out)
    for n in args.sizes:
        print(cpu_gemm.results_table(data, n))
    print(cpu_gemm.bar_verdict(data, max(args.sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

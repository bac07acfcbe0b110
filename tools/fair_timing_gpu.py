"""On a GPU: issue 32's timing bar. Exercise 03's write-it check run on the held-out-style cheat
tests/kernels/cheat_03_skips_repeats.cu (a block launched again on the same arrays returns at once) and on the
course's solution; then the cheat timed the old way (one C for every launch, as bench.time_call did) beside
the fair way (helpers/measure/fair_timing.py), to show what the old way reported.

    OUT=/some/folder python -m tools.fair_timing_gpu        # about a minute on an H100; writes $OUT/fair_timing.json
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from helpers.core.paths import ROOT
from helpers.course import write_it
from helpers.measure import bench, fair_timing
from helpers.run import backend
from helpers.run.gemm import launch_args
from helpers.run.kernel_loader import load_kernel

CMD = "OUT=... python -m tools.fair_timing_gpu"
CHEAT = ROOT / "tests" / "kernels" / "cheat_03_skips_repeats.cu"
SOLUTION = ROOT / "helpers" / "course" / "write_it" / "solutions" / "03.cu"
SIZE = 2048


def _verdict(path: Path) -> dict:
    v = write_it.check("03", path)
    return {"file": str(path.relative_to(ROOT)), "ok": v.ok, "failed_step": v.failed_step, "cause": v.cause,
            "last_line": v.last_line(), "numbers": v.numbers,
            "steps": [{"step": s.name, "ok": s.ok, "lines": list(s.lines)} for s in v.steps]}


def _old_and_fair(path: Path) -> dict:
    """The kernel timed on one C for every launch (what the check did before), and the fair way."""
    ex = write_it.exercise("03")
    kernel = load_kernel(path, ex.kernel)
    A, B, C = bench.device_operands(SIZE, SIZE, SIZE)
    run = kernel.timed_launcher(ex.launch.grid(SIZE, SIZE, SIZE), ex.launch.block,
                                launch_args(SIZE, SIZE, SIZE, 1.0, A, B, 0.0, C))
    old = bench.time_call(run, n_repeat=20)
    limit = fair_timing.speed_of_light(backend.current().device_info())
    row = {"old_way_median_ms": old.median_ms, "old_way_tflops": old.tflops(SIZE, SIZE, SIZE),
           "speed_of_light_tflops": limit.tflops, "speed_of_light_source": limit.source}
    try:
        fair = fair_timing.time_fresh(run, *fair_timing.gpu_parts(A, B, C), n_repeat=20)
        fair_timing.check_speed_of_light(fair, SIZE, SIZE, SIZE, limit)
        row.update(fair_median_ms=fair.median_ms, fair_tflops=fair.tflops(SIZE, SIZE, SIZE), refused=None)
    except fair_timing.UnfairTimingError as e:
        row.update(fair_median_ms=None, fair_tflops=None, refused=str(e))
    return row


def main() -> int:
    out = Path(os.environ.get("OUT") or sys.exit("set OUT to the folder the results go to"))
    out.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    result = {"provenance": bench.provenance(CMD), "size": SIZE,
              "cheat": {"check": _verdict(CHEAT), "timing": _old_and_fair(CHEAT)},
              "solution": ({"check": _verdict(SOLUTION), "timing": _old_and_fair(SOLUTION)}
                           if SOLUTION.is_file() else None)}
    (out / "fair_timing.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"{'kernel':<10} {'check':<8} {'failed at':<10} {'old way TFLOP/s':>16} {'fair TFLOP/s':>13} {'peak':>7}")
    for name in ("cheat", "solution"):
        r = result[name]
        if r is None:
            continue
        t = r["timing"]
        fair = f"{t['fair_tflops']:.2f}" if t["fair_tflops"] is not None else "refused"
        print(f"{name:<10} {'PASSED' if r['check']['ok'] else 'not ok':<8} {str(r['check']['failed_step']):<10} "
              f"{t['old_way_tflops']:>16.2f} {fair:>13} {t['speed_of_light_tflops']:>7.1f}")
    print(f"wrote {out / 'fair_timing.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The write-it exercises on a GPU (issue 30), through the course's own code, into one JSON file under $OUT:

    OUT=out python3 -m tools.write_it_gpu [--size 2048] [--only 05,11,12]

- every exercise's solution checked on the GPU: correct on the shape catalogue (11 twice per shape, the same bits
  wanted), safe and its lesson from the emulator's trace, and timed at size³ beside the course's kernel (at the
  exercise's tiles) and cuBLAS (write_it.check); exercise 12 only where the GPU is sm_90 (TMA);
- the learner's ladder (write_it.ladder) with every solution saved as the learner's kernel, in a fresh folder;
- side by side (write_it.side_by_side) of exercise 05, whose solution ptxas gives more registers than the
  course's kernel: the report of the instruments' reasons where it is slower.
Each result carries the check's last line; provenance (GPU, driver, CuPy, date, command) at the top. A short
table at the end of stdout. About 2 minutes on an H100.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=2048, help="M = N = K of the timings (default 2048)")
    p.add_argument("--only", help="exercise ids, e.g. 05,11,12 (default: all)")
    p.add_argument("--dry-run", action="store_true", help="on the CPU emulator: everything but the times")
    args = p.parse_args(argv)
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    mine = Path(tempfile.mkdtemp(prefix="tbt_my_kernels_"))
    os.environ["TBT_MY_KERNELS"] = str(mine)          # before the course is imported: the learner's folder

    from helpers.course import write_it
    from helpers.measure import bench
    from helpers.run import backend
    backend.use("cpu" if args.dry_run else "gpu")
    ids = args.only.split(",") if args.only else [ex.id for ex in write_it.exercises()]
    command = " ".join(["python3", "-m", "tools.write_it_gpu", *(argv if argv is not None else sys.argv[1:])])
    result = {"provenance": {"backend": "the CPU emulator", "command": command} if args.dry_run else
              bench.provenance(command),
              "size": args.size, "checks": [], "ladder": None, "side_by_side_05": None}
    for ex_id in ids:
        ex = write_it.exercise(ex_id)
        t0 = time.time()
        v = write_it.check(ex.id, ex.solution_path)
        result["checks"].append({"exercise": ex.id, "status": v.status, "verdict": v.last_line(),
                                 "steps": [[s.name, s.ok, list(s.lines)] for s in v.steps],
                                 "numbers": {k: x for k, x in v.numbers.items() if isinstance(x, (int, float, str))},
                                 "seconds": round(time.time() - t0, 1)})
        print(v.last_line(), flush=True)
        shutil.copy(ex.solution_path, mine / f"{ex.id}.cu")
    ladder = write_it.ladder(args.size, ids=ids)
    result["ladder"] = ladder.as_dict()
    if "05" in ids:
        result["side_by_side_05"] = str(write_it.side_by_side("05", args.size))
    path = out_dir / "write_it_gpu.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    print()
    print(ladder.text())
    print(f"\nwritten: {path}")
    shutil.rmtree(mine, ignore_errors=True)
    return 0 if all(c["status"] == "passed" for c in result["checks"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())

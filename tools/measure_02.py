"""Stage 02's committed GPU measurements: both kernels and cuBLAS at 256..4096, and the block-shape
sweep of 02_naive_coalesced at 4096^3 (the shapes of the committed run), in one session.
    python3 -m tools.measure_02 OUT.json"""
import json
import sys
from pathlib import Path

from helpers.core import progress, stages
from helpers.core.paths import RESULTS_DIR
from helpers.measure import bench, gpu_results
from helpers.run import backend
from helpers.views import widgets

backend.use("gpu")
CMD = "python3 -m tools.measure_02 OUT.json"
old = json.loads((RESULTS_DIR / "02_naive_h200_2026-11-22.json").read_text())
shapes = [(r["variant"], r["block_x"], r["block_y"]) for r in old["block_shape_sweep"]["rows"]]
rows = gpu_results.measure(stages.stage("02").variants, sizes=(256, 512, 1024, 2048, 4096), n_warmup=5, n_repeat=30)
sweep = []
for name, bx, by in progress.bar(shapes, desc="block shapes at 4096^3", unit="shape"):
    r = widgets.run_block_shape(name, bx, by, time_size=4096)
    row = {k: v for k, v in old["block_shape_sweep"]["rows"][len(sweep)].items() if k != "gflops"}
    row["gflops"] = round(r.gflops) if getattr(r, "gflops", None) else None
    sweep.append(row)
out = {"provenance": bench.provenance(CMD), "rows": rows,
       "block_shape_sweep": {"note": "helpers.views.widgets.run_block_shape(variant, bx, by, time_size=4096), same session "
                                     "and GPU as provenance", "rows": sweep}}
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
for r in rows:
    print(r["variant"], r["M"], round(r["median_ms"], 4), round(r["tflops"], 2))
print(sweep[:3])

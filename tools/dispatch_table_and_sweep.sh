#!/usr/bin/env bash
# On an H100 or H200, from the repository root, one command of at most about 8 minutes: this GPU's own FP32 dispatch
# table, then the library sweep that uses it, then the GPU test of every TF32 option.
#   tools/dispatch_table_and_sweep.sh OUT HELD_OUT_SHAPES      e.g. tools/dispatch_table_and_sweep.sh "$OUT" 1234x567x8901
# -> OUT/provenance.txt
#    OUT/dispatch_<gpu>_<date>.json  python -m helpers dispatch-table: each FP32 tile's rates at 4096^3 and the fastest
#    OUT/dispatch_table.txt          candidate at the table's shapes, on this GPU (written to results/ first, where the
#                                    dispatcher of the sweep below finds it: a GPU's own table wins over another's)
#    OUT/sweep.json, OUT/sweep.txt   python -m helpers sweep --held-out HELD_OUT_SHAPES (as tools/sgemm_library_gpu.sh)
#    OUT/pytest.txt                  tests/run/test_sgemm_gpu.py -k tf32_option: every TF32 option right on this GPU
# A step that runs out of its time is cut and the next one runs (the sweep without a table of this GPU uses the
# newest committed one, scaled, and says which in sweep.json's "table").
set -uo pipefail
out=${1:?usage: tools/dispatch_table_and_sweep.sh OUT HELD_OUT_SHAPES}
held=${2:?usage: tools/dispatch_table_and_sweep.sh OUT HELD_OUT_SHAPES}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  python3 -c 'import sys, cupy, numpy; print("python", sys.version.split()[0], "| cupy", cupy.__version__, "| numpy", numpy.__version__, "| CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "command: tools/dispatch_table_and_sweep.sh OUT ${held}"
} > "$out/provenance.txt" 2>&1
cat "$out/provenance.txt"
timeout 120 python3 -m helpers dispatch-table 2>&1 | tee "$out/dispatch_table.txt" | tail -16
find results -maxdepth 1 -name 'dispatch_*.json' -newer "$out/provenance.txt" -exec cp {} "$out/" \;
timeout 330 python3 -m helpers sweep --held-out "$held" --out "$out/sweep.json" 2>&1 | tee "$out/sweep.txt" | tail -45
echo "command: python3 -m pytest -q -rs -p no:randomly -n 0 tests/run/test_sgemm_gpu.py -k tf32_option" > "$out/pytest.txt"
timeout 45 python3 -m pytest -q -rs -p no:randomly -n 0 tests/run/test_sgemm_gpu.py -k tf32_option 2>&1 \
  | tee -a "$out/pytest.txt" | tail -6

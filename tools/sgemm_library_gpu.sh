#!/usr/bin/env bash
# On a GPU machine (H100 or H200), from the repository root, in one command: issue 31's measurement of helpers.sgemm
# as a library, in about 5 minutes (10 at most: each step has its own time limit).
#   tools/sgemm_library_gpu.sh OUT [HELD_OUT_SHAPES]      e.g. tools/sgemm_library_gpu.sh "$OUT" 1234x567x8901,3000x200x7000
# -> OUT/provenance.txt
#    OUT/sweep.json        python -m helpers sweep --held-out HELD_OUT_SHAPES: sgemm FP32 and TF32, beta 0 and 1,
#    OUT/sweep.txt         beside cuBLAS, each verified; the table and issue 31's targets at the end of sweep.txt
#    OUT/ncu_misses.csv    Nsight Compute on the (at most 3) calls furthest below 90 % of cuBLAS, cuBLAS beside each
#    OUT/ncu_misses.log
#    OUT/pytest.txt        the library's GPU tests (tests/run/test_sgemm_gpu.py, tests/run/test_dispatch_gpu.py)
set -uo pipefail
out=${1:?usage: tools/sgemm_library_gpu.sh OUT [HELD_OUT_SHAPES]}
held=${2:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  python3 -c 'import sys, cupy, numpy; print("python", sys.version.split()[0], "| cupy", cupy.__version__, "| numpy", numpy.__version__, "| CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
  echo "command: tools/sgemm_library_gpu.sh OUT ${held}"
} > "$out/provenance.txt" 2>&1
cat "$out/provenance.txt"
# the measurement first, then Nsight Compute on what it missed, then the GPU tests; each within its time, the whole
# within the 10 minutes of one device call
timeout 330 python3 -m helpers sweep ${held:+--held-out "$held"} --out "$out/sweep.json" 2>&1 | tee "$out/sweep.txt" | tail -60
timeout 120 python3 -m tools.ncu_sgemm misses "$out/sweep.json" "$out" --most 3 2>&1 | tail -6
echo "command: python3 -m pytest -q -rs -p no:randomly -n 0 tests/run/test_sgemm_gpu.py tests/run/test_dispatch_gpu.py" > "$out/pytest.txt"
timeout 120 python3 -m pytest -q -rs -p no:randomly -n 0 tests/run/test_sgemm_gpu.py tests/run/test_dispatch_gpu.py 2>&1 \
  | tee -a "$out/pytest.txt" | tail -8

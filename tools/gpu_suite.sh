#!/usr/bin/env bash
# On a GPU machine: the whole test suite (GPU tests executed, not skipped) and the ladder,
# with their provenance, written to the folder given (default results/gpu).
#   tools/gpu_suite.sh results/gpu_h100_2026-11-22 [pytest args...]    (from the repository root)
set -uo pipefail
out=${1:-results/gpu}
shift || true
mkdir -p "$out"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import sys, cupy, numpy; print("python", sys.version.split()[0], "| cupy", cupy.__version__, "| numpy", numpy.__version__, "| CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
  g++ --version | head -1
} > "$out/provenance.txt" 2>&1
cat "$out/provenance.txt"
echo "command: python3 -m pytest -rs $*" > "$out/pytest.txt"
python3 -m pytest -rs "$@" 2>&1 | tee -a "$out/pytest.txt" | tail -40
echo "command: python3 -m helpers ladder --size 4096 --json ladder.json" > "$out/ladder.txt"
python3 -m helpers ladder --size 4096 --json "$out/ladder.json" 2>&1 | tee -a "$out/ladder.txt"
echo "measured ceilings (cuBLAS FP32 at 4096^3, a 1 GiB device copy):"
python3 -c "import sys; from helpers.measure import roofline; print(roofline.measure_ceilings(save_to=sys.argv[1]))" "$out/ceilings.json" 2>&1 | tail -3

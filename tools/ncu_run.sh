#!/usr/bin/env bash
# On a GPU machine: profile one launch of every registered kernel configuration with Nsight
# Compute, and disassemble the kernels NVRTC built, into the folder given.
#   tools/ncu_run.sh OUT [VARIANT ...]  ->  OUT/ncu.csv, OUT/sass.txt.gz, OUT/provenance.json
# (from the repository root: python3 -m helpers needs it on the path)
# With variant names (10_wgmma ...), only their configurations.
set -uo pipefail
out=${1:?usage: tools/ncu_run.sh OUT [VARIANT ...]}
shift
mkdir -p "$out"
metrics=$(python3 -c 'from helpers.measure.ncu import METRICS; print(",".join(METRICS.values()))')
ncu --clock-control none --csv --metrics "$metrics" --kernel-name regex:sgemm \
    python3 -m helpers ncu launch "$@" > "$out/ncu.csv" 2> "$out/ncu.log"
python3 -m helpers ncu sass "$@" | gzip -9 > "$out/sass.txt.gz"
python3 - "$out/provenance.json" "$@" <<'PY'
import json, subprocess, sys
from helpers.measure import bench
from helpers.run import backend
backend.use("gpu")
p = bench.provenance(" ".join(["tools/ncu_run.sh OUT", *sys.argv[2:]]))
p["ncu"] = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
json.dump(p, open(sys.argv[1], "w"), indent=1)
PY
tail -3 "$out/ncu.log"; wc -l "$out/ncu.csv"; ls -l "$out/sass.txt.gz"

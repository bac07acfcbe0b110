#!/usr/bin/env bash
# On a GPU: Nsight Compute on the launches of tools/experiments/NAME.py (default ncu_10: stage 10's wmma and wgmma, 09
# and cuBLAS FP32 and TF32; ncu_12: stage 12, 10_wgmma and cuBLAS TF32) at 4096^3, into the folder given.
#   tools/experiments/ncu_10.sh OUT [NAME]  ->  OUT/NAME_sections.csv, OUT/NAME_metrics.csv, OUT/tensor_metrics.txt, logs
# (from the repository root: python3 -m tools.experiments.NAME needs it on the path)
set -uo pipefail
out=${1:?usage: tools/experiments/ncu_10.sh OUT [NAME]}
name=${2:-ncu_10}
mkdir -p "$out"
ncu --query-metrics --chip gh100 2>&1 | grep -i -E "tensor_op|gmma|hmma" > "$out/tensor_metrics.txt"
# Sections only: names that exist in every recent ncu
ncu --clock-control none --csv --page details --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    python3 -m tools.experiments.$name > "$out/${name}_sections.csv" 2> "$out/${name}_sections.log"
# Tensor pipes and shared-memory conflicts (a metric this ncu lacks fails only this run)
metrics=$(grep -o -E "sm__pipe_tensor_op_(hmma|gmma)_cycles_active\b|sm__inst_executed_pipe_tensor_op_(hmma|gmma)\b" \
          "$out/tensor_metrics.txt" | sort -u | sed -e 's/_cycles_active$/_cycles_active.avg.pct_of_peak_sustained_active/' \
          -e 's/pipe_tensor_op_\(hmma\|gmma\)$/pipe_tensor_op_\1.sum/' | paste -sd, -)
ncu --clock-control none --csv --metrics "gpu__time_duration.sum,launch__registers_per_thread,${metrics:+$metrics,}l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum" \
    python3 -m tools.experiments.$name > "$out/${name}_metrics.csv" 2> "$out/${name}_metrics.log"
tail -n 3 "$out"/*.log; wc -l "$out"/*.csv

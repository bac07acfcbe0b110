"""Stage 10's two warp-level steps under Nsight Compute at 4096^3: one launch each of 10_tensor_cores (wmma) and
10_mma_sync (mma.sync with the fragment layout in the kernel's hands), both at their shared default (ROUND = 1), so
that ncu says how busy each keeps the tensor pipe, how many shared loads each issues, and where its warps stall.

    on a GPU, from the repository root:  tools/experiments/ncu_10.sh OUT ncu_10_mma

Made the ncu_10_mma_*.csv of results/stage_10_h200_2026-11-27/.
"""

from __future__ import annotations

from helpers.core import stages
from helpers.measure import bench
from helpers.run import backend
from tools.experiments.ncu_10 import N, launch_once


def main() -> None:
    backend.use("gpu")
    A, B, C = bench.device_operands(N, N, N, seed=1)
    launch_once([(v, v.default) for v in map(stages.variant, ("10_tensor_cores", "10_mma_sync"))], A, B, C)


if __name__ == "__main__":
    main()

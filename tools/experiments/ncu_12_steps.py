"""Stage 12's steps past the stage under Nsight Compute at 4096³: one launch each of 12_warp_specialized at its
default and with EPILOGUE = 1, PINGPONG = 1 and CLUSTER = 2 (tools/measure_12_steps.py times them), and cuBLAS TF32,
so that ncu can say how busy each keeps the tensor pipe and the L2, and how many cycles each takes.

    on an H100 or H200, from the repository root:  tools/experiments/ncu_10.sh OUT ncu_12_steps
"""

from __future__ import annotations

import dataclasses

from helpers.core import stages
from helpers.run import backend
from tools.experiments.ncu_12 import launch_each_then_cublas


def main() -> None:
    backend.use("gpu")
    ws = stages.variant("12_warp_specialized")
    steps = [dataclasses.replace(ws.default, **{k: v}) for k, v in (("EPILOGUE", 1), ("PINGPONG", 1), ("CLUSTER", 2))]
    launch_each_then_cublas([(ws, c) for c in (ws.default, *steps)])


if __name__ == "__main__":
    main()

"""Why 12_warp_specialized with CLUSTER = 2 ran at half the stage's speed (results/stage_12_h100_2026-11-28_steps/):
how many clusters of two of it can be resident at once (the driver's cuOccupancyMaxActiveClusters), against the 66
its persistent grid of 132 blocks assumes, and its time at 4096³ for persistent grids of fewer clusters and for a
block per tile (PERSISTENT = 0), beside the stage's kernel (CLUSTER = 1), each launch verified first.

    on an H100 or H200, from the repository root:  OUT=some/folder python -m tools.experiments.cluster_grid

Writes $OUT/cluster_grid.json and prints a table.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
from pathlib import Path

import numpy as np

from helpers.core import stages
from helpers.measure import bench, verify
from helpers.run import backend, gemm

V12 = stages.variant("12_warp_specialized")
N = 4096


class LaunchConfig(ctypes.Structure):  # the driver's CUlaunchConfig
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


def function_pointer(launch) -> int:
    """The CUfunction of a Launch's kernel (CuPy's Function or RawKernel)."""
    compiled = launch.kernel._compiled
    fn = compiled.get_function(launch.kernel.name_expression) if hasattr(compiled, "get_function") else compiled
    for path in (("ptr",), ("kernel", "ptr"), ("_kernel", "ptr")):
        obj = fn
        try:
            for p in path:
                obj = getattr(obj, p)
            return int(obj)
        except AttributeError:
            continue
    raise RuntimeError(f"no CUfunction in {fn!r}")


def max_active_clusters(launch) -> dict:
    cuda = ctypes.CDLL("libcuda.so.1")
    cfg = LaunchConfig(launch.grid[0], 1, 1, launch.block[0], 1, 1, launch.shared_mem, None, None, 0)
    n = ctypes.c_int(-1)
    err = cuda.cuOccupancyMaxActiveClusters(ctypes.byref(n), ctypes.c_void_p(function_pointer(launch)),
                                            ctypes.byref(cfg))
    return {"cuda_error": int(err), "max_active_clusters": n.value}


def main() -> None:
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    import cupy as cp
    data = {"provenance": bench.provenance("OUT=... python -m tools.experiments.cluster_grid"), "rows": []}
    A, B, _ = bench.device_operands(N, N, N, seed=1)
    host_a, host_b = A[:64].get().astype(np.float64), B.get().astype(np.float64)

    def timed(label, cfg, grid=None):
        C = cp.full((N, N), verify.POISON, cp.float32)
        steps = gemm.launches(V12, cfg, N, N, N, 1.0, A, B, 0.0, C)
        if grid is not None:
            steps = [dataclasses.replace(steps[0], grid=(grid, 1, 1)), *steps[1:]]
        for s in steps:
            s()
        cp.cuda.Device().synchronize()
        err = float(np.max(np.abs(C[:64].get() - host_a @ host_b)))
        t = bench.time_call(lambda: [s.timed()() for s in steps], n_warmup=10, n_repeat=100)
        row = {"what": label, "config": cfg.label(), "grid": steps[0].grid[0], "max_abs_error_first_64_rows": err,
               **t.row(N, N, N)}
        if cfg.CLUSTER > 1:
            row.update(max_active_clusters(steps[0]))
        data["rows"].append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)

    stage = V12.default
    cluster = dataclasses.replace(stage, CLUSTER=2)
    timed("stage's kernel, persistent", stage)
    timed("stage's kernel, a block per tile", dataclasses.replace(stage, PERSISTENT=0))
    timed("CLUSTER = 2, a block per tile", dataclasses.replace(cluster, PERSISTENT=0))
    for clusters in (66, 64, 62, 60, 58, 56, 54, 52, 48, 44, 40, 33):
        timed(f"CLUSTER = 2, persistent, {clusters} clusters", cluster, grid=2 * clusters)
    (out / "cluster_grid.json").write_text(json.dumps(data, indent=1))
    print("wrote", out / "cluster_grid.json")


if __name__ == "__main__":
    main()

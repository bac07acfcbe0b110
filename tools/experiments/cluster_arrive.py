"""What halves 12_warp_specialized's speed with CLUSTER = 2 (results/stage_12_h100_2026-11-28_steps/): not the
clusters' residency (tools/experiments/cluster_grid.py: 66 clusters of two resident, and a block per tile as slow).
A guess to test: each consumer warp gives a stage back with `mbarrier.arrive.release.cluster` on both blocks'
barriers, every k-tile; a release at cluster scope waits for the warp's earlier memory operations to be visible to
the whole cluster, on the path to the warp's next products. Timed at 4096³, each verified against float64 on rows
first, beside the stage's kernel:
- both arrivals with release.cluster (the kernel's first version),
- the arrivals with mbarrier.arrive's default semantics (release at CTA scope), as CUTLASS's ClusterBarrier::arrive
  (the kernel as it is now: kernels/tma.cuh's mbarrier_arrive_cluster took them after this measurement),
- the own block's arrival local (mbarrier_arrive), the peer's remote with release.cluster.
(The committed run, results/stage_12_h100_2026-11-28_steps/cluster_arrive.json, ran before that change: its label
"as it is" is the first version, release.cluster.)

    on an H100 or H200, from the repository root:  OUT=some/folder python -m tools.experiments.cluster_arrive

Writes $OUT/cluster_arrive.json and prints a table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np

from helpers.core import stages
from helpers.core.paths import KERNELS
from helpers.measure import bench, verify
from helpers.run import backend, gemm

V12 = stages.variant("12_warp_specialized")
N = 4096
RELEASE = "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];"
DEFAULT = "mbarrier.arrive.shared::cluster.b64 _, [remote];"
GIVE_BACK = "    else for (unsigned r = 0; r < CLUSTER; ++r) mbarrier_arrive_cluster(&empty[s], r);"
VARIANTS = {  # edits of the kernels as they are now (mbarrier_arrive_cluster with the default semantics)
    "release.cluster on both arrivals": (("tma.cuh", DEFAULT, RELEASE),),
    "default semantics (release.cta) on both": (),
    "own block local, the peer's release.cluster": (
        ("tma.cuh", DEFAULT, RELEASE),
        ("12_warp_specialized.cu", GIVE_BACK,
         "    else { mbarrier_arrive(&empty[s]); mbarrier_arrive_cluster(&empty[s], rank ^ 1u); }"),),
}


@contextlib.contextmanager
def edited(edits):
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for f in KERNELS.iterdir():
            if f.suffix in (".cu", ".cuh"):
                shutil.copy(f, folder / f.name)
        for name, old, new in edits:
            text = (folder / name).read_text()
            assert text.count(old) == 1, (name, old)
            (folder / name).write_text(text.replace(old, new))
        with mock.patch.object(stages, "KERNELS", folder):
            yield


def main() -> None:
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    import cupy as cp
    data = {"provenance": bench.provenance("OUT=... python -m tools.experiments.cluster_arrive"), "rows": []}
    A, B, _ = bench.device_operands(N, N, N, seed=1)
    rows = np.arange(0, N, 128)
    ref, tol = verify.reference(A[rows].get(), B.get(), np.zeros((len(rows), N), np.float32), 1.0, 0.0, "tf32")
    cluster = dataclasses.replace(V12.default, CLUSTER=2)
    runs = [("stage's kernel (CLUSTER = 1)", V12.default, ())]
    runs += [(f"CLUSTER = 2, {what}", cluster, edits) for what, edits in VARIANTS.items()]
    for rnd in range(2):
        for label, cfg, edits in runs:
            with edited(edits):
                C = cp.full((N, N), verify.POISON, cp.float32)
                steps = gemm.launches(V12, cfg, N, N, N, 1.0, A, B, 0.0, C)
                for s in steps:
                    s()
                cp.cuda.Device().synchronize()
                worst = float(np.max(np.abs(C[rows].get() - ref) / tol))
                t = bench.time_call(lambda: [s.timed()() for s in steps], n_warmup=10, n_repeat=100)
            row = {"round": rnd + 1, "what": label, "worst_error_over_tolerance": worst, **t.row(N, N, N)}
            data["rows"].append(row)
            print(f"{rnd + 1} {label:<60} {row['tflops']:7.1f} TFLOP/s  error/tol {worst:.2f}", flush=True)
    (out / "cluster_arrive.json").write_text(json.dumps(data, indent=1))
    print("wrote", out / "cluster_arrive.json")


if __name__ == "__main__":
    main()

"""A stage's steps, one idea each, on a GPU through the course's own code (helpers.measure.verify,
helpers.measure.bench), into one JSON file:

    PYTHONUNBUFFERED=1 python3 -m tools.measure_steps 07 OUT.json [--rounds 5] [--steps A,B]

The chain is the first step's parent and then the stage's kernels in registry order (for 07:
06_transposed_a, 07_float4_copies, 07_runs_of_four, 07_vectorized), every one at the configuration
of the stage's last kernel, so that each step's gain is its idea alone; the parent also at its own default.
- every (kernel, configuration) verified on the shape catalogue (float64 reference) first, with its
  registers and local memory from the compiled function;
- at 4096^3, ROUNDS interleaved rounds of cuBLAS (TF32 for a chain of TF32 kernels, else FP32) and each kernel (median of 50 launches each), so
  a step's gain is read from several same-run pairs;
- a sweep of shapes beside cuBLAS FP32 (square sizes, and K or N not a multiple of 4, where the
  16-byte paths fall back).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from helpers.core import progress, stages
from helpers.measure import bench, resources, verify

SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (4096, 4096, 4095), (4095, 4095, 4096), (1000, 1000, 1000))


def chain(stage_id: str, names: list[str] | None = None) -> list[tuple[str, stages.Variant, object]]:
    """(label, variant, configuration) for the parent and each step, at the last step's configuration.
    names: the steps, in order (default: all of the stage's kernels); for 09, the two steps before
    09_async_copy, whose configuration type differs."""
    steps = stages.stage(stage_id).variants
    if names:
        unknown = set(names) - {v.name for v in steps}
        if unknown:
            raise SystemExit(f"not kernels of stage {stage_id}: {', '.join(sorted(unknown))}")
        steps = tuple(stages.variant(n) for n in names)
    parent = steps[0].parent_variant if steps else None
    if parent is None:
        raise SystemExit(f"stage {stage_id} has no kernel built on an earlier one: there is no chain of steps to measure.")
    common = steps[-1].default
    out = [(f"{parent.name} (its default)", parent, parent.default)]
    try:
        same = parent.config_type(**{f.name: getattr(common, f.name) for f in dataclasses.fields(parent.config_type)})
        if same != parent.default:
            out.append((f"{parent.name} ({same.label()})", parent, same))
    except (TypeError, ValueError, AttributeError):
        pass
    return out + [(v.name, v, common) for v in steps]



def timings(kernels, M, N, K, n_repeat) -> list[dict]:
    # TF32 kernels (stage 10) beside cuBLAS in TF32, the FP32 ones beside cuBLAS FP32
    tf32 = all(v.precision == "tf32" for _, v, _ in kernels)
    fp32 = bench.time_cublas(M, N, K, n_repeat=n_repeat, tf32=tf32)
    rows = [{"kernel": "cublas_tf32" if tf32 else "cublas_sgemm", "shape": [M, N, K], **fp32.row(M, N, K)}]
    for label, v, cfg in kernels:
        t, rel = bench.time_variant(v, M, N, K, config=cfg, n_repeat=n_repeat)
        rows.append({"kernel": label, "variant": v.name, "config": cfg.label(), "shape": [M, N, K], **t.row(M, N, K),
                     "pct_cublas": 100 * fp32.median_ms / t.median_ms, "max_rel_diff_vs_cublas": rel})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", help="the steps, comma-separated (default: all of the stage's kernels)")
    a = ap.parse_args()
    kernels = chain(a.stage, a.steps.split(",") if a.steps else None)
    command = f"python -m tools.measure_steps {a.stage} OUT.json --rounds {a.rounds}" + (f" --steps {a.steps}" if a.steps else "")
    data = {"provenance": bench.provenance(command),
            "chain": [{"kernel": label, "variant": v.name, "config": cfg.label()} for label, v, cfg in kernels],
            "configurations": [], "rounds_4096": [], "sweep": []}
    save = lambda: Path(a.out).write_text(json.dumps(data, indent=1))  # noqa: E731
    for label, v, cfg in kernels:
        r = resources.kernel_resources(v, cfg)
        report = verify.check_catalogue(v, cfg)
        data["configurations"].append({"kernel": label, "config": cfg.label(), "registers": r.registers,
                                       "local_bytes": r.local_bytes, "blocks_per_sm": r.driver_blocks_per_sm,
                                       "verified_shapes": len(report.checks), "verified": report.ok,
                                       **({} if report.ok else {"report": str(report)})})
        print(data["configurations"][-1], flush=True)
        if not report.ok:
            raise SystemExit(f"{label} is wrong; not timing anything")
    save()
    for _ in progress.bar(range(a.rounds), desc="rounds at 4096^3"):
        data["rounds_4096"].append(timings(kernels, 4096, 4096, 4096, 50))
        print([(r["kernel"], round(r["tflops"], 2)) for r in data["rounds_4096"][-1]], flush=True)
        save()
    for shape in progress.bar(SHAPES, desc="sweep"):
        data["sweep"] += timings(kernels, *shape, 30)
        print(shape, [(r["kernel"], round(r["tflops"], 2)) for r in data["sweep"][-len(kernels) - 1:]], flush=True)
        save()


if __name__ == "__main__":
    main()

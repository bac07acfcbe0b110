"""How does a TMA copy round FP32 to TF32, and what do the tensor cores take of an FP32 input? A bitwise probe.

The course says (notebook 12, helpers/emulator/runtime/runtime_tma.cpp) that a tensor map of TF32 elements rounds to
nearest with ties to even, and (notebook 10) that the tensor cores drop the low 13 bits of an FP32 input. Neither is
documented as such; "the errors match cuBLAS" cannot tell ties-to-even from cvt.rna's ties-away. This probe settles
both on the GPU it runs on: inputs built exactly at ties (low 13 bits 0x1000) beside ones just under and over, with
even and odd retained bits, both signs, several exponents, NaN, infinities and subnormals, copied by one TMA copy
(tools/experiments/tma_tf32_probe.cu) through a TF32 map and an FP32 map; the bits that landed in shared memory and
the values the tensor cores multiplied (a wgmma by a one-hot A) are compared with three models: round to nearest
ties to even, ties away (cvt.rna, which the kernel also applies), and truncation.

    on an H100 or H200, from the repository root:
        OUT=some/folder python -m tools.experiments.probe_tma_tf32
    on the CPU emulator (what the emulator's model says; a dry run of the probe):
        OUT=some/folder TBT_BACKEND=cpu python -m tools.experiments.probe_tma_tf32

Writes $OUT/probe_tma_tf32.json (provenance, the verdicts, every case that separates the models) and prints a
table. Seconds of GPU time.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from helpers.core.configs_hopper import TensorMapBox
from helpers.core.paths import ROOT
from helpers.run import backend
from helpers.run.kernel_loader import load_kernel

PROBE = ROOT / "tools" / "experiments" / "tma_tf32_probe.cu"
ROWS, COLS = 64, 32
LOW = 0x1FFF  # the 13 bits TF32 drops


def inputs(seed: int = 0) -> np.ndarray:
    """64 x 32 FP32 bit patterns: every (sign, exponent, retained-bit parity, low 13 bits) of the cases that
    separate the roundings, then specials, then random values."""
    cases = []
    for sign in (0, 1):
        for exponent in (127, 127 - 5, 127 + 7, 1):           # 1.x, 2^-5, 2^7, the smallest normal binade
            for retained in (0b0000000000, 0b0000000001, 0b1111111110, 0b1111111111):  # even / odd last bit
                for low in (0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF):
                    cases.append(sign << 31 | exponent << 23 | retained << 13 | low)
    specials = [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F801000, 0x00000000, 0x80000000,
                0x00001000, 0x00003000, 0x00400000 | 0x1000, 0x7F7FF000 | 0x1000]  # inf, NaN, zeros, subnormal ties
    rng = np.random.default_rng(seed)
    rest = ROWS * COLS - len(cases) - len(specials)
    randoms = rng.uniform(-4, 4, rest).astype(np.float32).view(np.uint32).tolist()
    return np.array(cases + specials + randoms, dtype=np.uint32).reshape(ROWS, COLS)


def nearest_even(u: np.ndarray) -> np.ndarray:
    u = u.astype(np.uint64)
    finite = (u & 0x7F800000) != 0x7F800000
    rounded = (u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000
    return np.where(finite, rounded, u).astype(np.uint32)


def nearest_away(u: np.ndarray) -> np.ndarray:
    u = u.astype(np.uint64)
    finite = (u & 0x7F800000) != 0x7F800000
    rounded = (u + 0x1000) & 0xFFFFE000
    return np.where(finite, rounded, u).astype(np.uint32)


def truncated(u: np.ndarray) -> np.ndarray:
    finite = (u & 0x7F800000) != 0x7F800000
    return np.where(finite, u & 0xFFFFE000, u).astype(np.uint32)


MODELS = {"ties to even": nearest_even, "ties away (cvt.rna)": nearest_away, "truncation": truncated,
          "unchanged": lambda u: u.astype(np.uint32)}


def normal(u: np.ndarray) -> np.ndarray:
    e = u & 0x7F800000
    return (e != 0) & (e != 0x7F800000)


def tensor_mask(src: np.ndarray, landed: np.ndarray) -> np.ndarray:
    """Inputs whose tensor-core value the one-hot product shows exactly: normal numbers, in a group of 8 along k
    (row n, step s) where nothing that landed is an infinity or NaN (0 x inf is NaN, which would spread to the
    group's every product; a value next to the largest float may round to infinity)."""
    special = ((landed & 0x7F800000) == 0x7F800000).reshape(ROWS, 4, 8).any(axis=2, keepdims=True)
    return normal(src) & ~np.broadcast_to(special, (ROWS, 4, 8)).reshape(ROWS, COLS)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equal, any NaN equal to any NaN (payloads are not the question)."""
    nan = lambda x: ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0)
    return (a == b) | (nan(a) & nan(b))


def tensor_values(d: np.ndarray) -> np.ndarray:
    """The probe's D back to the tile: D(r, n) = tile(n, 8s + r % 8) for step s (wgmma.cuh's layout)."""
    out = np.zeros((ROWS, COLS), np.uint32)
    tid, i = np.arange(128)[:, None], np.arange(32)[None, :]
    w, g, t, j, e = tid // 32, tid % 32 // 4, tid % 4, i // 4, i % 4
    r, n = 16 * w + g + 8 * (e // 2), 8 * j + 2 * t + e % 2
    for s in range(4):
        out[n, 8 * s + r % 8] = d.reshape(4, 128, 32)[s].view(np.uint32)
    return out


def run(bk, src: np.ndarray, tf32: bool):
    xp = bk.xp
    dsrc = bk.to_device(src.view(np.float32))
    box = TensorMapBox(ROWS, COLS, ROWS, COLS, tf32=tf32)
    tmap = bk.tensor_map(dsrc, box, COLS)
    landed, rna = (bk.to_device(np.full(ROWS * COLS, np.nan, np.float32)) for _ in range(2))
    d = bk.to_device(np.full(4 * 128 * 32, np.nan, np.float32))
    load_kernel(PROBE, "tma_tf32_probe")((1, 1, 1), (128, 1, 1), (tmap, dsrc, landed, rna, d),
                                         shared_mem=ROWS * COLS * 4 + 1024)
    host = lambda a: np.asarray(bk.to_host(a)).view(np.uint32)
    del xp
    return host(landed).reshape(ROWS, COLS), host(rna).reshape(ROWS, COLS), tensor_values(host(d))


def verdict(got: np.ndarray, src: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """Which models the bits agree with, on every input (of `mask`) and on the ties alone."""
    mask = np.ones(src.shape, bool) if mask is None else mask
    got, src = got[mask], src[mask]
    ties = ((src & LOW) == 0x1000) & ((src & 0x7F800000) != 0x7F800000)
    out = {"inputs compared": int(src.size)}
    for name, model in MODELS.items():
        same = _same(got, model(src))
        out[name] = {"all": bool(same.all()), "ties": bool(same[ties].all()), "disagreements": int((~same).sum())}
    matches = [n for n in MODELS if out[n]["all"]]
    out["verdict"] = matches[0] if len(matches) == 1 else ("none of the models" if not matches else " = ".join(matches))
    return out


def separating_cases(src, columns: dict) -> list[dict]:
    ties = ((src & LOW) == 0x1000) | ((src & LOW) == 0x0FFF) | ((src & LOW) == 0x1001)
    rows = []
    for idx in zip(*np.nonzero(ties)):
        row = {"input": f"{int(src[idx]):08x}"}
        row.update({k: f"{int(v[idx]):08x}" for k, v in columns.items()})
        rows.append(row)
    return rows[:96]


def main() -> int:
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    bk = backend.current()
    src = inputs()
    result = {"backend": backend.name(), "cases": int(src.size)}
    columns = {}
    for tf32 in (True, False):
        landed, rna, tensor = run(bk, src, tf32)
        kind = "TF32 map" if tf32 else "FP32 map"
        result[kind] = {"landed in shared memory": verdict(landed, src),
                        "what the tensor cores multiplied": verdict(tensor, src, tensor_mask(src, landed))}
        columns[f"{kind}: landed"] = landed
        columns[f"{kind}: tensor cores"] = tensor
    result["cvt.rna (__float_to_tf32)"] = verdict(rna, src)
    columns["cvt.rna"] = rna
    result["separating cases"] = separating_cases(src, columns)
    if backend.name() == "gpu":
        from helpers.measure import bench
        result["provenance"] = bench.provenance("OUT=... python -m tools.experiments.probe_tma_tf32")
    else:
        result["provenance"] = {"backend": "cpu emulator: its model, not a GPU's",
                                "command": "OUT=... TBT_BACKEND=cpu python -m tools.experiments.probe_tma_tf32"}
    path = out_dir / "probe_tma_tf32.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"{'what':<48} {'verdict':<24} ties: even / away / trunc / unchanged")
    for kind in ("TF32 map", "FP32 map"):
        for what, v in result[kind].items():
            print(f"{kind + ': ' + what:<48} {v['verdict']:<24} "
                  + " / ".join("yes" if v[m]["ties"] else "no" for m in MODELS))
    v = result["cvt.rna (__float_to_tf32)"]
    print(f"{'cvt.rna (__float_to_tf32)':<48} {v['verdict']:<24} " + " / ".join("yes" if v[m]["ties"] else "no" for m in MODELS))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

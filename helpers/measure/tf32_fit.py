"""The constants of the TF32 dispatcher's model (helpers/run/dispatch_tf32.py), fitted to a committed library sweep:
least squares on relative error over every TF32 call it timed (beta = 0 and 1), each with the configuration the
sweep ran (read from its choice's label) and the GPU it ran on (its specification: SMs, FP32 peak, DRAM bandwidth).

Left out: the sweep's held-out shapes (they stay shapes nothing was fitted to), and shapes whose N or K is not a
multiple of 4, whose operands the call copies to a padded pitch before the maps are made (copies the model does not
count). `python -m tools.fit_tf32_model` prints the fit and each call's
measured and modelled times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from helpers.core import gpu_specs, results_files
from helpers.core.configs_stream_k import StreamKConfig
from helpers.core.paths import ROOT
from helpers.run import dispatch, dispatch_tf32

_LABEL = re.compile(r"11_stream_k TF32 (\d+)x(\d+) tile, SK_WAVES=(\d)(?:, SLICES=(\d+))?$")


@dataclass(frozen=True)
class Call:
    """One timed TF32 call of the sweep: its shape, beta, configuration, time and the model's terms for it."""
    M: int
    N: int
    K: int
    beta_nonzero: bool
    config: StreamKConfig
    measured_ms: float
    terms: dict
    held_out: bool = False


def config_of(label: str) -> StreamKConfig:
    """The configuration a Tf32Choice.label() names."""
    m = _LABEL.match(label)
    if m is None:
        raise ValueError(f"not a label of 11_stream_k's TF32 choices: {label!r}")
    bm, bn, waves, slices = m.groups()
    return StreamKConfig(int(bm), int(bn) // 64, SK_WAVES=int(waves), SLICES=int(slices or 0))


def machine_of(data: dict) -> dispatch.Machine:
    """The GPU of a sweep as the model sees it (from its specification; the FP32 tables' rates are not used)."""
    name = data["provenance"]["gpu"]
    spec = gpu_specs.spec(name)
    return dispatch.Machine(name, int(data["provenance"]["sm_count"]), spec.dram_tbs, spec.fp32_tflops,
                            {}, {})


def calls(path=dispatch_tf32.SWEEP_FILE) -> list[Call]:
    data = results_files.read_json(ROOT / path)
    machine = machine_of(data)
    out = []
    for r in data["rows"]:
        M, N, K = r["M"], r["N"], r["K"]
        if r.get("held_out") or N % 4 or K % 4:
            continue
        cfg = config_of(r["tf32"]["choice"])
        for beta, ms in ((False, r["tf32"]["sgemm_ms"]), (True, r["tf32"]["beta1"]["sgemm_ms"])):
            out.append(Call(M, N, K, beta, cfg, ms, dispatch_tf32.terms(M, N, K, cfg, machine, beta)))
    return out


def fit(path=dispatch_tf32.SWEEP_FILE) -> tuple[dict[str, float], list[Call]]:
    """The constants (by their names in dispatch_tf32, in seconds or a fraction) that minimise the calls' squared
    relative errors, and the calls."""
    found = calls(path)
    keys = list(dispatch_tf32.CONSTANTS)
    X = np.array([[c.terms[k] for k in keys] for c in found])
    y = np.array([c.measured_ms / 1e3 - c.terms["bytes_seconds"] for c in found])
    w = 1.0 / np.array([c.measured_ms / 1e3 for c in found])
    coef, *_ = np.linalg.lstsq(X * w[:, None], y * w, rcond=None)
    return {dispatch_tf32.CONSTANTS[k]: float(v) for k, v in zip(keys, coef)}, found


def modelled_ms(call: Call, constants: dict[str, float]) -> float:
    return (call.terms["bytes_seconds"] + sum(call.terms[k] * constants[name]
                                              for k, name in dispatch_tf32.CONSTANTS.items())) * 1e3

"""Stages 10 and 12 with beta = 0 and beta = 1 at 4096³ beside cuBLAS TF32, with the GPU's clocks beside every time.

An expert's reading (issue 35): with beta != 0 the kernels' epilogues loaded one pair of C, used it and stored it
before the next load (64 dependent DRAM round trips per thread), and every "100 % of cuBLAS" of stage 12 was
measured with beta = 0. The kernels now load C a batch at a time (C_BATCH rows of 8, all the batch's loads before
its stores). This measures, in interleaved rounds:
- cuBLAS TF32 (cublasSgemm in TF32 math mode, alpha = 1 and the beta of the row, on C as it lies),
- 10_wgmma and 12_warp_specialized at their defaults, as they are (C_BATCH = 8) and with C_BATCH = 1 (a row of 8 at
  a time: about the epilogue before), and the steps past stage 12 (STEPS: EPILOGUE = 1, C stored by TMA),
each with beta = 0 and 1, each launch verified first against float64 on a sample of rows (verify.reference's TF32
tolerance). While each is timed, a sampler reads the SM clock, the power draw and limit and the clock-event
(throttle) reasons (NVML through pynvml where installed, else nvidia-smi), so that a kernel held below its clock by
power says so. Then the TF32 errors against float64 on U[-1, 1) and U[0, 1) data (verify.py's tolerance: the
worst |C - ref| / tol, which must be <= 1).

    on an H100 or H200, from the repository root:  OUT=some/folder python -m tools.measure_hopper_beta [--rounds 3]
    anywhere (no GPU): python -m tools.measure_hopper_beta --dry-run   (compiles what it would time, for sm_90a)

Writes $OUT/measure_hopper_beta.json (provenance, every timing with its clocks, the errors) and prints a table.
About two minutes of GPU time, most of it compiling.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path
from unittest import mock

import numpy as np

from helpers.core import stages
from helpers.measure import bench, mutations, verify
from helpers.run import backend, gemm

N = 4096
KERNELS = ("10_wgmma", "12_warp_specialized")
BATCH = "constexpr int C_BATCH = 8;"
SAMPLE_ROWS = 32         # rows of C checked against float64 on the host (a few seconds each)
THROTTLE = {0x1: "GPU idle", 0x2: "applications clocks setting", 0x4: "SW power cap", 0x8: "HW slowdown",
            0x10: "sync boost", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown",
            0x80: "HW power brake slowdown", 0x100: "display clock setting"}
POWER_REASONS = 0x4 | 0x80


# ---- the clocks, sampled while a timing runs ------------------------------------------------------------------------
class Sampler:
    """Samples the SM clock (MHz), power (W), power limit (W) and clock-event reasons every `period` seconds in a
    thread, through pynvml where it imports, else an nvidia-smi process."""

    def __init__(self, index: int = 0, period: float = 0.01):
        self.index, self.period, self.samples = index, period, []
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml_sample()
        except Exception:  # not installed, no NVML, or an NVML without these calls: nvidia-smi
            self.nvml = None
        self.smi_fields = self._smi_fields() if self.nvml is None else None

    def _smi_fields(self) -> list[str] | None:
        if not shutil.which("nvidia-smi"):
            return None
        base = ["clocks.sm", "clocks.max.sm", "power.draw", "power.limit", "temperature.gpu"]
        for reasons in ("clocks_event_reasons.active", "clocks_throttle_reasons.active", None):
            fields = base + ([reasons] if reasons else [])
            r = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                                "-i", str(self.index)], capture_output=True, text=True)
            if r.returncode == 0:
                return fields
        return None

    def _nvml_sample(self) -> dict:
        n, h = self.nvml, self.handle
        return {"sm_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                "max_sm_mhz": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM),
                "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000, "limit_w": n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
                "temperature_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
                "reasons": int((getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
                                or n.nvmlDeviceGetCurrentClocksThrottleReasons)(h))}

    @contextlib.contextmanager
    def during(self):
        self.samples = []
        if self.nvml is not None:
            stop = threading.Event()

            def loop():
                while not stop.is_set():
                    self.samples.append(self._nvml_sample())
                    time.sleep(self.period)
            th = threading.Thread(target=loop, daemon=True)
            th.start()
            try:
                yield self
            finally:
                stop.set()
                th.join()
            return
        if self.smi_fields is None:
            yield self
            return
        proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(self.smi_fields)}", "--format=csv,noheader,"
                                 "nounits", "-i", str(self.index), "-lms", str(max(10, int(self.period * 1000)))],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            time.sleep(0.3)  # nvidia-smi's first samples
            yield self
            time.sleep(0.05)
        finally:
            proc.terminate()
            out = proc.communicate(timeout=5)[0]
        for line in out.splitlines():
            v = [x.strip() for x in line.split(",")]
            if len(v) < 5:
                continue
            try:
                s = {"sm_mhz": float(v[0]), "max_sm_mhz": float(v[1]), "power_w": float(v[2]), "limit_w": float(v[3]),
                     "temperature_c": float(v[4])}
                if len(v) > 5:
                    s["reasons"] = int(v[5], 16) if v[5].startswith("0x") else int(v[5])
            except ValueError:
                continue
            self.samples.append(s)

    def summary(self) -> dict:
        if not self.samples:
            return {"samples": 0, "source": "none (no NVML, no nvidia-smi)" if self.smi_fields is None and
                    self.nvml is None else "no sample in the timing's window"}
        sm = [s["sm_mhz"] for s in self.samples]
        reasons = 0
        for s in self.samples:
            reasons |= s.get("reasons", 0)
        power = [s["power_w"] for s in self.samples]
        out = {"samples": len(self.samples), "source": "pynvml" if self.nvml else "nvidia-smi",
               "sm_mhz_median": statistics.median(sm), "sm_mhz_min": min(sm), "sm_mhz_max": max(sm),
               "max_sm_mhz": self.samples[0]["max_sm_mhz"], "power_w_median": statistics.median(power),
               "power_limit_w": self.samples[0]["limit_w"],
               "temperature_c_max": max(s["temperature_c"] for s in self.samples),
               "reasons": [name for bit, name in THROTTLE.items() if reasons & bit]}
        out["power_limited"] = bool(reasons & POWER_REASONS) or (
            out["power_w_median"] >= 0.97 * out["power_limit_w"] and out["sm_mhz_median"] < 0.97 * out["max_sm_mhz"])
        return out


# ---- what is timed ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def cublas_tf32_math():
    """cublasSgemm on CuPy's handle in TF32 tensor-op math mode (cuBLAS's TF32 GEMM with alpha and beta)."""
    import cupy as cp
    from cupy_backends.cuda.libs import cublas
    handle = cp.cuda.device.get_cublas_handle()
    before = cublas.getMathMode(handle)
    cublas.setMathMode(handle, getattr(cublas, "CUBLAS_TF32_TENSOR_OP_MATH", 3))
    try:
        yield
    finally:
        cublas.setMathMode(handle, before)


def cublas_call(A, B, C, beta: float):
    """C = A B + beta C in place, row-major (cupy.cublas.gemm gives cublasSgemm C^T = B^T A^T, no copies)."""
    import cupy.cublas
    return lambda: cupy.cublas.gemm("N", "N", A, B, out=C, alpha=1.0, beta=beta)


def kernel_calls(folders: dict, name: str, batch: int, A, B, C, beta: float, round_=None, **over) -> tuple[list, list]:
    """The launches of `name` at its default (ROUND = round_ where given, and the fields of `over`) with C_BATCH =
    batch (the file in folders[(name, batch)]), run once (which compiles them the first time and checks them), as
    calls that only enqueue them."""
    v = stages.variant(name)
    config = v.default_for(backend.arch())
    config = config if round_ is None else dataclasses.replace(config, ROUND=round_)
    config = dataclasses.replace(config, **over)
    with mock.patch.object(stages, "KERNELS", folders[(name, batch)]):
        steps = gemm.launches(v, config, N, N, N, 1.0, A, B, beta, C)
    for step in steps:
        step()
    return [s.timed() for s in steps], steps  # the steps keep what their tensor maps read alive


def edited_kernels(stack: contextlib.ExitStack) -> dict:
    """(kernel, C_BATCH) -> a folder holding that version of the kernel, for the whole run (so each compiles once)."""
    folders = {}
    for name in KERNELS:
        for batch in (8, 1):
            edits = () if batch == 8 else ((BATCH, f"constexpr int C_BATCH = {batch};"),)
            folders[(name, batch)] = stack.enter_context(mutations.edited_kernel(name, edits)).parent
    return folders


def sample_error(C, A, B, C0, beta: float) -> dict:
    """Over SAMPLE_ROWS rows spread over C, against float64: the worst |C - ref| / tol (verify.reference's TF32
    tolerance) and the RMS of C - ref over the RMS of ref."""
    rows = np.linspace(0, N - 1, SAMPLE_ROWS).astype(int)
    host = lambda x: x.get() if hasattr(x, "get") else np.asarray(x)
    a, c, c0 = host(A[rows]), host(C[rows]), host(C0[rows])
    ref, tol = verify.reference(a, host(B), c0, 1.0, beta, "tf32")
    err = c.astype(np.float64) - ref
    return {"worst_error_over_tolerance": float(np.max(np.abs(err) / tol)),
            "rms_error_over_rms": float(np.sqrt(np.mean(err ** 2) / np.mean(ref ** 2)))}


def dry_run() -> None:
    from helpers.run import toolchain
    with contextlib.ExitStack() as stack:
        for (name, batch), folder in edited_kernels(stack).items():
            v = stages.variant(name)
            info = toolchain.ptxas_info(folder / v.path.name, v.name_expression(v.default), "sm_90a")
            print(f"{name} (C_BATCH = {batch}): {info.registers} registers, {info.spill_store_bytes} bytes spilled")
        for label, (name, over) in STEPS.items():
            v = stages.variant(name)
            config = dataclasses.replace(v.default, **over)
            info = toolchain.ptxas_info(v.path, v.name_expression(config), "sm_90a")
            print(f"{label}: {info.registers} registers, {info.spill_store_bytes} bytes spilled")
    s = Sampler(0)
    print("clock sampler:", "pynvml" if s.nvml else "nvidia-smi" if s.smi_fields else "none on this machine")


# steps past stage 12, timed beside it: label -> (kernel, the fields over its default)
STEPS = {"12_warp_specialized (EPILOGUE = 1: TMA stores)": ("12_warp_specialized", {"EPILOGUE": 1})}


def entries():
    yield "cuBLAS TF32", None, None
    for name in KERNELS:
        for batch in (8, 1):
            yield f"{name} (C_BATCH = {batch})", name, batch
    for label, (name, _) in STEPS.items():
        yield label, name, 8


# checked for their errors only, beside the defaults (10_wgmma truncates, 12 rounds): the precision claims of
# notebooks 10 and 12 on same-sign data
OTHER_ROUNDING = (("10_wgmma (ROUND = 1)", "10_wgmma", 1), ("12_warp_specialized (ROUND = 0)", "12_warp_specialized", 0))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=600, help="timed launches per timing (long enough for the sampler)")
    p.add_argument("--dry-run", action="store_true", help="no GPU: compile every kernel timed for sm_90a (NVRTC and "
                   "ptxas: registers, spills) and say which clock sampler this machine has")
    args = p.parse_args()
    if args.dry_run:
        dry_run()
        return
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    backend.use("gpu")
    import cupy as cp
    sampler = Sampler(0)  # the device CuPy uses: the first visible one
    A, B, C0 = bench.device_operands(N, N, N, seed=1)
    C0 = cp.random.default_rng(2).uniform(-1, 1, (N, N), dtype=cp.float32)
    rows, errors, prepared = [], [], {}
    stack = contextlib.ExitStack()
    folders = edited_kernels(stack)
    checked = [(label, name, batch, None) for label, name, batch in entries()]
    checked += [(label, name, 8, r) for label, name, r in OTHER_ROUNDING]
    for label, name, batch, round_ in checked:  # compiled, verified on U[-1, 1) and U[0, 1)
        for beta in (0.0, 1.0):
            for positive in (False, True):
                low = 0.0 if positive else -1.0
                g = cp.random.default_rng(3)
                a = g.uniform(low, 1, (N, N), dtype=cp.float32)
                b = g.uniform(low, 1, (N, N), dtype=cp.float32)
                c0 = g.uniform(low, 1, (N, N), dtype=cp.float32)
                c = c0.copy() if beta else cp.full((N, N), verify.POISON, cp.float32)
                if name is None:
                    with cublas_tf32_math():
                        cublas_call(a, b, c, beta)()
                else:
                    kernel_calls(folders, name, batch, a, b, c, beta, round_, **STEPS.get(label, ("", {}))[1])
                cp.cuda.Device().synchronize()
                errors.append({"what": label, "beta": beta, "data": "U[0,1)" if positive else "U[-1,1)",
                               **sample_error(c, a, b, c0, beta)})
                print(errors[-1], flush=True)
            if round_ is not None:
                continue
            C = C0.copy()  # the timed launches' own C (with beta = 1 it grows launch after launch: no matter)
            if name is None:
                prepared[label, beta] = cublas_call(A, B, C, beta), cublas_tf32_math
            else:
                calls, steps = kernel_calls(folders, name, batch, A, B, C, beta, **STEPS.get(label, ("", {}))[1])
                prepared[label, beta] = (lambda calls=calls, steps=steps: [c() for c in calls]), contextlib.nullcontext
    stack.close()
    for r in range(1, args.rounds + 1):
        for label, _, _ in entries():
            for beta in (0.0, 1.0):
                call, ctx = prepared[label, beta]
                with ctx():
                    bench.time_call(call, n_warmup=20, n_repeat=20)  # warm, and clocks up
                    with sampler.during():
                        t = bench.time_call(call, n_warmup=0, n_repeat=args.repeat)
                rows.append({"round": r, "what": label, "beta": beta, **t.row(N, N, N), "clocks": sampler.summary()})
                print({k: v for k, v in rows[-1].items() if k != "clocks"}, rows[-1]["clocks"].get("sm_mhz_median"),
                      flush=True)
    for row in rows:
        ref = next(x for x in rows if x["round"] == row["round"] and x["what"] == "cuBLAS TF32"
                   and x["beta"] == row["beta"])
        row["pct_cublas_tf32"] = 100.0 * ref["median_ms"] / row["median_ms"]
    data = {"provenance": bench.provenance(f"OUT=... python -m tools.measure_hopper_beta --rounds {args.rounds} "
                                           f"--repeat {args.repeat}"),
            "size": N, "rows": rows, "errors": errors}
    path = out_dir / "measure_hopper_beta.json"
    path.write_text(json.dumps(data, indent=1))
    print(f"\n{'what':<36} {'beta':>4} {'TFLOP/s (median of rounds)':>27} {'% cuBLAS TF32':>14} {'SM MHz':>7} "
          f"{'power-limited':>13}")
    for label, _, _ in entries():
        for beta in (0.0, 1.0):
            mine = [x for x in rows if x["what"] == label and x["beta"] == beta]
            clocks = [x["clocks"] for x in mine if x["clocks"].get("samples")]
            mhz = statistics.median(c["sm_mhz_median"] for c in clocks) if clocks else float("nan")
            limited = sum(c["power_limited"] for c in clocks)
            print(f"{label:<36} {beta:>4g} {statistics.median(x['tflops'] for x in mine):>27.1f} "
                  f"{statistics.median(x['pct_cublas_tf32'] for x in mine):>14.1f} {mhz:>7.0f} "
                  f"{f'{limited} of {len(mine)}':>13}")
    worst = max(errors, key=lambda e: e["worst_error_over_tolerance"])
    print(f"worst TF32 error over verify's tolerance: {worst['worst_error_over_tolerance']:.2f} ({worst['what']}, "
          f"beta = {worst['beta']:g}, {worst['data']}); must be <= 1")
    for data_kind in ("U[-1,1)", "U[0,1)"):
        rms = {e["what"]: e["rms_error_over_rms"] for e in errors if e["data"] == data_kind and e["beta"] == 0.0}
        print(f"RMS error / RMS(C) on {data_kind}, beta = 0: " + ", ".join(f"{k} {v:.2e}" for k, v in rms.items()))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Datasheet numbers of common GPUs: FP32 CUDA-core peak and DRAM bandwidth (and, for the Hopper
boards, the tensor cores' dense TF32 peak, which stage 10 is measured against).

These are the vendor's published figures, not measurements, and every entry says so
(`source = "datasheet"`). The roofline uses them on a machine without a GPU; on a GPU it
computes the same limits from the device's own properties instead (helpers.roofline).

    spec = lookup("NVIDIA H100 80GB HBM3")     # the name CUDA reports -> the H100 SXM entry
    spec.fp32_tflops, spec.dram_tbs            # 66.9, 3.35

Names are matched strictly: a board whose figures differ from an entry (an H100 NVL, an
H200 NVL, an A100 80GB PCIe, a V100 PCIe, an RTX 4090 D, ...) matches nothing rather than
borrowing another board's numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DATASHEET = "datasheet"


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's published limits."""
    key: str                  # short name used in the course ("H100 SXM")
    fp32_tflops: float        # FP32 on CUDA cores (no tensor cores), dense
    dram_tbs: float           # DRAM bandwidth, TB/s (10^12 bytes per second)
    arch: str                 # compute capability as an sm_XY target
    patterns: tuple[str, ...]  # regular expressions over the normalised reported name
    note: str = ""
    source: str = DATASHEET
    tf32_tflops: float | None = None  # TF32 on tensor cores, dense (no sparsity); None: not listed or no TF32

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.fp32_tflops / self.dram_tbs

    def label(self) -> str:
        return (f"{self.key}: {self.fp32_tflops:g} TFLOP/s FP32, {self.dram_tbs:g} TB/s DRAM "
                f"({self.source}{'; ' + self.note if self.note else ''})")


# Values: vendor datasheets, as collected in the course's reference notes.
SPECS: tuple[GpuSpec, ...] = (
    GpuSpec("H200", 67.0, 4.8, "sm_90", (r"\bH200\b(?! NVL)",), "H200 SXM, 141 GB HBM3e", tf32_tflops=494.7),
    GpuSpec("H100 SXM", 66.9, 3.35, "sm_90", (r"\bH100 SXM\d?\b", r"\bH100 80GB HBM3\b"), "80 GB HBM3",
            tf32_tflops=494.7),
    GpuSpec("H100 PCIe", 51.0, 2.0, "sm_90", (r"\bH100 PCIE\b",), "80 GB HBM2e", tf32_tflops=378.0),
    GpuSpec("A100 SXM4 80GB", 19.5, 2.04, "sm_80", (r"\bA100 SXM4? 80GB\b",),
            "the A100 datasheet spans 1.56 TB/s (40 GB) to 2.04 TB/s (80 GB SXM); this is the 80 GB SXM"),
    GpuSpec("A100 40GB", 19.5, 1.56, "sm_80", (r"\bA100 (SXM4?|PCIE) 40GB\b",),
            "the A100 datasheet spans 1.56 TB/s (40 GB) to 2.04 TB/s (80 GB SXM); this is the 40 GB"),
    GpuSpec("RTX 4090", 82.6, 1.01, "sm_89", (r"\bRTX 4090\b(?! ?(TI|D)\b)",)),
    GpuSpec("RTX 3090", 35.6, 0.94, "sm_86", (r"\bRTX 3090\b(?! ?TI\b)",)),
    GpuSpec("L4", 30.3, 0.30, "sm_89", (r"^(NVIDIA )?L4$",)),
    GpuSpec("T4", 8.1, 0.32, "sm_75", (r"^(NVIDIA |TESLA )?T4$",)),
    GpuSpec("V100 SXM2", 15.7, 0.90, "sm_70", (r"\bV100 SXM2\b",), "the PCIe V100 is slower (not listed)"),
)


def normalise(name: str) -> str:
    """Upper case, '-' and '_' as spaces, single spaces: 'NVIDIA A100-SXM4-80GB' -> 'NVIDIA A100 SXM4 80GB'."""
    return " ".join(re.sub(r"[-_]", " ", str(name)).upper().split())


def lookup(name: str) -> GpuSpec | None:
    """The entry for a GPU by the name CUDA reports (or the entry's key); None when none fits."""
    n = normalise(name)
    for spec in SPECS:
        if n == normalise(spec.key) or any(re.search(p, n) for p in spec.patterns):
            return spec
    return None


def spec(name: str) -> GpuSpec:
    """Like lookup, but raises KeyError naming the GPUs the table knows."""
    found = lookup(name)
    if found is None:
        raise KeyError(f"no datasheet entry for GPU {name!r}; the table has "
                       f"{', '.join(s.key for s in SPECS)}.")
    return found


def table() -> str:
    """The whole table as Markdown, every row marked as datasheet figures."""
    lines = ["| GPU | FP32 TFLOP/s | DRAM TB/s | ridge FLOP/B | arch | source |", "|---|---|---|---|---|---|"]
    for s in SPECS:
        src = s.source + (f" ({s.note})" if s.note else "")
        lines.append(f"| {s.key} | {s.fp32_tflops:g} | {s.dram_tbs:g} | {s.ridge_flop_per_byte:.1f} | "
                     f"{s.arch} | {src} |")
    return "\n".join(lines)

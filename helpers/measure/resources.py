"""What a kernel instantiation costs an SM: registers, shared and local memory, and occupancy.

    r = kernel_resources("03_smem_tiling")                 # default configuration
    r = kernel_resources("03_smem_tiling", TileConfig(16), arch="sm_80")
    r = kernel_resources("10_tensor_cores", arch="sm_86")    # that architecture's default configuration
    print(r.describe())
    print(resource_table("sm_86"))                           # python -m helpers resources --arch sm_86

Where the numbers come from:

- On a GPU (and no `arch` given): the compiled kernel's own attributes, as CuPy reports them
  (num_regs, shared_size_bytes, local_size_bytes, max_threads_per_block), after compiling it
  exactly as the course launches it (helpers.kernels.load_kernel). The driver's occupancy
  answer is recorded beside the course's calculator as a cross-check.
- Otherwise (the CPU emulator, or an explicit `arch`): the same .cu file compiled by NVRTC to
  PTX and assembled by `ptxas -v` for that architecture (default sm_90), both from NVIDIA's pip
  wheels (nvidia-cuda-nvrtc-cu12, nvidia-cuda-nvcc-cu12; in requirements.txt). ptxas reports
  registers per thread, static shared memory, the stack frame and spill stores and loads. With no
  `arch` on the emulator: helpers.run.backend.arch() (TBT_ARCH, else sm_90).

With no configuration, a kernel is taken at its default for that architecture (Variant.default_for:
the registry's per-architecture default where the H200-measured one cannot serve). A kernel that
architecture cannot run at all (wgmma off sm_90, TF32 wmma before sm_80) is refused before compiling,
with the GPUs that can run it.

Occupancy follows the rules of CUDA's occupancy calculator (cuda_occupancy.h): a block is
limited by warp slots, block slots, registers and shared memory, whichever allows fewest blocks.
Registers go to warps in units of 256, from four sub-partitions of 16384 registers each;
shared memory goes to blocks in units of 128 bytes, plus 1 KiB the driver reserves per block
(sm_80 and later), out of the largest carveout the SM offers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from helpers.core import stages
from helpers.core.configs import KernelConfig
from helpers.core.errors import UnsupportedFeatureError
from helpers.core.stages import Variant
from helpers.core.arch import ARCHS, KIB, Occupancy, known_arch, arch_limits, arch_name, occupancy
from helpers.run.toolchain import ptxas_info, toolchain
from helpers.run import kernel_loader as kernels
from helpers.run import backend
from helpers.core.markdown import Markdown
from helpers.core import progress



# ---- a kernel's resources ---------------------------------------------------------------------
@dataclass(frozen=True)
class KernelResources:
    variant: str
    name_expression: str
    config: str
    arch: str
    threads_per_block: int
    registers: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    local_bytes: int                 # stack frame / local memory per thread (spills live here)
    spill_store_bytes: int | None    # ptxas only
    spill_load_bytes: int | None     # ptxas only
    barriers: int | None             # ptxas only
    max_threads_per_block: int | None  # CuPy attributes only
    source: str
    occupancy: Occupancy | None
    driver_blocks_per_sm: int | None = None  # the CUDA driver's own occupancy answer (GPU only)

    @property
    def spills(self) -> bool | None:
        if self.spill_store_bytes is None:
            return None
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0

    def describe(self) -> str:
        spill = {None: "", False: ", no spills", True: f", spills {self.spill_store_bytes} B stored / "
                 f"{self.spill_load_bytes} B loaded"}[self.spills]
        text = (f"{self.name_expression} ({self.config}), {self.threads_per_block} threads per block: "
                f"{self.registers} registers per thread, {self.static_shared_bytes} B static + "
                f"{self.dynamic_shared_bytes} B dynamic shared memory, {self.local_bytes} B local memory{spill}")
        if self.occupancy:
            text += f"\n{self.occupancy.describe()}"
        if self.driver_blocks_per_sm is not None:
            text += f"\nthe CUDA driver says {self.driver_blocks_per_sm} blocks per SM"
        return text + f"\n(source: {self.source})"



def _threads(config: KernelConfig) -> int:
    return math.prod(config.block())


def _from_ptxas(v: Variant, config: KernelConfig, arch: str) -> KernelResources:
    ne = v.name_expression(config)
    info = ptxas_info(v.path, ne, arch)
    threads, dyn = _threads(config), config.shared_bytes()
    occ = occupancy(info.arch, threads, info.registers, info.shared_bytes, dyn) if known_arch(info.arch) else None
    return KernelResources(v.name, ne, config.label(), info.arch, threads, info.registers, info.shared_bytes, dyn,
                           info.stack_frame_bytes, info.spill_store_bytes, info.spill_load_bytes, info.barriers,
                           None, f"ptxas -v for {info.arch}, {toolchain().describe()}", occ)


def _gpu_function(v: Variant, name_expression: str):
    """The CuPy RawKernel the course launches: helpers.kernels.load_kernel compiles the module
    (the same cache as every launch) and the module hands out the function by name expression."""
    k = kernels.load_kernel(v.path, name_expression)
    return k._compiled.get_function(name_expression)


def _from_gpu(v: Variant, config: KernelConfig) -> KernelResources:
    import cupy as cp
    ne = v.name_expression(config)
    fn = _gpu_function(v, ne)
    threads, dyn = _threads(config), config.shared_bytes()
    info = backend.current().device_info()
    arch = "sm_" + info.compute_capability.replace(".", "")
    regs, smem = int(fn.num_regs), int(fn.shared_size_bytes)
    occ = occupancy(arch, threads, regs, smem, dyn) if known_arch(arch) else None
    if dyn > 48 * KIB:
        fn.max_dynamic_shared_size_bytes = dyn
    driver = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, dyn)
    return KernelResources(v.name, ne, config.label(), arch, threads, regs, smem, dyn, int(fn.local_size_bytes),
                           None, None, None, int(fn.max_threads_per_block),
                           f"CuPy kernel attributes on {info.name}, CUDA driver {info.driver}", occ, int(driver))


def kernel_resources(variant, config: KernelConfig | None = None, arch: str | None = None) -> KernelResources:
    """Resources of one instantiation of a registered variant (a Variant or its name). With no
    `arch` on a GPU: the compiled kernel's attributes on that GPU. Otherwise ptxas for `arch`
    (default: backend.arch(), sm_90 unless TBT_ARCH says otherwise). With no `config`: the
    variant's default for that architecture. Raises UnsupportedFeatureError, before compiling,
    where that architecture cannot run the kernel."""
    v = stages.resolve(variant)
    on_gpu = arch is None and backend.name() == "gpu"
    arch = arch_name(arch or backend.arch())
    if why := v.unsupported_on(arch):
        raise UnsupportedFeatureError(why)
    config = config or v.default_for(arch)
    if not isinstance(config, v.config_type):
        raise TypeError(f"{v.name} takes a {v.config_type.__name__}, not a {type(config).__name__}.")
    if on_gpu:
        return _from_gpu(v, config)
    return _from_ptxas(v, config, arch)


def fits(r: KernelResources) -> bool:
    """At least one block per SM, and no spill unless the registry explains it (Variant.spill_note)."""
    return bool(r.occupancy and r.occupancy.active_blocks >= 1) and (not r.spills or bool(stages.variant(r.variant).spill_note))


def architecture_rows(arch: str | None = None, variants=None) -> list[dict]:
    """One row per registered variant (default: all) for `arch` (default: backend.arch()): whether it
    runs there, at which configuration (its default for that architecture) and what that costs an SM,
    from ptxas. A variant the architecture cannot run gets a row with `refused` and no numbers."""
    arch = arch_name(arch or backend.arch())
    rows = []
    for v in progress.bar(variants or stages.variants(), desc=f"compiling for {arch}", unit="kernel"):
        row = {"stage": v.stage_id, "variant": v.name, "arch": arch, "refused": v.unsupported_on(arch),
               "config": v.default_for(arch), "arch_default": v.default_for(arch) != v.default, "resources": None}
        if not row["refused"]:
            row["resources"] = kernel_resources(v, arch=arch)
        rows.append(row)
    return rows


def resource_table(arch: str | None = None, variants=None) -> Markdown:
    """Every registered variant (default: all) at its default configuration for `arch` (default:
    backend.arch()) as a Markdown table: threads, registers, shared memory, spills, blocks per SM,
    occupancy. Kernels the architecture cannot run are listed below it, with why; spills with the
    registry's explanation."""
    arch = arch_name(arch or backend.arch())
    rows = architecture_rows(arch, variants)
    head = [f"Registers and occupancy on {arch}" + (f" ({ARCHS[arch].gpus})" if arch in ARCHS else "") + ":", "",
            "| kernel | threads | registers | shared B | local B | spills | blocks/SM | occupancy | limited by |",
            "|---|---|---|---|---|---|---|---|---|"]
    notes, source = [], ""
    for row in rows:
        r = row["resources"]
        if r is None:
            notes.append(f"- {row['variant']} is not compiled for {arch}: {row['refused']}")
            continue
        o, source = r.occupancy, r.source
        mark = " †" if row["arch_default"] else ""
        spills = "-" if r.spills is None else (f"{r.spill_store_bytes} B" if r.spills else "none")
        if r.spills:
            notes.append(f"- {r.variant} spills on {r.arch}: {stages.variant(r.variant).spill_note or 'NOT EXPLAINED'}")
        head.append(f"| {r.name_expression}{mark} | {r.threads_per_block} | {r.registers} | "
                    f"{r.static_shared_bytes + r.dynamic_shared_bytes} | {r.local_bytes} | {spills} | "
                    f"{o.active_blocks if o else '-'} | {f'{100 * o.occupancy:.0f}%' if o else '-'} | "
                    f"{', '.join(o.limited_by) if o else '-'} |")
    if any(row["arch_default"] for row in rows):
        notes.insert(0, f"- † {arch}'s own default configuration (the registry's Variant.arch_defaults): the one "
                        f"measured on the H200 does not fit here.")
    limits = ""
    if known_arch(arch):
        a = arch_limits(arch)
        limits = (f"\n\nPer SM on {a.name}: {a.max_warps_per_sm} warps, {a.max_blocks_per_sm} blocks, "
                  f"{a.registers_per_sm // 1024} K registers, {a.shared_per_sm // KIB} KiB shared memory "
                  f"({a.max_shared_per_block // KIB} KiB for one block).")
    else:
        limits = (f"\n\nThe course has no per-SM limits for {arch} (it has {', '.join(ARCHS)}): registers and "
                  f"shared memory only, no blocks per SM or occupancy.")
    return Markdown("\n".join(head) + ("\n\n" + "\n".join(notes) if notes else "") + limits
                    + (f"\n\nSource: {source}." if source else ""))

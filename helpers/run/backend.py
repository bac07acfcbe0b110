"""Which backend runs the kernels: a CUDA GPU through CuPy, or the CPU emulator.

TBT_BACKEND=gpu or TBT_BACKEND=cpu forces one; otherwise the GPU is used when CuPy sees a
device. Both backends take the same kernel files and the same launch call (helpers.kernels).
"""

from __future__ import annotations

import functools
import os
import sys

from helpers.run import cpu_backend
from helpers.core.arch import ARCHS, COURSE_ARCHS, DEFAULT_ARCH, arch_name, known_arch
from helpers.core.errors import CourseError

ENV_VAR = "TBT_BACKEND"
ARCH_ENV_VAR = "TBT_ARCH"
_forced: str | None = None


class BackendUnavailableError(CourseError, RuntimeError):
    """The backend asked for cannot run on this machine."""


class BackendSettingError(BackendUnavailableError, ValueError):
    """TBT_BACKEND names no backend."""


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU"
        return False


def use(name: str | None) -> None:
    """Selects the backend for this process ('gpu', 'cpu', or None for automatic)."""
    global _forced
    if name not in (None, "gpu", "cpu"):
        raise ValueError(f"backend must be 'gpu', 'cpu' or None, not {name!r}")
    _forced = name
    current.cache_clear()


@functools.lru_cache(maxsize=None)
def current():
    """The backend module in use: helpers.run.gpu_backend or helpers.run.cpu_backend."""
    wanted = _forced or os.environ.get(ENV_VAR, "").strip().lower() or None
    if wanted not in (None, "auto", "gpu", "cpu"):
        raise BackendSettingError(f"{ENV_VAR}={wanted!r} is not a backend: use gpu, cpu or auto.")
    if wanted == "gpu" or (wanted in (None, "auto") and gpu_available()):
        if not gpu_available():
            raise BackendUnavailableError(
                f"{ENV_VAR}=gpu, but CuPy sees no CUDA GPU here. Fix: install cupy-cuda12x (or "
                f"cupy-cuda13x for a CUDA 13 driver) on a machine with an NVIDIA GPU, or unset "
                f"{ENV_VAR} to use the CPU emulator.")
        from helpers.run import gpu_backend   # imports CuPy: loaded only where a GPU is used
        return gpu_backend
    return cpu_backend


def name() -> str:
    return current().NAME


class ArchSettingError(CourseError, ValueError):
    """TBT_ARCH names no architecture the course has limits for."""


def arch() -> str:
    """The GPU architecture the course sizes kernels for (default configurations, the sliders' choices,
    autotuning's search space, registers and occupancy): on a GPU its own (sm_86 for compute capability
    8.6); on the CPU emulator TBT_ARCH (say sm_86, to see an RTX 30's), else sm_90, the architecture
    the course's GPU results were measured on."""
    if name() == "gpu":
        return arch_name(current().device_info().compute_capability)
    wanted = os.environ.get(ARCH_ENV_VAR, "").strip()
    if not wanted:
        return DEFAULT_ARCH
    try:
        chosen = arch_name(wanted)
    except ValueError:
        chosen = None
    if chosen is None or not known_arch(chosen):
        raise ArchSettingError(f"{ARCH_ENV_VAR}={wanted!r} is not an architecture the course has limits for. "
                               f"Fix: set it to one of {', '.join(COURSE_ARCHS)} (GPUs: "
                               f"{'; '.join(f'{a}: {ARCHS[a].gpus}' for a in COURSE_ARCHS)}), or unset it for "
                               f"{DEFAULT_ARCH}.")
    return chosen


# The SMs a persistent kernel's grid is sized for on the emulator: an H100 SXM's and H200's, the GPUs the
# Hopper kernels (the only persistent ones) run on.
EMULATED_SMS = 132


def sm_count() -> int:
    """The SMs of this GPU; on the CPU emulator, EMULATED_SMS."""
    if name() == "gpu":
        return current().device_info().sm_count
    return EMULATED_SMS


def max_shared_per_block() -> tuple[int, str]:
    """The shared memory a block may have, in bytes, and on what: the GPU's own opt-in limit, or on the CPU
    emulator that of the architecture it stands for (arch(): TBT_ARCH, else sm_90), so that a launch that
    would fail on that GPU fails here too."""
    if name() == "gpu":
        return current().max_shared_per_block(), "this GPU"
    a = arch()
    return ARCHS[a].max_shared_per_block, (f"{a}, the GPU the emulator stands for ({ARCH_ENV_VAR}"
                                           f"{'' if os.environ.get(ARCH_ENV_VAR, '').strip() else ' unset'})")


def banner() -> str:
    """Which backend runs the kernels, and on what. On the emulator a second line says what that
    means for a learner and how to get a GPU."""
    text = current().banner()
    return text + "\n" + emulator_note() if name() == "cpu" else text


def emulator_note() -> str:
    """For a first-time learner on the CPU emulator: what works, what does not, what to do."""
    what = ("What this means: every notebook and exercise works here. Your kernels are compiled, run, "
            "checked and traced exactly as written, only much slower than on a GPU, so cells that time "
            "kernels show the committed GPU measurements (results/) instead.")
    forced = (_forced or os.environ.get(ENV_VAR, "")).strip().lower() == "cpu"
    if forced:
        return f"{what} {ENV_VAR}=cpu chose the emulator; unset it to use a GPU where there is one."
    if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ:
        return (f"{what} For a GPU on Colab: Runtime > Change runtime type > a GPU, then run the notebook "
                f"from the top.")
    return (f"{what} On a machine with an NVIDIA GPU and CuPy (cupy-cuda12x, in requirements.txt) the "
            f"GPU is used without any setting.")

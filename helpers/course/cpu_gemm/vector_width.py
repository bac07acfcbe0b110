"""Lets LLVM use 512-bit vectors on AVX-512 cores, before Numba compiles anything.

On Intel cores with AVX-512, LLVM by default prefers 256-bit vectors (a tuning flag from the days
when 512-bit code lowered the clock). OpenBLAS uses 512-bit registers there, so to compare like
with like the package asks LLVM for full-width vectors by setting NUMBA_CPU_FEATURES, unless you
set it yourself. ceilings.vector_bits() reports what the compiled code really uses.

Importing this module does it. The package's __init__ imports it before any module that imports
numba (and those import it first too), so it runs first however the package is reached.
"""

from __future__ import annotations

import os
import platform


def prefer_full_width_vectors() -> None:
    """On x86-64 with AVX-512, lets LLVM use 512-bit vectors. Only takes effect if Numba has
    compiled nothing yet in this process; never overrides a NUMBA_CPU_FEATURES you set."""
    if "NUMBA_CPU_FEATURES" in os.environ or platform.machine().lower() not in ("x86_64", "amd64"):
        return
    try:
        import llvmlite.binding as ll    # llvmlite only, not numba: numba must not load first
        features = ll.get_host_cpu_features()
    except Exception:   # no llvmlite or no host features: Numba's defaults apply
        return
    if features.get("avx512f"):
        os.environ["NUMBA_CPU_FEATURES"] = features.flatten() + ",-prefer-256-bit"


prefer_full_width_vectors()

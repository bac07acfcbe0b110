"""Stages 06 to 09 in many configurations on the CPU emulator: right on edge-heavy shapes, and clean
traces (no shared-memory race, no read of unwritten shared memory, every 16-byte global access
16-byte aligned, and the float4 kernels taking 16-byte accesses where K % 4 == N % 4 == 0).

The configurations: every registered one of these stages, and more that stress the templates
(BK from 2 to 16, one-warp blocks, 2 to 5 stages, 3 x 3 thread tiles, PAD 0 and 4). (Was
tools/experiments/check_06_09.py until commit 6313ef7.) The emulator copies every array to a page-aligned buffer, so a
kernel's fallback for misaligned pointers runs only on a GPU: the last test, on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.core import stages
from helpers.core.configs import (AsyncCopyConfig, DoubleBufferConfig, PaddedTile2DConfig, ThreadTile2DConfig,
                                  VectorizedConfig, WarpTileConfig)
from helpers.measure import memory, trace, verify
from helpers.run import backend, gemm

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

STAGES = ("06", "07", "08", "09")
VECTORIZED = ("07", "08", "09")  # float4 global accesses

# (BM, BN, BK, TM, TN): stage 05's default, the 8 x 8 ones and its alternatives, for the three fixes of 06.
THREAD_TILES_05 = ((128, 128, 16, 16, 4), (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (16, 16, 4, 2, 2),
                   (12, 12, 4, 3, 3), (64, 32, 8, 8, 4))
EXTRA = [
    *[("06_padded", PaddedTile2DConfig(*c)) for c in THREAD_TILES_05],
    *[("06_transposed_a", ThreadTile2DConfig(*c)) for c in THREAD_TILES_05],
    *[("06_swizzled", ThreadTile2DConfig(*c)) for c in THREAD_TILES_05],
    ("06_padded", PaddedTile2DConfig(128, 128, 8, 8, 8, PAD=4)), ("06_padded", PaddedTile2DConfig(12, 12, 4, 3, 3, PAD=0)),
    *[("07_vectorized", VectorizedConfig(*c)) for c in (
        (128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 256, 16, 8, 8), (256, 128, 16, 8, 8), (128, 64, 16, 8, 4),
        (64, 64, 16, 4, 4), (64, 32, 8, 8, 4), (16, 16, 8, 4, 4), (16, 32, 4, 4, 8))],
    # (BM, BN, BK, WM, WN, TM, TN): 8 x 8 and 8 x 16 results, 256 and 128 threads, one-warp blocks
    *[("08_warp_tiling", WarpTileConfig(*c)) for c in (
        (128, 128, 8, 32, 64, 8, 8), (128, 128, 16, 64, 32, 8, 8), (128, 256, 8, 64, 64, 8, 16),
        (256, 128, 8, 64, 64, 16, 8), (128, 128, 8, 64, 64, 8, 16), (64, 64, 8, 32, 32, 4, 8), (32, 64, 8, 32, 64, 8, 8))],
    *[("09_double_buffering", DoubleBufferConfig(*c, MIN_BLOCKS=m)) for *c, m in (
        (128, 128, 8, 32, 64, 8, 8, 2), (128, 128, 16, 32, 64, 8, 8, 2), (128, 256, 8, 64, 64, 8, 16, 1),
        (128, 128, 8, 64, 64, 8, 16, 2), (64, 64, 8, 32, 32, 4, 8, 1), (32, 64, 4, 32, 64, 8, 8, 1))],
    *[("09_async_copy", AsyncCopyConfig(*c, STAGES=s, MIN_BLOCKS=m)) for *c, s, m in (
        (128, 128, 8, 32, 64, 8, 8, 3, 2), (128, 128, 8, 32, 64, 8, 8, 2, 2), (128, 128, 8, 32, 64, 8, 8, 4, 2),
        (128, 128, 16, 32, 64, 8, 8, 2, 2), (128, 256, 8, 64, 64, 8, 16, 3, 1), (256, 128, 8, 64, 64, 16, 8, 3, 1),
        (128, 128, 8, 64, 64, 8, 16, 3, 2), (64, 64, 8, 32, 32, 4, 8, 3, 1), (32, 64, 2, 32, 64, 8, 8, 5, 1))],
]


# On the CPU, where every configuration is a build of a few seconds to a minute, the registered ones and one
# extra of each kernel with a property none of them has (a pad of 4, a BK of 4, 4 x 8 thread tiles, 5 stages);
# on a GPU, where a build is quick, every one of EXTRA as well.
EXTRA_ON_CPU = [("06_padded", PaddedTile2DConfig(128, 128, 8, 8, 8, PAD=4)),
                ("07_vectorized", VectorizedConfig(16, 32, 4, 4, 8)),
                ("08_warp_tiling", WarpTileConfig(64, 64, 8, 32, 32, 4, 8)),
                ("09_async_copy", AsyncCopyConfig(32, 64, 2, 32, 64, 8, 8, STAGES=5, MIN_BLOCKS=1))]
assert all(e in EXTRA for e in EXTRA_ON_CPU)


def _entries(extra) -> list[tuple[str, object]]:
    registered = [(v.name, c) for s in STAGES for v in stages.stage(s).variants for c in (v.default, *v.alternatives)]
    out = []
    for e in registered + extra:
        if e not in out:
            out.append(e)
    return out


def _ids(entries):
    return [f"{name}<{', '.join(map(str, config.template_args()))}>" for name, config in entries]


ENTRIES = _entries(EXTRA_ON_CPU)
IDS = _ids(ENTRIES)
ALL_ENTRIES = _entries(EXTRA)

SHAPES = (verify.Shape("1x1x1", 1, 1, 1, 1.0, 0.0), verify.Shape("7x5x3", 7, 5, 3, 1.0, 0.0),
          verify.Shape("4x4x4", 4, 4, 4, 1.0, 0.0), verify.Shape("33x65x17", 33, 65, 17, 1.5, 0.0),
          verify.Shape("64^3", 64, 64, 64, 1.0, 0.0), verify.Shape("K = 8", 128, 128, 8, 1.0, 0.0),
          verify.Shape("non-multiples", 257, 193, 139, -0.5, 0.0),
          verify.Shape("unchecked tiles, then a partial one", 129, 131, 515, 1.0, 0.0),
          verify.Shape("beta != 0", 67, 133, 36, 1.25, -0.75))
TRACE_SHAPES = ((131, 133, 37),   # every edge partial; K % 4 != 0, N % 4 != 0
                (136, 132, 40))   # partial edge tiles with K % 4 == N % 4 == 0


@pytest.mark.parametrize("name, config", ENTRIES, ids=IDS)
def test_right_on_edge_heavy_shapes(name, config, cpu_backend):
    report = verify.check_catalogue(stages.variant(name), config, shapes=SHAPES)
    assert report.ok, str(report)


@pytest.mark.parametrize("M, N, K", TRACE_SHAPES, ids=["K, N odd", "K, N multiples of 4"])
@pytest.mark.parametrize("name, config", ENTRIES, ids=IDS)
def test_traces_are_clean(name, config, M, N, K, cpu_backend):
    t = trace.capture_variant(stages.variant(name), config, M, N, K)
    assert t.dropped == 0, f"the trace dropped {t.dropped} accesses"
    assert memory.races(t) == []
    assert memory.unwritten_reads(t) == []
    wide_global = t.records[(t.records["space"] == trace.SPACES.index("global")) & (t.records["size"] == 16)]
    misaligned = int((wide_global["offset"] % 16 != 0).sum())
    assert misaligned == 0, f"{misaligned} misaligned 16-byte global accesses"
    if name[:2] in VECTORIZED and K % 4 == 0 and N % 4 == 0:
        assert (t.records["size"] == 16).any(), "no 16-byte access although K % 4 == N % 4 == 0"


@pytest.mark.gpu
@pytest.mark.parametrize("name, config", [e for e in ALL_ENTRIES if e[0][:2] in VECTORIZED],
                         ids=[i for i, e in zip(_ids(ALL_ENTRIES), ALL_ENTRIES) if e[0][:2] in VECTORIZED])
def test_misaligned_pointers_fall_back_to_4_byte_accesses_on_a_gpu(name, config):
    """A, B and C one float past a 16-byte boundary, K % 4 == N % 4 == 0: the kernel must see that
    its pointers are not 16-byte aligned and copy with 4-byte accesses (on a GPU a misaligned float4
    access faults; the emulator's page-aligned copies never are misaligned)."""
    import cupy as cp

    backend.use("gpu")
    try:
        variant = stages.variant(name)
        M, N, K = 260, 136, 132
        s = verify.Shape("pointers + 4 bytes", M, N, K, 1.25, -0.75)
        A, B, C0 = verify.random_operands(s, np.random.default_rng())

        def shifted(a):
            flat = cp.empty(a.size + 1, cp.float32)
            view = flat[1:].reshape(a.shape)
            view[...] = cp.asarray(a)
            assert view.data.ptr % 16 == 4
            return view

        dA, dB, dC = shifted(A), shifted(B), shifted(C0)
        gemm.kernel_for(variant, config)(config.grid(M, N), config.block(),
                                         gemm.launch_args(M, N, K, s.alpha, dA, dB, s.beta, dC), config.shared_bytes())
        C = cp.asnumpy(dC)
        ref, tol = verify.reference(A, B, C0, s.alpha, s.beta)
        check = verify.compare(C, C0, ref, tol, s)
        assert check.ok, check.details()
    finally:
        backend.use(None)

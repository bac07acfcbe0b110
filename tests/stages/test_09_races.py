"""Stage 09's synchronization, broken on purpose: the emulator's race check catches each break.

Each mutation changes one line of kernels/09_two_buffers.cu, 09_double_buffering.cu or 09_async_copy.cu in a
copy under tmp_path (the kernels themselves are never touched); a trace of the copy's block 0 must
show a shared-memory race (memory.races) or a read of shared memory nobody wrote
(memory.unwritten_reads). The kernels as written are run whole, right, and their first, middle and
last blocks traced clean. The shape has every edge partial and K % 4 == N % 4 == 0, so interior
blocks such as block 0 run the unchecked loops too. (Was tools/experiments/race_09.py until commit 6313ef7.) CPU
emulator only: no GPU needed.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.core import stages
from helpers.core.configs import AsyncCopyConfig, DoubleBufferConfig
from helpers.measure import memory, trace, verify
from helpers.run import gemm
from helpers.run.kernel_loader import load_kernel

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

M, N, K = 131, 132, 76
# Small configurations (128 threads, 64 x 64 tiles): 3 x 3 blocks, edge blocks partial in M and N.
KERNELS = {
    "09_two_buffers": DoubleBufferConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=1),
    "09_double_buffering": DoubleBufferConfig(64, 64, 8, 32, 32, 4, 8, MIN_BLOCKS=1),
    "09_async_copy": AsyncCopyConfig(64, 64, 8, 32, 32, 4, 8, STAGES=3, MIN_BLOCKS=1),
}
# (kernel, what the break is, the line as written, its replacement)
MUTATIONS = [
    ("09_two_buffers", "no barrier after storing the next tiles (interior tiles)",
     "    __syncthreads();  // tiles t+1 are complete, and tiles t read, before anyone goes on", ""),
    ("09_two_buffers", "the next tiles stored into the buffer in use",
     "    store_tiles(1);  // last read during tiles t-1, before the barrier that ended them",
     "    store_tiles(0);"),
    ("09_double_buffering", "no barrier after storing the next tiles",
     "        __syncthreads();  // the next tiles are complete before anyone reads them", ""),
    ("09_double_buffering", "the next tiles stored into the buffer in use, before its last values are read",
     "        store_tiles(1 - s);", "        store_tiles(s);"),
    ("09_async_copy", "no barrier after waiting for tile t+1",
     "        __syncthreads();  // tile t+1 is everyone's, and everyone has read stage s for the last time", ""),
    ("09_async_copy", "waiting for one group too few (tile t+1 may still be in flight)",
     "        __pipeline_wait_prior(STAGES - 2);", "        __pipeline_wait_prior(STAGES - 1);"),
]


def _operands():
    rng = np.random.default_rng(7)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.full((M, N), verify.POISON, np.float32)  # beta = 0: an element never written keeps it
    return A, B, C


def _trace(path, name: str, blocks=None):
    variant, config = stages.variant(name), KERNELS[name]
    A, B, C = _operands()
    return trace.capture(path, variant.name_expression(config), config.grid(M, N), config.block(),
                         gemm.launch_args(M, N, K, 1.0, A, B, 0.0, C), blocks)


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_kernel_as_written_is_right_and_race_free(name, cpu_backend):
    variant, config = stages.variant(name), KERNELS[name]
    A, B, C = _operands()
    C0 = C.copy()
    load_kernel(variant.path, variant.name_expression(config))(
        config.grid(M, N), config.block(), gemm.launch_args(M, N, K, 1.0, A, B, 0.0, C))
    ref, tol = verify.reference(A, B, C0, 1.0, 0.0)
    check = verify.compare(C, C0, ref, tol, verify.Shape("race check", M, N, K, 1.0, 0.0))
    assert check.ok, check.details()
    t = _trace(variant.path, name)
    assert memory.races(t) == [] and memory.unwritten_reads(t) == [] and t.dropped == 0


@pytest.mark.parametrize("name, what, old, new", MUTATIONS, ids=[m[1] for m in MUTATIONS])
def test_each_break_of_the_synchronization_is_caught(name, what, old, new, tmp_path, cpu_backend):
    src = stages.variant(name).path
    text = src.read_text()
    assert text.count(old + "\n") == 1, f"{src.name} no longer has this line once (update MUTATIONS): {old!r}"
    broken = tmp_path / src.name
    broken.write_text(text.replace(old + "\n", new + "\n"))
    t = _trace(broken, name, blocks=(0,))  # one block: the race check takes seconds a block on a racy trace
    races, unwritten = memory.races(t), memory.unwritten_reads(t)
    assert races or unwritten, f"{src.name}, {what}: the trace shows no race and no read of unwritten shared memory"
    # Every race the check reports involves a line of the kernel, named by its number in the copy.
    lines = len(broken.read_text().splitlines())
    assert all(1 <= r.first[1] <= lines and 1 <= r.second[1] <= lines for r in races), races[:2]

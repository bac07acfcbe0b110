"""Every configuration the TF32 dispatcher weighs (dispatch_tf32.options in helpers/run/dispatch_tf32.py: 256 x 128,
128 x 128 and 128 x 64 tiles of 11_stream_k, SK_WAVES 0, 1 and 2, and SLICES where every tile can be shared) computes
the right product on the CPU emulator at every shape of the catalogue, exactly as the model would launch it there (its
SLICES, for the emulator's 132 SMs); and the parts of a split-K launch are added in one order, run after run."""

import numpy as np
import pytest

from helpers.core import stages
from helpers.measure import verify
from helpers.run import backend, dispatch_tf32, gemm

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

VARIANT = stages.variant(dispatch_tf32.STREAM_K_VARIANT)


@pytest.mark.parametrize("shape", verify.CATALOGUE, ids=lambda s: s.name)
def test_every_option_is_right_at_every_shape_of_the_catalogue(cpu_backend, rng, shape):
    opts = dispatch_tf32.options(shape.M, shape.N, shape.K, backend.sm_count())
    assert {(c.BM, c.CONSUMERS) for c in opts} == set(dispatch_tf32.TILE_SHAPES)
    wrong = []
    for config in opts:
        check = verify.check(VARIANT, shape, config, rng)
        if not check.ok:
            wrong.append(f"{config.label()}: {check.details()}")
    assert not wrong, "\n".join(wrong)


def test_the_catalogue_meets_split_k_where_it_can():
    # SLICES is weighed (and so verified above) at the catalogue's shapes with few tiles and K long enough
    sliced = [s.name for s in verify.CATALOGUE
              if any(c.SLICES for c in dispatch_tf32.options(s.M, s.N, s.K, backend.EMULATED_SMS))]
    assert {"long K", "large"} <= set(sliced), sliced


@pytest.mark.parametrize("slices", [2, 3, 5])
def test_split_k_at_odd_sides_and_a_k_that_no_slice_count_divides(cpu_backend, rng, slices):
    # 257 x 193 x 139: 5 k-tiles, partial tiles on both sides; the model would not slice it, the kernel must still be right
    shape = verify.shape("non-multiples of every tile")
    for bm, consumers in dispatch_tf32.TILE_SHAPES:
        config = VARIANT.config(BM=bm, CONSUMERS=consumers, STAGES=4, SK_WAVES=1, SLICES=slices)
        check = verify.check(VARIANT, shape, config, rng)
        assert check.ok, f"{config.label()}: {check.details()}"


def test_split_k_parts_are_added_in_one_order_every_run(cpu_backend, rng):
    config = next(c for c in dispatch_tf32.options(33, 9, 4097, backend.sm_count()) if c.SLICES and c.BM == 128)
    A = rng.uniform(-1, 1, (33, 4097)).astype(np.float32)
    B = rng.uniform(-1, 1, (4097, 9)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (33, 9)).astype(np.float32)
    first = gemm.run(VARIANT, A, B, C0, 1.5, -0.5, config)
    again = gemm.run(VARIANT, A, B, C0, 1.5, -0.5, config)
    assert np.array_equal(first, again) and config.parts(33, 9, 4097, config.launch_grid(33, 9, 132)[0]) == config.SLICES

"""Every registered kernel is correct on the whole shape catalogue, on the active backend."""

import pytest

from helpers import backend, stages, verify


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_variant_correct_on_catalogue(variant):
    report = verify.check_catalogue(variant)
    assert report.ok, str(report)


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_variant_correct_on_the_emulator_with_other_block_shapes(variant, cpu_backend):
    for bx, by in ((32, 8), (7, 5), (1, 64)):
        config = variant.config(block_x=bx, block_y=by)
        shapes = (verify.shape("primes"), verify.shape("non-multiples of every tile"))
        report = verify.check_catalogue(variant, config, shapes=shapes)
        assert report.ok, f"{backend.name()}: {report}"

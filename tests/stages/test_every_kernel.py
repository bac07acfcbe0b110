"""Every registered kernel is correct on the whole shape catalogue, on the active backend."""

import pytest

from helpers.run import backend
from helpers.core import stages
from helpers.measure import verify

pytestmark = pytest.mark.emulator


@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_variant_correct_on_catalogue(variant):
    if backend.name() == "gpu" and (why := variant.unsupported_on(backend.current().device_info().compute_capability)):
        pytest.skip(why)
    report = verify.check_catalogue(variant)
    assert report.ok, str(report)


@pytest.mark.slow
@pytest.mark.parametrize("variant", stages.variants(), ids=lambda v: v.name)
def test_variant_correct_on_the_emulator_with_its_other_configurations(variant, cpu_backend):
    assert variant.alternatives, f"{variant.name} lists no alternative configurations to verify"
    shapes = (verify.shape("primes"), verify.shape("non-multiples of every tile"))
    others = dict.fromkeys((*variant.alternatives, *variant.arch_defaults.values()))   # and other GPUs' defaults
    for config in others:
        report = verify.check_catalogue(variant, config, shapes=shapes)
        assert report.ok, f"{backend.name()}: {report}"

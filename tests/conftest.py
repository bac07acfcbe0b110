"""Shared test setup: the backend under test, and GPU tests that skip cleanly without a GPU."""

import numpy as np
import pytest

from helpers.run import backend


def pytest_report_header(config):
    return backend.banner()


def pytest_collection_modifyitems(config, items):
    if backend.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; CuPy sees none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.fixture
def cpu_backend():
    """Runs a test on the CPU emulator whatever the machine has, then restores the choice."""
    backend.use("cpu")
    yield
    backend.use(None)

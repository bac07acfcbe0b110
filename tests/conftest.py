"""Shared test setup: the backend under test, GPU tests that skip cleanly without a GPU, and the `emulator` mark
kept honest (a test that builds or runs a kernel on the emulator says so, so `-m "not emulator"` runs without a C++
compiler)."""

import numpy as np
import pytest

from helpers.emulator import compiler, launcher
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


@pytest.fixture(autouse=True)
def _emulator_mark_is_honest(request, monkeypatch):
    """Fails a test that reaches the emulator's compiler or launcher in this process without the `emulator` mark.
    (What a test runs in another process, the command line or a sandbox, it marks by hand.)"""
    if request.node.get_closest_marker("emulator"):
        yield
        return
    reached = []
    for module, name in ((compiler, "find_compiler"), (launcher, "_launch")):
        real = getattr(module, name)

        def watched(*args, _real=real, _name=name, **kwargs):
            reached.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, watched)
    yield
    if reached:
        pytest.fail(f"{request.node.nodeid} used the CPU emulator ({reached[0]}) without the `emulator` mark: add "
                    f"`pytestmark = pytest.mark.emulator` to its module, or `@pytest.mark.emulator` to the test",
                    pytrace=False)

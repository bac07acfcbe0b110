"""The test tiers, and checks that run beside nbval on the outputs of each notebook as it runs (tests/conftest.py
holds the unit tests' setup).

Tiers (pytest.ini lists the markers): a notebook executed by nbval is `notebook`, `slow` and `emulator`, a test of
tests/e2e/ (the command line, Jupyter, a browser, Colab: each starts processes) `e2e`, `slow` and `emulator`; tests
declare `emulator` (it builds or runs kernels on the CPU emulator: it needs a C++ compiler; tests/conftest.py
checks that the mark is there), `slow` (over about 5 s on 2 cores with a warm build cache) and `gpu` themselves.
The quick tier for everyday work is `pytest -m "not slow"`; the whole suite is plain `pytest` (README).

As nbval executes a notebook of stages 02-10, every cell's outputs are kept; a cell that calls an
exercise checker fails if a cell above it printed that exercise's right answer
(helpers/maintain/answers_on_screen.py; tests/maintain/test_answers_off_screen.py checks the committed
notebooks the same way without running them).

The check is imported only when a notebook's cell is reported: it loads the course's exercises (and with them
the instruments, numba and matplotlib), which the unit tests of the lower layers (`pytest tests/core`) need not.
"""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_sessionstart(session):
    """The emulator's runtime, which every kernel's build links, built once before pytest-xdist starts its workers
    (each would otherwise build it at its first kernel, at the same time)."""
    if hasattr(session.config, "workerinput"):
        return    # a worker: the controller built it
    from helpers.core.errors import CompilerNotFoundError
    from helpers.emulator import compiler
    try:
        compiler.runtime_object()
    except CompilerNotFoundError:
        pass      # no C++ compiler: the emulator's tests say so themselves


# The files that take longest, longest first (seconds alone on 2 cores, `-n 0`, while other work ran beside):
# started first, each runs beside the others instead of ending the run on one worker while the other waits
START_FIRST = ("tests/stages/test_every_kernel.py",      # 125
               "tests/teach/test_grading_bar.py",        # 105, one test
               "tests/teach/test_sandbox.py",            # 100
               "tests/e2e/test_cli.py",                  # 95
               "tests/teach/test_teacher.py",            # 75
               "tests/emulator/test_cache_faults.py",    # 65
               "tests/e2e/test_cli_attacks.py",          # 60
               "tests/e2e/test_cli_exercise.py")         # 50
# Timed on this machine for a learner's quiet one (the explorer's answer within 2 s): last, after the long files and
# the grading bar's two jobs, whose load beside it once took a move to 2.12 s
START_LAST = ("tests/views/test_explorer_speed.py",)


def pytest_collection_modifyitems(config, items):
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(HERE).parts
        if where[0] == "notebooks":       # a notebook runs the course's kernels, on the emulator where there is no GPU
            for mark in (pytest.mark.notebook, pytest.mark.slow, pytest.mark.emulator):
                item.add_marker(mark)
        elif where[:2] == ("tests", "e2e"):   # as a learner runs the course: kernels built and run
            for mark in (pytest.mark.e2e, pytest.mark.slow, pytest.mark.emulator):
                item.add_marker(mark)
    items[:] = long_files_first(items)


def long_files_first(items: list) -> list:
    """The order pytest-xdist hands whole files (--dist loadfile) to its workers (--no-loadscope-reorder: this
    order, not xdist's own, most tests first, which put the longest file of all, one test, last): START_FIRST's
    files, then the other files holding a slow test, then the quick files, each group most tests first, then
    START_LAST's. A file's items stay together and in their order (a notebook's cells run top to bottom)."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def rank(name: str) -> tuple[int, int]:
        if name in START_FIRST:
            return START_FIRST.index(name), 0
        if name in START_LAST:
            return len(START_FIRST) + 2, START_LAST.index(name)
        quick = not any(item.get_closest_marker("slow") for item in files[name])
        return len(START_FIRST) + quick, -len(files[name])
    return [item for name in sorted(files, key=rank) for item in files[name]]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if type(item).__name__ == "IPyNbCell":    # nbval's notebook cell
        from helpers.maintain import answers_on_screen
        answers_on_screen.nbval_report(item, call, outcome.get_result())

"""Checks that run beside nbval, on the outputs of each notebook as it runs (tests/conftest.py holds the
unit tests' setup).

As nbval executes a notebook of stages 02-10, every cell's outputs are kept; a cell that calls an
exercise checker fails if a cell above it printed that exercise's right answer
(helpers/maintain/answers_on_screen.py; tests/maintain/test_answers_off_screen.py checks the committed
notebooks the same way without running them).

The check is imported only when a notebook's cell is reported: it loads the course's exercises (and with them
the instruments, numba and matplotlib), which the unit tests of the lower layers (`pytest tests/core`) need not.
"""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if type(item).__name__ == "IPyNbCell":    # nbval's notebook cell
        from helpers.maintain import answers_on_screen
        answers_on_screen.nbval_report(item, call, outcome.get_result())

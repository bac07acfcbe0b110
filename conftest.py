"""Checks that run beside nbval, on the outputs of each notebook as it runs (tests/conftest.py holds the
unit tests' setup).

As nbval executes a notebook of stages 02-10, every cell's outputs are kept; a cell that calls an
exercise checker fails if a cell above it printed that exercise's right answer
(helpers/course/answers_on_screen.py; tests/course/test_answers_off_screen.py checks the committed
notebooks the same way without running them).
"""

import pytest

from helpers.maintain import answers_on_screen


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    answers_on_screen.nbval_report(item, call, outcome.get_result())

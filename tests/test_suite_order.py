"""The order the whole suite runs in (conftest.py, long_files_first): pytest-xdist hands whole files to its workers
in collection order, the longest first, so that no long file ends the run on one worker while the other waits."""

import configparser

from helpers.core.paths import ROOT


def _root_conftest(config):
    return config.pluginmanager.get_plugin(str(ROOT / "conftest.py"))


def test_each_file_started_first_or_last_exists(request):
    conftest = _root_conftest(request.config)
    missing = [name for name in conftest.START_FIRST + conftest.START_LAST if not (ROOT / name).is_file()]
    assert not missing, f"conftest.py START_FIRST or START_LAST names files that are not there (renamed or gone?): {missing}"


def test_the_run_keeps_the_order_long_files_first_and_each_files_items_together(request):
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "pytest.ini")
    assert "--no-loadscope-reorder" in ini["pytest"]["addopts"].split(), "xdist would order the files its own way"
    files = [item.nodeid.split("::", 1)[0] for item in request.session.items]
    runs = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(runs) == len(set(runs)), "a file's items are split apart"
    started_first = [f for f in _root_conftest(request.config).START_FIRST if f in runs]
    assert runs[:len(started_first)] == started_first
    started_last = [f for f in _root_conftest(request.config).START_LAST if f in runs]
    assert not started_last or runs[-len(started_last):] == started_last

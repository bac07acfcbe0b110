"""Maintainers' scripts (tools/README.md says what each is and which results it made).

Run them from the repository root as modules, as `python -m helpers` runs: `python -m tools.NAME`,
`python -m tools.experiments.NAME`; the root then is on the path, and each takes it from
helpers.core.paths.
"""

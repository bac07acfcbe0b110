"""One-off GPU experiments whose results are committed under results/ (tools/README.md lists them).

Run from the repository root: `python -m tools.experiments.NAME ...` on a GPU.
"""

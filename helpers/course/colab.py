"""Google Colab: where the course lives on GitHub, the "Open in Colab" badge, the first code cell
of every notebook, and what a Colab runtime installs.

GITHUB_REPO is the one place that names the course's GitHub repository. After changing it (for a
fork, say), run `python tools/colab_badges.py`: it rewrites every notebook's badge and first code
cell (which clones this repository on Colab). tests/e2e/test_colab.py fails while a notebook is out of
date.

Standard library only: the first cell imports this module right after finding the course (or, on
Colab, cloning it), before anything else is installed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.core.paths import ROOT
GITHUB_REPO = "tile-by-tile/tile-by-tile"   # owner/name on GitHub: change it here, then run tools/colab_badges.py
BRANCH = "main"
CLONE_DIR = "/content/tile-by-tile"          # where a Colab runtime clones the course

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"

# What the notebooks import (by distribution name). Colab ships most of them; tools for
# development (jupyterlab, pytest, nbval, nbclient) are not needed there. Versions come from
# requirements.txt, and only what is missing is installed: upgrading a package Colab has already
# imported (numpy, ipywidgets 7) would need a restart of the runtime.
NOTEBOOK_PACKAGES = ("numpy", "matplotlib", "pandas", "ipywidgets", "tqdm", "numba", "threadpoolctl",
                     "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12")
CUPY = "cupy-cuda12x"


def on_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def repo_url() -> str:
    return f"https://github.com/{GITHUB_REPO}"


def colab_url(notebook: str) -> str:
    """Colab's address of notebooks/NAME.ipynb on GitHub (NAME with or without .ipynb)."""
    name = Path(notebook).name
    name = name if name.endswith(".ipynb") else f"{name}.ipynb"
    return f"https://colab.research.google.com/github/{GITHUB_REPO}/blob/{BRANCH}/notebooks/{name}"


def badge(notebook: str) -> str:
    """The markdown of the notebook's "Open in Colab" badge."""
    return f"[![Open In Colab]({BADGE_IMAGE})]({colab_url(notebook)})"


def is_badge_cell(cell) -> bool:
    return cell.get("cell_type") == "markdown" and BADGE_IMAGE in cell.get("source", "")


# The first code cell of every notebook, identical in all of them (tests/e2e/test_colab.py checks).
# Outside Colab it does what it always did: find the folder holding helpers/ from the working
# directory up, and print the banner. On Colab, with no course around, it clones GITHUB_REPO
# into CLONE_DIR first and installs what Colab lacks (install_missing).
FIRST_CELL_TEMPLATE = """\
# Every notebook of the course starts with this cell: it finds the course's root (the folder
# holding helpers/) and says which backend runs the kernels, and on what. On Google Colab it
# first fetches the course from GitHub and installs what Colab lacks (helpers/course/colab.py).
import os, subprocess, sys
from pathlib import Path
ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "helpers" / "__init__.py").is_file()), None)
if ROOT is None and ("google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ):
    ROOT = Path("{clone_dir}")
    if not (ROOT / "helpers" / "__init__.py").is_file():
        subprocess.run(["git", "clone", "-q", "--depth=1", "-b", "{branch}", "{url}", str(ROOT)], check=True)
    os.chdir(ROOT / "notebooks")
if ROOT is None:
    raise FileNotFoundError(f"no helpers/ in {{Path.cwd()}} or above it: start Jupyter in the course's folder.")
sys.path.insert(0, str(ROOT))
from helpers import backend, colab
colab.install_missing()   # on Colab: what the course needs and Colab lacks; elsewhere nothing
print(backend.banner())"""


def first_cell() -> str:
    return FIRST_CELL_TEMPLATE.format(clone_dir=CLONE_DIR, branch=BRANCH, url=repo_url())


def _pins(requirements: Path) -> dict[str, str]:
    """{distribution name (lower case): 'name==version'} from requirements.txt."""
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"([A-Za-z0-9_.\-]+)\s*==", line)
        if m:
            pins[m.group(1).lower()] = line
    return pins


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def missing(requirements: Path | None = None) -> list[str]:
    """The requirement lines of NOTEBOOK_PACKAGES (and of CuPy, where there is a GPU but no CuPy)
    that this Python lacks."""
    pins = _pins(requirements or ROOT / "requirements.txt")
    wanted = [pins.get(n, n) for n in NOTEBOOK_PACKAGES if not _installed(n)]
    has_cupy = any((d.metadata["Name"] or "").lower().startswith("cupy") for d in importlib.metadata.distributions())
    if not has_cupy and shutil.which("nvidia-smi"):
        wanted.append(pins.get(CUPY, CUPY))
    return wanted


def install_missing(force: bool = False) -> list[str]:
    """On Colab (or with force): pip-installs what `missing` lists and returns it. Elsewhere: nothing."""
    if not (force or on_colab()):
        return []
    wanted = missing()
    if wanted:
        print(f"Colab: installing what the course needs and this runtime lacks: {', '.join(wanted)}")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *wanted], check=True)
        importlib.invalidate_caches()
    return wanted

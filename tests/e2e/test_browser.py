"""A learner's path through JupyterLab in a real browser: open stage 02's notebook, Run All Cells,
move the block_x slider of its panel, and see the figure and the printed numbers follow.

JupyterLab runs on 127.0.0.1 (a free port, a token) over a temporary copy of the course: the
notebook is copied, everything else is linked, autosave is off and nothing is saved, so the
repository's notebooks are never written. Headless Chromium is Debian's `chromium` package,
driven by the `playwright` Python package through `executable_path` (Playwright's own browser
download is never used). Without either, the test skips and says what to install.

What the panel shows is checked against the same helpers run here: its printed lines (all but the
random data's error and a GPU timing) must be the ones describe_block_shape prints, before and
after the move, and the numbers must change; its figure's <img> must change, and be the PNG that
draw_block_shape gives, as IPython renders it (a few pixels' leeway).

Screenshots (before and after the slider moves, and one on failure), the figures shown and
expected, the browser's console log and JupyterLab's log go to $TBT_ARTIFACTS when set, else to
pytest's tmp_path; a failure names the folder.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from helpers.core import paths

REPO = paths.ROOT
NOTEBOOK = "02_naive.ipynb"
PANEL_CELL = "widgets.block_shape_panel()"   # the cell whose output is the slider panel
VARIANT = "02_naive_coalesced"               # the panel's kernel at start
START, MOVED = (32, 32), (16, 32)            # (block_x, block_y) before and after one ArrowLeft on block_x

# Bounded waits, in seconds: generous for a 2-core CI machine on the CPU emulator.
SERVER_START_S = 90
PAGE_LOAD_S = 120
RUN_ALL_S = 240
SLIDER_UPDATE_S = 120
FIGURE_SETTLE_S = 15
FIGURE_TOLERANCE = 0.02   # share of pixels a shown figure may differ by from the one drawn here
TEST_TIMEOUT_S = 900      # the whole test, should several waits each run long (it takes ~30 s)

INSTALL_CHROMIUM = "install Debian's Chromium with `sudo apt-get install chromium`, or set TBT_CHROMIUM to its path"
INSTALL_PIP = "install the course's requirements with `.venv/bin/pip install -r requirements.txt`"


class FigureMismatch(AssertionError):
    """The panel redrew its figure, but not as the configuration draws it."""


def chromium_path() -> str | None:
    """$TBT_CHROMIUM, else Debian's `chromium` (or `chromium-browser`) on the PATH."""
    given = os.environ.get("TBT_CHROMIUM")
    if given:
        if not os.access(given, os.X_OK):
            pytest.skip(f"TBT_CHROMIUM={given} is not an executable: {INSTALL_CHROMIUM}")
        return given
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def working_copy(root: Path) -> Path:
    """A course folder holding a copy of NOTEBOOK (in notebooks/) and of figures/ (the notebook's
    Markdown shows them, and Jupyter serves no file whose real path lies outside its root), with
    links to the repository's other entries, so the notebook finds helpers/ and kernels/ and
    nothing in the repository is written."""
    course = root / "course"
    (course / "notebooks").mkdir(parents=True)
    for entry in REPO.iterdir():
        if entry.name in ("notebooks", "figures") or entry.name.startswith("."):
            continue
        (course / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "figures", course / "figures")
    shutil.copy2(REPO / "notebooks" / NOTEBOOK, course / "notebooks" / NOTEBOOK)
    return course


def lab_settings(folder: Path) -> Path:
    """User settings for this JupyterLab only: no autosave, no news prompt, the notebook's kernel
    started without the Select Kernel dialog, every cell kept in the page."""
    settings = {
        "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
    }
    for plugin, values in settings.items():
        path = folder / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return folder


@pytest.fixture
def artifacts(tmp_path) -> Path:
    """$TBT_ARTIFACTS/test_browser-<time>-<pid>/ when TBT_ARTIFACTS is set, else tmp_path/artifacts/."""
    given = os.environ.get("TBT_ARTIFACTS")
    run = f"test_browser-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    folder = Path(given) / run if given else tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def jupyterlab(tmp_path, artifacts):
    """JupyterLab on 127.0.0.1 over a working copy; yields (base URL, token, the notebook copy's path).
    Its log goes to artifacts."""
    course = working_copy(tmp_path)
    port, token = free_port(), uuid.uuid4().hex
    home = tmp_path / "jupyter"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"))
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={course}", f"--LabApp.user_settings_dir={lab_settings(home / 'settings')}",
            f"--LabApp.workspaces_dir={home / 'workspaces'}", "--LabApp.extension_manager=readonly"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    log_path = artifacts / "jupyterlab.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(args, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with status {server.returncode} before answering; log: {log_path}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer on {base} within {SERVER_START_S} s; log: {log_path}")
            time.sleep(0.5)
        yield base, token, course / "notebooks" / NOTEBOOK
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=20)


def wait_until(what: str, probe, done, timeout_s: float, interval_s: float = 0.25):
    """Polls state = probe() until done(state); returns that state. On timeout raises, naming what
    was awaited and the last state seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = probe()
        if done(state):
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; last seen: {state!r}")
        time.sleep(interval_s)


def stable_lines(text: str) -> list[str]:
    """The panel's printed lines whose numbers depend only on the configuration (not the random
    data's error, not a GPU timing)."""
    return [line for line in text.strip().splitlines() if not line.startswith(("Correctness", "GPU time"))]


def expected_panel(block_x: int, block_y: int) -> tuple[str, bytes]:
    """What the panel should print and draw for this block shape, computed here with the same
    helpers; the figure as the notebook's inline backend renders it (IPython's print_figure)."""
    import matplotlib.pyplot as plt
    from IPython.core.pylabtools import print_figure
    from helpers.views import widgets
    result = widgets.run_block_shape(VARIANT, block_x, block_y)
    fig = widgets.draw_block_shape(result)
    try:
        return widgets.describe_block_shape(result), print_figure(fig, "png")
    finally:
        plt.close(fig)


def figure_difference(shown: bytes, expected: bytes) -> str | None:
    """None when two PNGs show the same picture: the same size and at most FIGURE_TOLERANCE of the
    pixels differing (room for a timing in a GPU title); otherwise what differs."""
    import io
    import numpy as np
    from matplotlib.image import imread
    a, b = imread(io.BytesIO(shown)), imread(io.BytesIO(expected))
    if a.shape != b.shape:
        return f"{a.shape[1]} x {a.shape[0]} px where {b.shape[1]} x {b.shape[0]} were expected"
    differing = float(np.mean(np.any(np.abs(a - b) > 0.1, axis=-1)))
    return None if differing <= FIGURE_TOLERANCE else f"{differing:.1%} of its pixels differ from the expected figure"


# ---- what the page shows -------------------------------------------------------------------------
KERNEL_STATE_JS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const kernel = [...document.querySelectorAll('.jp-StatusBar-TextItem')].map(e => e.textContent.trim())
                   .find(t => t.includes(' | '));
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim());
  return {status: indicator ? indicator.dataset.status : null, kernel: kernel || null, prompts};
}"""


def kernel_state(page) -> dict | None:
    """The notebook toolbar's execution status, the status bar's kernel item ("Python 3 (ipykernel) | Idle")
    and the code cells' prompts ("[ ]:", "[*]:", "[3]:")."""
    return page.evaluate(KERNEL_STATE_JS)


def kernel_idle(state) -> bool:
    """A kernel is attached and idle. The toolbar alone says "idle" before any kernel is attached
    ("No Kernel | Initializing" in the status bar), and cells run then are silently dropped."""
    return bool(state and state["status"] == "idle" and state["kernel"]
                and not state["kernel"].startswith("No Kernel") and state["kernel"].endswith("| Idle"))


def all_cells_ran(state) -> bool:
    """The kernel is idle and the code cells are numbered 1, 2, ... in order: every one of them ran,
    in this fresh kernel (the file's own execution counts would not read so), none queued or running."""
    return kernel_idle(state) and bool(state["prompts"]) and \
        state["prompts"] == [f"[{i}]:" for i in range(1, len(state["prompts"]) + 1)]


def panel_view(panel, expected_png: bytes) -> dict:
    """The panel's block_x reading, its printed text, its figure's <img> src (a data: URL of the
    PNG the kernel sent) and how that figure differs from expected_png (None: it does not)."""
    readout = panel.locator(".widget-slider", has_text="block_x").locator(".widget-readout")
    out = panel.locator(".widget-output")
    img = out.locator("img")
    src = Src(img.first.get_attribute("src")) if img.count() else None
    return {"block_x": readout.inner_text() if readout.count() else None,
            "text": "\n".join(out.locator(".jp-OutputArea-output pre").all_inner_texts()),
            "img": src, "figure": figure_difference(src.png(), expected_png) if src else "no figure shown"}


class Src(str):
    """An <img> src (a data: URL): compares as the whole string, prints as its length and digest."""

    def __repr__(self):
        return f"<img src: {len(self)} chars, sha1 {hashlib.sha1(self.encode()).hexdigest()[:12]}>"

    def png(self) -> bytes:
        head, _, data = self.partition(",")
        assert head == "data:image/png;base64", f"the figure is not an inline PNG: {head[:80]}"
        return base64.b64decode(data)


# ---- the test ------------------------------------------------------------------------------------
@pytest.fixture
def chromium():
    """Debian's Chromium and Playwright's sync API, or a skip naming what is missing and how to install it.
    Requested before the jupyterlab fixture, so a skip starts no server."""
    exe = chromium_path()
    if exe is None:
        pytest.skip(f"no Chromium executable found: {INSTALL_CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(f"the playwright Python package is missing: {INSTALL_PIP} "
                    "(it drives Debian's Chromium; never run `playwright install`)")
    return exe, sync_playwright


@pytest.mark.timeout(TEST_TIMEOUT_S)
def test_slider_redraws_the_figure_and_numbers_in_jupyterlab(chromium, jupyterlab, artifacts):
    browser_exe, sync_playwright = chromium
    base, token, notebook = jupyterlab
    console: list[str] = []
    # Chromium refuses to run as root with its sandbox (Playwright's default launch leaves the
    # sandbox off as well; say so explicitly where it is required).
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_exe, headless=True,
                                    args=["--disable-dev-shm-usage"] + (["--no-sandbox"] if as_root else []))
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
        page.on("pageerror", lambda e: console.append(f"[pageerror] {e}"))
        try:
            run_learner_path(page, base, token, notebook, artifacts)
        except Exception as e:
            shot = artifacts / "failure.png"
            try:
                page.screenshot(path=str(shot), full_page=True)
            except Exception as shot_error:          # the page may be gone; keep the first error
                shot = f"(no screenshot: {shot_error})"
            raise AssertionError(f"{e}\n\nScreenshot: {shot}\nFigures shown and expected, panel screenshots: "
                                 f"{artifacts}/figure_*.png, panel_*.png\n"
                                 f"Browser console: {artifacts / 'console.log'}\n"
                                 f"JupyterLab log: {artifacts / 'jupyterlab.log'}") from e
        finally:
            (artifacts / "console.log").write_text("\n".join(console) + "\n")
            browser.close()


def run_learner_path(page, base: str, token: str, notebook: Path, artifacts: Path):
    page.set_default_timeout(PAGE_LOAD_S * 1000)
    page.goto(f"{base}/lab/tree/notebooks/{NOTEBOOK}?token={token}")
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell").first.wait_for(state="visible")
    # Run All acts on the cells rendered so far: wait for all of them, and for the kernel.
    code_cells = sum(c["cell_type"] == "code" for c in json.loads(notebook.read_text())["cells"])
    wait_until(f"the notebook's {code_cells} code cells to render and its kernel to be idle",
               lambda: kernel_state(page), lambda s: kernel_idle(s) and len(s["prompts"]) == code_cells,
               PAGE_LOAD_S)

    dialogs = page.locator(".jp-Dialog")
    assert dialogs.count() == 0, f"a dialog is open: {dialogs.first.inner_text()!r}"
    # Run > Run All Cells, through the menu bar as a learner would.
    prompts = kernel_state(page)["prompts"]
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item", has_text=re.compile(r"^Run All Cells")).click()
    wait_until("Run All Cells to start (a cell queued or numbered anew)", lambda: kernel_state(page),
               lambda s: s and ("[*]:" in s["prompts"] or s["prompts"] != prompts), PAGE_LOAD_S, interval_s=0.05)
    ran = wait_until("Run All Cells to settle (the kernel idle, no cell queued)", lambda: kernel_state(page),
                     lambda s: kernel_idle(s) and "[*]:" not in s["prompts"], RUN_ALL_S)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    if not all_cells_ran(ran):
        error = f"; first error output:\n{errors.first.inner_text()[:3000]}" if errors.count() else ""
        raise AssertionError(f"Run All Cells did not run every code cell in order: prompts {ran['prompts']}{error}")

    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=PANEL_CELL))
    assert cell.count() == 1, f"expected one cell running {PANEL_CELL!r}, found {cell.count()}"
    panel = cell.locator(".jp-OutputArea-output .widget-vbox").first
    panel.wait_for(state="visible", timeout=SLIDER_UPDATE_S * 1000)
    text, png = expected_panel(*START)
    before = wait_until(f"the panel to print and draw block {START}", lambda: panel_view(panel, png),
                        lambda v: v["img"] and f"block {START}" in v["text"], SLIDER_UPDATE_S)
    save_views(panel, before, png, artifacts, "before")
    assert before["block_x"] == str(START[0]), before
    assert stable_lines(before["text"]) == stable_lines(text), f"the panel printed\n{before['text']}\nnot\n{text}"
    if before["figure"] is not None:
        raise FigureMismatch(f"the panel's first figure is not the one block {START} draws: {before['figure']}")

    # One step left on block_x's handle: a settled change, as continuous_update=False waits for.
    handle = panel.locator(".widget-slider", has_text="block_x").locator(".noUi-handle")
    handle.focus()
    page.keyboard.press("ArrowLeft")
    text, png = expected_panel(*MOVED)
    moved = wait_until(f"the panel to print block {MOVED} after the slider moved", lambda: panel_view(panel, png),
                       lambda v: f"block {MOVED}" in v["text"], SLIDER_UPDATE_S)
    assert moved["block_x"] == str(MOVED[0]), moved
    shown = stable_lines(moved["text"])
    assert shown == stable_lines(text), f"the panel printed\n{moved['text']}\nbut block {MOVED} gives\n{text}"
    numbers = re.compile(r"\d+(?:\.\d+)?")
    assert numbers.findall("\n".join(shown)) != numbers.findall("\n".join(stable_lines(before["text"]))), \
        "the printed numbers did not change"
    try:
        changed = wait_until("the panel's figure to change after the slider moved", lambda: panel_view(panel, png),
                             lambda v: v["img"] and v["img"] != before["img"], SLIDER_UPDATE_S)
        # One redraw is one new <img>; a short grace covers a frontend still swapping outputs.
        try:
            wait_until(f"the new figure to be the one for block {MOVED}", lambda: panel_view(panel, png),
                       lambda v: v["img"] and v["img"] != before["img"] and v["figure"] is None, FIGURE_SETTLE_S)
        except TimeoutError as e:
            raise FigureMismatch(f"the figure changed after the slider moved, but is not the one block {MOVED} "
                                 f"draws: {panel_view(panel, png)['figure'] or changed['figure']}") from e
    finally:
        save_views(panel, panel_view(panel, png), png, artifacts, "after")


def save_views(panel, view: dict, expected_png: bytes, artifacts: Path, when: str):
    """A screenshot of the panel, the figure it shows and the one expected, into artifacts
    (best effort: a page that is gone must not hide the error being reported)."""
    (artifacts / f"figure_{when}_expected.png").write_bytes(expected_png)
    with contextlib.suppress(Exception):
        if view["img"]:
            (artifacts / f"figure_{when}.png").write_bytes(view["img"].png())
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=str(artifacts / f"panel_{when}.png"))

"""Builds every course panel in a real Jupyter kernel, moves its sliders, and prints what each
panel described: a check of the panels against the ipywidgets a kernel has, without a browser.
Made for Google Colab's ipywidgets 7.7 (the course pins 8); run in a throwaway environment:

    python3 -m venv ../ipyw77
    ../ipyw77/bin/pip install -r requirements.txt && ../ipyw77/bin/pip install ipywidgets==7.7.1 "ipykernel<7"
    ../ipyw77/bin/python -m ipykernel install --prefix ../ipyw77 --name python3
    ../ipyw77/bin/python -m tools.widgets_in_kernel     # from the repository root

Each panel's callback runs once when it is built and once per slider move; the count and the last
description are printed, and an ERROR line for any cell that raised. A callback's exception does
not reach the cell (ipywidgets' Output widget shows it inside the panel), so what each panel's
Output widget holds at the end is printed too: its text, each PNG's size and share of non-white
pixels (a blank figure shows 0%), and an ERROR line for a traceback in it.

A run takes about 20 s on the CPU emulator. On a loaded machine nbclient has now and then seen a
cell's reply only at the cell's timeout (900 s here; kernel and client both idle meanwhile): a
run of about 15 minutes with the same results, not a panel fault.
"""
import time
import nbformat
from nbclient import NotebookClient
cells = [
    # the course's own first cell, as committed
    None,
    "import ipywidgets, tqdm; print('ipywidgets', ipywidgets.__version__, 'tqdm', tqdm.__version__)",
    "from helpers.core import progress\nfrom helpers.course import cpu_gemm\nfrom helpers.views import widgets\n"
    "seen = []\n"
    "for f in ('describe_block_shape', 'describe_tile_config'):\n"
    "    orig = getattr(widgets, f)\n"
    "    setattr(widgets, f, (lambda orig: lambda r: seen.append(orig(r)) or seen[-1])(orig))\n"
    "p1 = widgets.block_shape_panel()\n"
    "kernel, bx, by = p1.children[0].children\n"
    "bx.value = 8; by.value = 4\n"
    "print(type(p1).__name__, [type(c).__name__ for c in p1.children[0].children])\n"
    "print(len(seen), 'descriptions; last:', seen[-1][:300])",
    "p2 = widgets.tile_explorer('05_2d_thread_tiling')\n"
    "sl = p2.children[0].children\n"
    "sl[-1].value = 8\n"
    "print([type(c).__name__ for c in sl]); print(len(seen), 'descriptions; last:', seen[-1][:400])",
    "p4 = widgets.tile_explorer('09_async_copy')\n"
    "sl = p4.children[0].children\n"
    "sl[2].value = 128; sl[-1].value = 4   # BN, STAGES\n"
    "print([type(c).__name__ for c in sl]); print(len(seen), 'descriptions; last:', seen[-1][:400])",
    "p5 = widgets.tile_explorer('10_tensor_cores')\n"
    "sl = p5.children[0].children\n"
    "sl[-2].value = 2   # STAGES\n"
    "print([type(c).__name__ for c in sl]); print(len(seen), 'descriptions; last:', seen[-1][:400])",
    "p3 = cpu_gemm.blocks_panel(size=64)\n"
    "print([type(c).__name__ for c in p3.children])",
    "import os; os.environ['TBT_PROGRESS'] = '1'\n"
    "print(progress.enabled(), progress._in_notebook())\n"
    "for _ in progress.bar(range(3), desc='demo'): pass\n"
    "print('bar ok')",
]
from helpers.core.paths import NOTEBOOKS
from helpers.course import colab
cells[0] = colab.first_cell()
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
t = time.time()
client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(NOTEBOOKS)}})
client.execute()


def show(where, o):
    if o.output_type == "stream":
        print(f"{where} {o.text.strip()[:600]}")
    elif o.output_type == "error":
        print(f"{where} ERROR {o.ename}: {o.evalue}")
    elif "image/png" in o.get("data", {}):
        import base64, io
        import matplotlib.image
        png = matplotlib.image.imread(io.BytesIO(base64.b64decode(o.data["image/png"])), format="png")
        ink = (png[..., :3] < 0.95).any(axis=-1).mean()
        print(f"{where} {o.output_type} image/png {png.shape[1]}x{png.shape[0]}, {ink:.0%} non-white")
    else:
        print(f"{where} {o.output_type} {list(o.get('data', {}))}")


for i, c in enumerate(nb.cells):
    for o in c.outputs:
        show(f"[{i}]", o)
# the panels' Output widgets, in the order they were built (what a browser would show in each)
panels = [s for s in client.widget_state.values() if s.get("_model_name") == "OutputModel"]
for k, state in enumerate(panels):
    print(f"Output widget {k}: {len(state.get('outputs', []))} outputs")
    for o in state.get("outputs", []):
        show(f"  <{k}>", nbformat.from_dict(o))
print(f"{time.time() - t:.0f} s")

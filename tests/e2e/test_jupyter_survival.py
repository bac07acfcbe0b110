"""A faulty kernel in a notebook raises an exception in its cell; the Jupyter kernel lives on.

Runs a real IPython kernel (this interpreter's `python3` kernel, through jupyter_client) with
TBT_BACKEND=cpu, and launches an out-of-bounds, a segfaulting, a divergent-barrier and an
endless kernel in it; after each, the kernel must still answer, and a correct launch must work.
"""

from __future__ import annotations

import os
import queue
import textwrap
import time

import pytest

from helpers.core import paths

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

REPO = paths.ROOT
CELL_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def jupyter():
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)  # keep the caller's
    env = dict(os.environ, TBT_BACKEND="cpu", TBT_TIMEOUT="2", PYTHONPATH=path)
    env.pop("TBT_WORKERS", None)
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", cwd=str(REPO), env=env,
                                                     startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code: str) -> dict:
    """Runs a cell; returns its reply content plus the text it printed and its result."""
    msg_id = kc.execute(textwrap.dedent(code))
    reply = kc.get_shell_msg(timeout=CELL_TIMEOUT_S)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=CELL_TIMEOUT_S)
    content = dict(reply["content"])
    outputs = []
    deadline = time.monotonic() + CELL_TIMEOUT_S
    while time.monotonic() < deadline:  # iopub: everything up to the kernel going idle again
        try:
            msg = kc.get_iopub_msg(timeout=5)
        except queue.Empty:
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, body = msg["msg_type"], msg["content"]
        if kind == "stream":
            outputs.append(body["text"])
        elif kind == "execute_result":
            outputs.append(body["data"].get("text/plain", ""))
        elif kind == "error":
            outputs.append("\n".join(body.get("traceback", [])))
        elif kind == "status" and body["execution_state"] == "idle":
            break
    content["output"] = "".join(outputs)
    return content


SETUP = f"""
    import sys, numpy as np
    sys.path.insert(0, {str(REPO)!r})
    from helpers.run import backend
    from helpers.run.kernel_loader import load_kernel
    K = {str(REPO / "tests" / "kernels")!r} + "/"
    print(backend.name())
"""

GOOD_LAUNCH = """
    x = np.arange(256, dtype=np.int32)
    y = np.zeros_like(x)
    load_kernel(K + "barriers.cu", "exchange")(2, 128, (x, y))
    print(int(y[0]), int(y[127]), int(y[128]), int(y[255]))
"""

FAULTS = [
    ("OutOfBoundsError", """
        C = np.zeros(4096, np.float32)
        load_kernel(K + "oob_global.cu", "store_past_end")(17, 256, (C, np.int32(4096)))
     """, "C[4096]"),
    ("KernelCrashError", """
        load_kernel(K + "crash.cu", "wild_pointer")(2, 32, (np.zeros(64, np.int32),))
     """, "SIGSEGV"),
    ("BarrierError", """
        load_kernel(K + "barrier_errors.cu", "divergent_syncthreads")(1, 32, (np.zeros(32, np.int32),))
     """, "never reached"),
    ("KernelTimeoutError", """
        import os; os.environ["TBT_TIMEOUT"] = "2"
        load_kernel(K + "crash.cu", "endless_loop")(1, 4, (np.zeros(1, np.int32), np.zeros(4, np.int32)))
     """, "time limit of 2 s"),
]


def test_kernel_errors_leave_the_jupyter_kernel_alive(jupyter):
    km, kc = jupyter
    start = time.monotonic()
    setup = execute(kc, SETUP)
    assert setup["status"] == "ok", setup
    assert setup["output"].strip() == "cpu"
    pid_before = execute(kc, "import os; print(os.getpid())")["output"].strip()

    for ename, cell, needle in FAULTS:
        reply = execute(kc, cell)
        assert reply["status"] == "error", (ename, reply)
        assert reply["ename"] == ename, (reply["ename"], reply.get("evalue"))
        assert needle in reply["evalue"] or needle in reply["output"], reply
        assert km.is_alive()
        two = execute(kc, "1 + 1")
        assert two["status"] == "ok" and two["output"].strip() == "2", two
        good = execute(kc, GOOD_LAUNCH)
        assert good["status"] == "ok", good
        assert good["output"].split() == ["1", "0", "129", "128"], good

    # The same process all along: no restart hid a crash.
    assert execute(kc, "import os; print(os.getpid())")["output"].strip() == pid_before
    assert time.monotonic() - start < 60

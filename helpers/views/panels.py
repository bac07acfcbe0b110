"""The plumbing of the course's slider panels: interactive_output (a panel that computes, prints and draws on each
settled slider move), one figure drawn at a time, a figure rendered as the notebook displays it, and answers
prepared ahead (Preparer), for a panel whose answer to one setting takes seconds (the tile explorer: compile,
verify, trace, ptxas, draw): while the learner reads one setting, the settings one slider step away
(neighbours) are prepared, so that a move to one of them is answered at once.

A Preparer is one worker thread that computes everything, the setting the learner asked for and the ones
prepared ahead, one step at a time: a computation is a generator that yields the name of its next step
between steps, so the learner's request waits at most for the step under way before the worker turns to it
(a preparation left half-done is resumed later). Nothing is computed twice at once and nothing races the
learner's request; the Jupyter kernel stays free while the worker prepares (which waits in compilers,
subprocesses and NumPy most of the time). Answers are kept (the latest `keep`); one that keep_if refuses (a
failure, whose cause may have been passing) is handed to the request that waited for it and not kept.
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from typing import Callable, Hashable, Iterator

POWERS_OF_TWO = tuple(2**i for i in range(11))          # 1 .. 1024
TIME_SIZE = 2048       # on a GPU the panels time M = N = K = 2048

# One panel figure is drawn at a time: plt.ioff() saves and restores a process-wide setting, and
# panel callbacks can run on two threads at once (see interactive_output).
_DRAW_LOCK = threading.Lock()


def interactive_output(run, describe, draw, controls: dict):
    """The course's panel: `run(**values)` on each settled slider move, its description printed
    and its figure (if any) drawn. run, describe and draw stay plain functions that tests call.

    The figure is drawn with pyplot's interactive mode off, taken out of pyplot's list of open
    figures, and only then displayed. Otherwise the inline backend queues it for its post_execute
    redraw, and in JupyterLab with ipykernel 7 the comm messages of a slider move are handled on
    two threads (the main shell and a comm subshell), each firing post_execute: the other thread
    re-rendered and closed the very figure being displayed, and the PNG sent came out blank or
    partial (tests/e2e/test_browser.py found it)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    def show(**values):
        result = run(**values)
        print(describe(result))
        with _DRAW_LOCK, plt.ioff():
            fig = draw(result)
            if fig is not None:
                plt.close(fig)      # out of pyplot's list: no post_execute hook can render or close it
                display(fig)

    return w.interactive_output(show, controls)


def rendered(fig) -> dict | None:
    """A figure made without pyplot (matplotlib.figure.Figure) as the notebook displays it: IPython's display
    formats (the inline backend's PNG), or a PNG outside IPython; None for None. Safe on any thread: pyplot's
    state (its list of figures, interactive mode) is not touched, so a figure drawn behind the learner's back
    never shows up under a cell of theirs."""
    if fig is None:
        return None
    from IPython import get_ipython
    from IPython.core.pylabtools import print_figure
    shell = get_ipython()
    with _DRAW_LOCK:
        data = shell.display_formatter.format(fig)[0] if shell is not None else {}
        if not any(k.startswith("image/") for k in data):
            data = {"image/png": print_figure(fig, "png", bbox_inches="tight"), "text/plain": repr(fig)}
    return data


def neighbours(options: dict[str, tuple], values: dict) -> list[dict]:
    """The settings one slider step away from `values`: each slider's next value, then each one's previous."""
    out = []
    for step in (1, -1):
        for name, opts in options.items():
            j = list(opts).index(values[name]) + step
            if 0 <= j < len(opts):
                out.append({**values, name: opts[j]})
    return out


def in_jupyter_kernel() -> bool:
    """Whether this is a Jupyter kernel (a notebook's), not a plain Python or a terminal IPython."""
    from IPython import get_ipython
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def pause_while_cells_run(preparer: "Preparer") -> None:
    """In IPython, preparations wait while a cell runs (the learner's cell gets the machine; a notebook run from
    top to bottom, as nbval runs it, leaves them almost no time) and go on when it ends. Once per preparer."""
    from IPython import get_ipython
    shell = get_ipython()
    if shell is None or preparer.hooked:
        return
    shell.events.register("pre_execute", preparer.pause)
    shell.events.register("post_execute", preparer.resume)
    preparer.hooked = True
    preparer.pause()          # called from a cell: it runs now


# ---- answers prepared ahead ---------------------------------------------------------------------
IDLE_EXIT_S = 60.0     # a worker with nothing to do for this long ends (the next request starts another)


class Preparer:
    """steps(key) -> a generator that yields step names and returns the answer for `key`."""

    def __init__(self, steps: Callable[[Hashable], Iterator[str]], keep: int = 48,
                 keep_if: Callable[[object], bool] = lambda answer: True):
        self._steps, self._keep, self._keep_if = steps, keep, keep_if
        self._cv = threading.Condition()
        self._done: OrderedDict = OrderedDict()     # key -> answer, kept
        self._once: dict = {}                       # key -> (ok, answer or exception) for the request waiting
        self._parked: dict = {}                     # key -> a preparation left between two steps
        self._asked: list = []                      # keys requests wait for, oldest first
        self._ahead: list = []                      # keys to prepare, in order (the one under way stays first)
        self._steps_now: dict = {}                  # key -> the step under way
        self._thread: threading.Thread | None = None
        self._stop_registered = False
        self._paused = False
        self._stopping = False
        self.hooked = False                         # pause_while_cells_run has hooked it to IPython's events

    # ---- the learner's side -----------------------------------------------------------------------
    def answer(self, key, progress: Callable[[str], None] | None = None, poll_s: float = 0.1):
        """The answer for `key`: at once when prepared, else computed next (after the step under way), calling
        progress(step) on this thread as its steps begin. Raises what the computation raised."""
        with self._cv:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            self._asked.append(key)
            self._start()
            self._cv.notify_all()
            shown = None
            try:
                while key not in self._done and key not in self._once:
                    step = self._steps_now.get(key)
                    if progress is not None and step is not None and step != shown:
                        shown = step
                        self._cv.release()      # the callback talks to the front end: not under the lock
                        try:
                            progress(step)
                        finally:
                            self._cv.acquire()
                        continue
                    self._cv.wait(poll_s)
            finally:
                self._asked.remove(key)
            if key in self._done:
                return self._done[key]
            ok, value = self._once.pop(key)
        if not ok:
            raise value
        return value

    def prepare(self, keys) -> None:
        """Prepares these keys, in this order, whenever no request waits (replacing the earlier list: a
        preparation no longer listed is dropped at its next step)."""
        with self._cv:
            self._ahead = [k for k in dict.fromkeys(keys) if k not in self._done]
            wanted = set(self._ahead) | set(self._asked)
            self._parked = {k: g for k, g in self._parked.items() if k in wanted}
            if self._ahead:
                self._start()
            self._cv.notify_all()

    def prepared(self, key) -> bool:
        with self._cv:
            return key in self._done

    def busy(self) -> bool:
        """Whether a request waits or a preparation is listed or under way."""
        with self._cv:
            return bool(self._asked or self._ahead or self._steps_now)

    def pause(self, *_) -> None:
        """No preparation starts until resume() (a request is still answered): while a cell runs."""
        with self._cv:
            self._paused = True

    def resume(self, *_) -> None:
        with self._cv:
            self._paused = False
            self._cv.notify_all()

    def forget(self) -> None:
        """Drops every answer kept and every preparation listed (the step under way finishes)."""
        with self._cv:
            self._done.clear()
            self._ahead, self._parked = [], {}
            self._cv.notify_all()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Drops what is listed and waits for the step under way: at the interpreter's exit, so that the worker
        is not killed inside a compiler's library."""
        with self._cv:
            self._ahead, self._parked = [], {}
            self._stopping = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self._cv:
            self._stopping = False

    # ---- the worker -------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None:
            if not self._stop_registered:
                atexit.register(self.stop)
                self._stop_registered = True
            self._thread = threading.Thread(target=self._work, name="tile-by-tile preparer", daemon=True)
            self._thread.start()

    def _next(self):
        """(key, its parked generator or None, whether a request waits for it), or None: nothing to do."""
        for key in self._asked:
            if key not in self._done and key not in self._once:
                return key, self._parked.pop(key, None), True
        while self._ahead and self._ahead[0] in self._done:
            self._ahead.pop(0)
        if self._ahead and not self._paused:
            return self._ahead[0], self._parked.pop(self._ahead[0], None), False
        return None

    def _work(self) -> None:
        while True:
            with self._cv:
                job = self._next()
                while job is None:
                    if self._stopping or (not self._cv.wait(IDLE_EXIT_S) and self._next() is None):
                        self._thread = None
                        return
                    job = self._next()
                key, steps, waited = job
            outcome = self._run(key, steps, waited)
            with self._cv:
                self._steps_now.pop(key, None)
                if outcome is not None:
                    ok, value = outcome
                    if ok and self._keep_if(value):
                        self._done[key] = value
                        while len(self._done) > self._keep:
                            self._done.popitem(last=False)
                    elif key in self._asked:
                        self._once[key] = outcome
                    if key in self._ahead:
                        self._ahead.remove(key)
                self._cv.notify_all()

    def _run(self, key, steps, waited: bool):
        """Runs `key`'s steps: (True, answer) or (False, exception); None when a preparation was parked for a
        request or dropped (no longer listed)."""
        try:
            if steps is None:
                steps = self._steps(key)
            while True:
                name = next(steps)
                with self._cv:
                    self._steps_now[key] = name
                    self._cv.notify_all()
                    if waited or key in self._asked:
                        waited = True
                        continue
                    if self._paused or any(k not in self._done and k not in self._once for k in self._asked):
                        self._parked[key] = steps    # a request for another setting, or a cell, goes first
                        return None
                    if key not in self._ahead:
                        return None                  # no longer a neighbour of what is shown
        except StopIteration as stop:
            return True, stop.value
        except Exception as e:  # noqa: BLE001 - the waiting request gets it; a preparation is dropped
            return False, e

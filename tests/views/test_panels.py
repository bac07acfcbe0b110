"""Answers prepared ahead (helpers/views/panels.py): one worker, the learner's request first, a preparation
parked between two steps and resumed, failures handed to the request that waited and never kept, and the
settings one slider step away. Plain Python computations: nothing is compiled here."""

from __future__ import annotations

import threading
import time

import pytest

from helpers.views import panels, widgets


def wait_for(condition, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


class Recorder:
    """steps(key): logs (key, step) as each step runs on the worker; a key in `gates` waits at its first step
    until its event is set; a key in `fails` raises after its first step."""

    def __init__(self):
        self.log, self.threads, self.gates, self.fails = [], set(), {}, set()

    def steps(self, key):
        self.threads.add(threading.current_thread().name)
        self.log.append((key, "start"))
        yield "first"
        if key in self.gates:
            self.gates[key].wait(10)
        self.log.append((key, "middle"))
        yield "second"
        if key in self.fails:
            raise ValueError(f"{key} failed")
        self.log.append((key, "end"))
        return f"answer {key}"


@pytest.fixture
def rec():
    return Recorder()


def test_prepared_answers_are_handed_out_without_computing_again(rec):
    p = panels.Preparer(rec.steps)
    p.prepare(["a", "b"])
    wait_for(lambda: p.prepared("a") and p.prepared("b"))
    assert p.answer("b") == "answer b" and p.answer("a") == "answer a"
    assert [k for k, s in rec.log if s == "start"] == ["a", "b"]        # in the order listed, once each
    assert rec.threads == {"tile-by-tile preparer"}                      # on the worker, not the caller
    assert not p.busy()


def test_a_request_goes_before_the_preparations_after_the_step_under_way(rec):
    p = panels.Preparer(rec.steps)
    rec.gates["slow"] = threading.Event()
    p.prepare(["slow", "later"])
    wait_for(lambda: ("slow", "start") in rec.log)
    got = {}
    asker = threading.Thread(target=lambda: got.setdefault("x", p.answer("x")))
    asker.start()
    time.sleep(0.2)
    assert "x" not in got                      # the step under way ("slow" at its gate) finishes first
    rec.gates["slow"].set()
    asker.join(10)
    assert got == {"x": "answer x"}
    wait_for(lambda: p.prepared("slow") and p.prepared("later"))
    # "slow" was parked after its step and resumed where it stopped: started once; "x" ran in between
    order = [e for e in rec.log if e[1] != "middle"]
    assert order == [("slow", "start"), ("x", "start"), ("x", "end"), ("slow", "end"), ("later", "start"),
                     ("later", "end")]


def test_progress_names_each_step_on_the_callers_thread(rec):
    p = panels.Preparer(rec.steps)
    rec.gates["k"] = threading.Event()
    threading.Timer(0.5, rec.gates["k"].set).start()     # the first step lasts half a second
    seen = []
    assert p.answer("k", progress=lambda step: seen.append((step, threading.current_thread().name))) == "answer k"
    assert seen[0] == ("first", threading.current_thread().name) and len(seen) <= 2


def test_a_failure_reaches_the_request_and_is_not_kept(rec):
    p = panels.Preparer(rec.steps)
    rec.fails.add("bad")
    p.prepare(["bad"])                                    # a failed preparation is dropped quietly...
    wait_for(lambda: ("bad", "middle") in rec.log and not p.busy())
    assert not p.prepared("bad")
    with pytest.raises(ValueError, match="bad failed"):   # ...and the request computes it again and gets it
        p.answer("bad")
    assert [k for k, s in rec.log if s == "start"] == ["bad", "bad"]
    rec.fails.clear()
    assert p.answer("bad") == "answer bad"


def test_an_answer_keep_if_refuses_is_handed_once_and_not_kept(rec):
    p = panels.Preparer(rec.steps, keep_if=lambda answer: answer != "answer flaky")
    assert p.answer("flaky") == "answer flaky" and not p.prepared("flaky")
    p.prepare(["flaky", "fine"])
    wait_for(lambda: p.prepared("fine"))
    assert not p.prepared("flaky")


def test_a_preparation_no_longer_listed_is_dropped_at_its_next_step(rec):
    p = panels.Preparer(rec.steps)
    rec.gates["old"] = threading.Event()
    p.prepare(["old"])
    wait_for(lambda: ("old", "start") in rec.log)
    p.prepare(["new"])                                    # the learner moved on: "old" is no neighbour now
    rec.gates["old"].set()
    wait_for(lambda: p.prepared("new"))
    assert not p.prepared("old") and ("old", "end") not in rec.log


def test_only_the_latest_answers_are_kept(rec):
    p = panels.Preparer(rec.steps, keep=2)
    for k in "abc":
        p.answer(k)
    assert [p.prepared(k) for k in "abc"] == [False, True, True]
    p.forget()
    assert not p.prepared("c")


def test_neighbours_are_one_slider_step_away_next_values_first():
    options = {"BM": (32, 64, 128), "TM": (1, 2, 4)}
    assert panels.neighbours(options, {"BM": 64, "TM": 1}) == [
        {"BM": 128, "TM": 1}, {"BM": 64, "TM": 2}, {"BM": 32, "TM": 1}]


# ---- the tile explorer's answers ----------------------------------------------------------------------
@pytest.mark.emulator
def test_the_explorer_prepares_each_neighbours_answer_as_the_panel_shows_it(cpu_backend):
    widgets.forget_prepared()
    widgets.prepare_neighbours("03_smem_tiling", 37, 29, 23, {"tile": (8, 16, 32, 64)}, {"tile": 32})
    keys = [widgets.tile_key("03_smem_tiling", 37, 29, 23, {"tile": t}) for t in (64, 16)]
    wait_for(lambda: all(widgets.PREPARED.prepared(k) for k in keys), timeout_s=300)
    big, small = (widgets.PREPARED.answer(k) for k in keys)
    assert "not a valid configuration" in big.text and big.figure is None
    r = widgets.run_tile_config("03_smem_tiling", 37, 29, 23, tile=16)
    first = widgets.describe_tile_config(r).splitlines()
    assert small.text.splitlines()[0] == first[0] and "PASS" in small.text
    assert "shared load As (line 31): 2 words in 2 banks, no conflict" in small.text
    assert small.figure["image/png"].startswith(b"\x89PNG") and not small.failed


def test_preparations_wait_while_paused_and_requests_do_not(rec):
    p = panels.Preparer(rec.steps)
    p.pause()                                           # a cell runs
    p.prepare(["ahead"])
    assert p.answer("asked") == "answer asked"          # a slider move is still answered
    time.sleep(0.3)
    assert not p.prepared("ahead") and ("ahead", "start") not in rec.log
    p.resume()                                          # the cell ended
    wait_for(lambda: p.prepared("ahead"))


def test_the_explorer_prepares_only_in_a_notebooks_kernel_on_the_emulator(cpu_backend, monkeypatch):
    assert not panels.in_jupyter_kernel() and not widgets.prepares_ahead()   # pytest is no notebook
    monkeypatch.setattr(widgets, "PREPARE_AHEAD", True)
    assert widgets.prepares_ahead()

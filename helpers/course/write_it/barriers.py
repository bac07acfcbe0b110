"""Which __syncthreads() of a traced block order nothing: a barrier that ends an interval in which the
block writes nothing to shared memory, with no shared word the two intervals around it both touch, one
writing. Removing it alone leaves every pair of conflicting accesses ordered (a barrier that a
single-buffered kernel needs between its reads of a tile and its next stores is never one of them).

And whether the races of a traced kernel are all between lanes of one warp (a per-warp staging area read
without __syncwarp), so that the barrier missing is a __syncwarp(), not a __syncthreads().

The trace records accesses, not barriers: a barrier is placed by the accesses around it, the thread's
last before it and its first after it (their lines; inside a helper function, the helper's lines)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from helpers.measure import memory
from helpers.measure.trace import OPS, SPACES, Trace


@dataclass(frozen=True)
class Extra:
    barrier: int                  # the block has passed barrier - 1 barriers before it
    before: tuple[int, str] | None  # (line, what): the thread's last access before it
    after: tuple[int, str] | None   # and its first after it

    def where(self) -> str:
        """'after line 34 (a global load of B) and before line 52 (a shared load of As)'"""
        parts = [f"{side} line {at[0]} ({at[1]})" for side, at in (("after", self.before), ("before", self.after))
                 if at]
        return " and ".join(parts) or "(no access of the thread around it)"


def extra_barriers(tr: Trace, block: int = 0, thread: int = 0) -> list[Extra]:
    """The barriers of `block` that order no access to shared memory (see the module), first to last;
    each placed by the accesses of `thread` around it."""
    words = memory.shared_words(tr)
    words = words[(words.block == block) & words.op.isin((OPS.index("load"), OPS.index("store")))]
    r = tr.records[(tr.records["block"] == block) & (tr.records["repeat"] == 0) & (tr.records["op"] <= 1)]
    if r.size == 0:
        return []
    last = int(r["epoch"].max())
    key = list(zip(words.space, words.word))
    stored: dict[int, set] = {}
    touched: dict[int, set] = {}
    for e, k, op in zip(words.epoch, key, words.op):
        touched.setdefault(int(e), set()).add(k)
        if op == OPS.index("store"):
            stored.setdefault(int(e), set()).add(k)
    mine = np.sort(r[r["thread"] == thread], order="seq")
    out = []
    for b in range(1, last + 1):
        if stored.get(b - 1) or touched.get(b - 1, set()) & stored.get(b, set()):
            continue
        out.append(Extra(b, _access(tr, mine[mine["epoch"] < b][-1:]), _access(tr, mine[mine["epoch"] >= b][:1])))
    return out


def _access(tr: Trace, one: np.ndarray) -> tuple[int, str] | None:
    if one.size == 0:
        return None
    a = one[0]
    name = memory.array_names(tr, one["space"], one["buffer"], one["offset"])[0]
    space = "global" if a["space"] == SPACES.index("global") else "shared"
    return int(a["line"]), f"a {space} {OPS[int(a['op'])]} of {name}"


def races_within_warps(tr: Trace) -> bool:
    """Whether every race of a trace that memory.races found racy (two threads, one writing, between the same
    two barriers) is between lanes of one warp: no shared word written between two barriers is touched there
    by two warps. False where mbarriers or TMA copies order the accesses (memory.clock_races)."""
    if tr.events is not None and np.isin(tr.events["op"], (5, 6, 7)).any():
        return False
    w = memory.shared_words(tr)
    w = w.assign(writes=w["op"] != OPS.index("load"), plain=w["op"] != OPS.index("atomic"))
    g = w.groupby(["block", "epoch", "space", "word"]).agg(warps=("warp", "nunique"), writes=("writes", "any"),
                                                            plain=("plain", "any"))
    # two atomics never race: a word that only atomics touch is no race whatever the warps
    return not ((g["warps"] > 1) & g["writes"] & g["plain"]).any()

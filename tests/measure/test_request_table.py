"""The trace analysis done for all requests at once (helpers/measure/request_table.py, memory.races) against
hand-made traces whose answers are worked out on paper, and against the one-request-at-a-time rules
(memory.banks, memory.sectors) and a plain loop over candidate words on random traces.

Shared memory: 32 banks of 4 bytes; 8-byte accesses are served a half-warp at a time, 16-byte ones a
quarter-warp at a time. Global memory: 32-byte sectors. No kernel is compiled: these traces are written here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.core.kernel_source import KernelSource
from helpers.emulator.launcher import SharedVariable
from helpers.measure import memory, ncu, request_table
from helpers.measure.trace import OPS, Trace

DTYPE = [("block", "<u4"), ("thread", "<u2"), ("warp", "<u2"), ("lane", "u1"), ("epoch", "<u4"),
         ("warp_epoch", "<u4"), ("seq", "<u4"), ("pc", "<u8"), ("line", "<i4"), ("space", "u1"), ("buffer", "i1"),
         ("offset", "<i8"), ("size", "u1"), ("op", "u1"), ("repeat", "u1")]
LOAD, STORE, ATOMIC = (OPS.index(o) for o in ("load", "store", "atomic"))


def make_trace(rows: list[dict], threads: int = 64) -> Trace:
    """A trace of the given accesses (missing fields 0; warp and lane from the thread; seq: the order given,
    per thread), with global buffer 0 named A and a shared array s of 64 KiB at offset 0."""
    records = np.zeros(len(rows), DTYPE)
    seq: dict[int, int] = {}
    for i, row in enumerate(rows):
        t = row["thread"]
        full = {"warp": t // 32, "lane": t % 32, "seq": seq.get(t, 0), **row}
        seq[t] = full["seq"] + 1
        for k, v in full.items():
            records[k][i] = v
    return Trace("k", KernelSource(Path("k.cu"), "\n" * 40), (1, 1, 1), (threads, 1, 1), (0,), records,
                 {0: "A"}, {0: 4}, [SharedVariable("s", 0, 65536, 1)])


def warp_access(pc: int, line: int, offsets, space: int = 1, size: int = 4, op: int = LOAD, warp: int = 0,
                **fields) -> list[dict]:
    """One instruction executed by lanes 0..len(offsets)-1 of a warp."""
    return [dict(thread=warp * 32 + lane, pc=pc, line=line, space=space, offset=int(o), size=size, op=op, **fields)
            for lane, o in enumerate(offsets)]


lanes = np.arange(32)
# line, bytes per lane, offset of each lane, (ways, wavefronts, ideal) worked out by hand
SHARED = [
    (1, 4, 4 * lanes, (1, 1, 1)),                       # word i: banks 0..31 once each
    (2, 4, 8 * lanes, (2, 2, 1)),                       # word 2i: lanes i, i + 16 share a bank, 32 words apart
    (3, 4, np.full(32, 28), (1, 1, 1)),                 # one word for all: a broadcast
    (4, 8, 8 * lanes, (1, 2, 2)),                       # float2: each half-warp covers words 0..31 once
    (5, 16, 32 * lanes, (2, 8, 4)),                     # float4 at 8i: lanes i, i+4 of a quarter 32 words apart
    (6, 4, 128 * (lanes % 4), (4, 4, 1)),               # 4 words, all in bank 0, 8 lanes each
    (7, 16, 16 * lanes[:12], (1, 2, 2)),                # 12 lanes: quarter-warps 0 and 1 only
]
# line, bytes per lane, offsets, (sectors, ideal) worked out by hand
GLOBAL = [
    (11, 4, 4 * lanes, (4, 4)),                         # bytes 0..127
    (12, 4, 128 * lanes, (32, 4)),                      # a sector per lane; 128 bytes fit in 4
    (13, 4, 4 * lanes + 4, (5, 4)),                     # bytes 4..131: sectors 0..4
    (14, 16, 16 * lanes, (16, 16)),                     # bytes 0..511
    (15, 4, np.full(32, 20), (1, 1)),                   # one element for all
    (16, 8, 4 * lanes, (5, 5)),                         # overlapping 8-byte spans: bytes 0..131
]


@pytest.fixture(scope="module")
def hand_trace():
    rows = []
    for i, (line, size, offsets, _) in enumerate(SHARED):
        rows += warp_access(100 + i, line, offsets, size=size)
    for i, (line, size, offsets, _) in enumerate(GLOBAL):
        rows += warp_access(200 + i, line, offsets, space=0, size=size)
    rows += warp_access(300, 20, 4 * lanes, op=STORE, warp=1)     # warp 1 stores words 0..31 of s
    return make_trace(rows)


def test_requests_come_grouped_and_ordered_as_the_hand_trace_says(hand_trace):
    reqs = memory.requests(hand_trace)
    assert [(q.warp, q.line) for q in reqs] == [(0, s[0]) for s in SHARED] + [(0, g[0]) for g in GLOBAL] + [(1, 20)]
    for q, (_, size, offsets, _) in zip(reqs, SHARED + GLOBAL):
        assert q.size == size and q.lanes.tolist() == list(range(len(offsets))) and q.offsets.tolist() == list(offsets)
    assert [q.array for q in reqs] == ["s"] * len(SHARED) + ["A"] * len(GLOBAL) + ["s"]
    assert [q.line for q in memory.requests(hand_trace, "global")] == [g[0] for g in GLOBAL]


def test_bank_counts_of_all_requests_at_once_are_the_hand_derived_ones(hand_trace):
    t = request_table.request_table(hand_trace)
    b = request_table.bank_counts(t)
    expected = [s[3] for s in SHARED] + [(0, 0, 0)] * len(GLOBAL) + [(1, 1, 1)]
    assert list(zip(b.ways.tolist(), b.wavefronts.tolist(), b.ideal.tolist())) == expected
    for q, ways, wavefronts, ideal in zip(memory.requests(hand_trace), b.ways, b.wavefronts, b.ideal):
        if q.space != "global":
            r = memory.banks(q)
            assert (r.ways, r.wavefronts, r.ideal) == (ways, wavefronts, ideal)


def test_sector_counts_of_all_requests_at_once_are_the_hand_derived_ones(hand_trace):
    t = request_table.request_table(hand_trace)
    touched, ideal = request_table.sector_counts(t)
    expected = [(0, 0)] * len(SHARED) + [g[3] for g in GLOBAL] + [(0, 0)]
    assert list(zip(touched.tolist(), ideal.tolist())) == expected
    assert [memory.sectors(q) for q in memory.requests(hand_trace, "global")] == [g[3] for g in GLOBAL]


def test_per_line_and_the_nsight_counts_total_the_hand_derived_numbers(hand_trace):
    table = memory.per_line(hand_trace).set_index(["line", "op"])
    assert table.loc[(5, "load"), "wavefronts"] == 8 and table.loc[(5, "load"), "max ways"] == 2
    assert table.loc[(12, "load"), "sectors"] == 32 and table.loc[(12, "load"), "ideal sectors"] == 4
    assert np.isnan(table.loc[(12, "load"), "wavefronts"]) and np.isnan(table.loc[(5, "load"), "sectors"])
    counts = ncu.trace_counts(hand_trace)
    assert counts["shared load requests"] == len(SHARED) and counts["shared store requests"] == 1
    assert counts["shared load wavefronts"] == sum(s[3][1] for s in SHARED)
    assert counts["shared load bank conflicts"] == sum(s[3][1] - s[3][2] for s in SHARED)
    assert counts["global load sectors"] == sum(g[3][0] for g in GLOBAL) and counts["global store requests"] == 0


def test_a_loop_is_one_request_per_iteration_and_barriers_split_them():
    # lanes run line 1 three times (one pc); a barrier (epoch 1) before the third time
    rows = []
    for k, epoch in ((0, 0), (1, 0), (2, 1)):
        rows += warp_access(100, 1, 4 * lanes + 128 * k, epoch=epoch, seq=k)
    # recorded thread after thread, the last thread first (each thread's own accesses in its program order): the
    # n-th execution by one lane lines up with the n-th by the others, and the requests follow program order
    t = make_trace(sorted(rows, key=lambda r: (-r["thread"], r["seq"])))
    reqs = memory.requests(t)
    assert [(q.epoch, q.offsets.tolist()) for q in reqs] == [(e, (4 * lanes + 128 * k).tolist())
                                                            for k, e in ((0, 0), (1, 0), (2, 1))]
    assert all(q.lanes.tolist() == list(range(32)) for q in reqs)


def _random_trace(rng, n_instr: int = 60) -> Trace:
    rows = []
    for i in range(n_instr):
        warp = int(rng.integers(0, 2))
        active = np.sort(rng.choice(32, size=int(rng.integers(1, 33)), replace=False))
        size = int(rng.choice([1, 2, 4, 8, 12, 16]))
        space = int(rng.integers(0, 3))
        base = int(rng.integers(0, 8)) * 4
        stride = int(rng.choice([0, 1, 2, 4, 8, 16, 33]))
        for lane in active:
            rows.append(dict(thread=warp * 32 + int(lane), pc=100 + i % 17, line=1 + i % 17, space=space,
                             offset=base + stride * 4 * int(lane) + int(rng.integers(0, 2)) * 4, size=size,
                             op=int(rng.integers(0, 2)), epoch=i // 20, warp_epoch=i // 7))
    order = rng.permutation(len(rows))
    return make_trace([rows[i] for i in order])


@pytest.mark.parametrize("seed", range(8))
def test_all_requests_at_once_agree_with_one_request_at_a_time(seed):
    t = _random_trace(np.random.default_rng(seed))
    table = request_table.request_table(t)
    reqs = memory.requests(t)
    banks, (touched, ideal) = request_table.bank_counts(table), request_table.sector_counts(table)
    assert len(reqs) == len(table) > 0
    for i, q in enumerate(reqs):
        if q.space == "global":
            assert memory.sectors(q) == (touched[i], ideal[i]), q
        else:
            r = memory.banks(q)
            assert (r.ways, r.wavefronts, r.ideal) == (banks.ways[i], banks.wavefronts[i], banks.ideal[i]), q


# ---- races --------------------------------------------------------------------------------------
def _loop_races(trace: Trace, limit: int) -> list[memory.Race]:
    """The race search as a plain loop over candidate words (what memory.races did before it worked on all
    words at once): per word in order, its first write with an unordered partner, and that partner."""
    w = memory.shared_words(trace)
    found: dict[tuple, memory.Race] = {}
    for (block, epoch, space, word), g in w.groupby(["block", "epoch", "space", "word"], sort=True):
        if g["thread"].nunique() < 2 or not (g["op"] != 0).any():
            continue
        for wr in g[g["op"] != 0].itertuples():
            others = g[g["thread"] != wr.thread]
            others = others[~((others["warp"] == wr.warp) & (others["warp_epoch"] != wr.warp_epoch))]
            others = others[~((others["op"] == ATOMIC) & (wr.op == ATOMIC))]
            if others.empty:
                continue
            o = others.iloc[0]
            key = (int(wr.line), int(o.line), OPS[int(wr.op)], OPS[int(o.op)])
            if key not in found:
                found[key] = memory.Race(int(block), int(epoch), "s", int(word),
                                         (int(wr.thread), int(wr.line), OPS[int(wr.op)]),
                                         (int(o.thread), int(o.line), OPS[int(o.op)]))
            break
        if len(found) >= limit:
            break
    return list(found.values())


def test_the_first_write_with_an_unordered_partner_is_the_one_reported():
    rows = [
        # word 0: thread 0 stores, lane 1 of its warp reads after a warp collective (ordered); thread 40 (another
        # warp) stores later, and thread 1 reads again in warp epoch 1... with thread 40's store unordered
        dict(thread=0, line=1, op=STORE, space=1, offset=0, size=4, warp_epoch=0, pc=1),
        dict(thread=1, line=2, op=LOAD, space=1, offset=0, size=4, warp_epoch=1, pc=2),
        dict(thread=40, line=3, op=STORE, space=1, offset=0, size=4, warp_epoch=0, pc=3),
        # word 1: atomics of two warps never race; a load of a third thread races with the first atomic
        dict(thread=2, line=4, op=ATOMIC, space=1, offset=4, size=4, pc=4),
        dict(thread=33, line=5, op=ATOMIC, space=1, offset=4, size=4, pc=5),
        dict(thread=34, line=6, op=LOAD, space=1, offset=4, size=4, pc=6),
        # word 2: one thread only: nothing to race with
        dict(thread=3, line=7, op=STORE, space=1, offset=8, size=4, pc=7),
        dict(thread=3, line=8, op=LOAD, space=1, offset=8, size=4, pc=8),
        # word 3: lanes of one warp, no warp collective between: a race
        dict(thread=4, line=9, op=LOAD, space=1, offset=12, size=4, pc=9),
        dict(thread=5, line=10, op=STORE, space=1, offset=12, size=4, pc=10),
    ]
    t = make_trace(rows)
    found = memory.races(t)
    # word 0: thread 0's store is ordered before thread 1's read, but thread 40's store is not: the first
    # unordered partner of thread 0's store (in program order) is thread 40's store
    assert [(r.word, r.first, r.second) for r in found] == [
        (0, (0, 1, "store"), (40, 3, "store")),
        (1, (2, 4, "atomic"), (34, 6, "load")),
        (3, (5, 10, "store"), (4, 9, "load")),
    ]
    # at most `limit` races; none for limit 0 (main's races() cuts the clocks' and the intervals' races to limit)
    assert memory.races(t, limit=2) == found[:2] and memory.races(t, limit=0) == []
    assert found == _loop_races(t, 20)


def test_a_write_whose_partners_are_all_ordered_gives_way_to_the_next_write():
    rows = [
        dict(thread=0, line=1, op=STORE, space=1, offset=0, size=4, warp_epoch=0, pc=1),
        dict(thread=1, line=2, op=LOAD, space=1, offset=0, size=4, warp_epoch=1, pc=2),   # ordered by __syncwarp
        dict(thread=1, line=3, op=STORE, space=1, offset=0, size=4, warp_epoch=1, pc=3),
        dict(thread=2, line=4, op=LOAD, space=1, offset=0, size=4, warp_epoch=1, pc=4),   # races with line 3
    ]
    found = memory.races(make_trace(rows))
    assert [(r.first, r.second) for r in found] == [((1, 3, "store"), (2, 4, "load"))]


@pytest.mark.parametrize("seed", range(12))
def test_the_race_search_agrees_with_a_loop_over_words(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(400):
        rows.append(dict(thread=int(rng.integers(0, 64)), line=1 + int(rng.integers(0, 9)), space=1,
                         op=int(rng.choice([LOAD, LOAD, STORE, ATOMIC])), offset=4 * int(rng.integers(0, 24)),
                         size=int(rng.choice([4, 4, 8])), epoch=int(rng.integers(0, 2)),
                         warp_epoch=int(rng.integers(0, 3)), pc=1 + i))
    t = make_trace(rows)
    for limit in (1, 3, 20):
        assert memory.races(t, limit) == _loop_races(t, limit)

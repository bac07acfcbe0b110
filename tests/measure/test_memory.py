"""Memory traces: bank conflicts, sectors, races and unwritten reads against hand-derived answers.

The kernels of tests/kernels/memory_patterns.cu have one warp (block 32) and access patterns
whose cost can be worked out on paper; each expected number below carries its derivation. The
`// LINE: tag` comments in the kernel file name the lines each pattern must be attributed to.
Shared memory: 32 banks of 4 bytes, word w in bank w % 32; 8-byte accesses are served a
half-warp (16 lanes) at a time, 16-byte ones a quarter-warp (8 lanes) at a time. Global
memory: 32-byte sectors, buffers 256-byte aligned.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.core import paths
from helpers.run import gemm
from helpers.measure import memory
from helpers.core import stages
from helpers.measure import trace

KERNELS = paths.ROOT / "tests" / "kernels"
PATTERNS = KERNELS / "memory_patterns.cu"

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def marked_line(tag: str, file: Path = PATTERNS) -> int:
    for number, text in enumerate(file.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"// LINE: {tag}"):
            return number
    raise LookupError(f"no `// LINE: {tag}` in {file.name}")


def course_args(M=64, N=64, K=64, rng=None):
    rng = rng or np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = rng.standard_normal((M, N)).astype(np.float32)
    return gemm.launch_args(M, N, K, 1.0, A, B, 0.0, C)


def capture(kernel: str, block: int = 32, **kw) -> trace.Trace:
    return trace.capture(PATTERNS, kernel, 1, block, course_args(**kw))


@pytest.fixture(scope="module")
def shared_trace():
    return capture("shared_patterns")


@pytest.fixture(scope="module")
def global_trace():
    return capture("global_patterns")


def rows_at(table, line: int):
    return table[table["line"] == line]


def the_row(table, line: int, space: str, op: str):
    sel = table[(table["line"] == line) & (table["space"] == space) & (table["op"] == op)]
    assert len(sel) == 1, f"expected one {space} {op} row at line {line}, got\n{rows_at(table, line)}"
    return sel.iloc[0]


def requests_at(t: trace.Trace, line: int, space: str, op: str) -> list[memory.Request]:
    found = [q for q in memory.requests(t) if q.line == line and q.space == space and q.op == op]
    assert found, f"no {space} {op} request at line {line}"
    return found


# ---- shared memory: bank conflicts -----------------------------------------------------------
# tag, bytes per lane, requests, ways, wavefronts and ideal per request, conflicted lanes
SHARED = [
    # s[t]: lane i -> word i, banks 0..31 once each: no conflict, 1 wavefront
    ("stride1", 4, 1, 1, 1, 1, 0),
    # s[2t]: word 2i, bank 2i % 32: lanes i and i+16 share an even bank with words 32 apart -> 2-way
    ("stride2", 4, 1, 2, 2, 1, 32),
    # s[32t]: word 32i, bank 0 for every lane, 32 different words -> 32-way, 32 wavefronts
    ("stride32", 4, 1, 32, 32, 1, 32),
    # s[7]: every lane the same word -> one broadcast wavefront, no conflict
    ("broadcast", 4, 1, 1, 1, 1, 0),
    # float2 s2[t]: each half-warp (16 lanes x 2 words) covers words 0..31 once -> 1 per half, 2 in all
    ("float2", 8, 1, 1, 2, 2, 0),
    # float4 s4[t]: each quarter-warp (8 lanes x 4 words) covers 32 consecutive words -> 1 per quarter, 4
    ("float4", 16, 1, 1, 4, 4, 0),
    # float4 s4[2t]: lane i words 8i..8i+3; in a quarter lanes i, i+4 are 32 words apart -> 2-way x 4 = 8
    ("float4_stride2", 16, 1, 2, 8, 4, 32),
    # padded[t][col] of [32][33]: word 33t + col, bank (t + col) % 32 distinct -> 1 per request, 32 requests
    ("transpose_padded", 4, 32, 1, 1, 1, 0),
    # square[t][col] of [32][32]: word 32t + col, bank col for all lanes -> 32-way in each of 32 requests
    ("transpose_square", 4, 32, 32, 32, 1, 32),
    # pairs[t/16][(t%16)*2]: word 32(t/16) + 2(t%16); lanes t, t+16 -> bank 2(t%16), 32 words apart -> 2-way
    ("two_way", 4, 1, 2, 2, 1, 32),
]
SHARED_OP = {"transpose_padded": "store", "transpose_square": "store", "two_way": "store"}
SHARED_ARRAY = {"transpose_padded": "padded", "transpose_square": "square", "two_way": "pairs"}


@pytest.mark.parametrize("tag, size, count, ways, wavefronts, ideal, conflicted", SHARED, ids=[s[0] for s in SHARED])
def test_bank_conflicts_match_the_hand_derivation(shared_trace, tag, size, count, ways, wavefronts, ideal,
                                                   conflicted):
    line, op = marked_line(tag), SHARED_OP.get(tag, "load")
    reqs = requests_at(shared_trace, line, "shared", op)
    assert len(reqs) == count
    for q in reqs:
        assert q.size == size and q.lanes.size == 32 and q.array == SHARED_ARRAY.get(tag, "s")
        b = memory.banks(q)
        assert (b.ways, b.wavefronts, b.ideal) == (ways, wavefronts, ideal), b
        assert b.excess == wavefronts - ideal
        assert int(b.conflicted.sum()) == conflicted
    # the per-line view: the same numbers, at this line and nowhere else
    r = the_row(memory.per_line(shared_trace), line, "shared", op)
    assert r["requests"] == count and r["max ways"] == ways
    assert r["wavefronts"] == count * wavefronts and r["ideal wavefronts"] == count * ideal
    assert r["wavefronts per request"] == wavefronts
    assert r["bytes per lane"] == size and r["array"] == SHARED_ARRAY.get(tag, "s")
    assert np.isnan(r["sectors"])  # a shared row has no sectors (not 0)


def test_bank_numbers_of_the_simple_strides(shared_trace):
    (q1,) = requests_at(shared_trace, marked_line("stride1"), "shared", "load")
    (q2,) = requests_at(shared_trace, marked_line("stride2"), "shared", "load")
    base = memory.banks(q1).banks[0]  # where the array starts does not change the conflicts
    np.testing.assert_array_equal(memory.banks(q1).banks, (base + np.arange(32)) % 32)
    np.testing.assert_array_equal(memory.banks(q2).banks, (base + 2 * np.arange(32)) % 32)


def test_each_pattern_line_holds_only_its_own_access(shared_trace, global_trace):
    """Attribution: no access leaks onto a neighbouring pattern's line."""
    for t, tags in ((shared_trace, [s[0] for s in SHARED]), (global_trace, [g[0] for g in GLOBAL])):
        table = memory.per_line(t)
        for tag in tags:
            here = rows_at(table, marked_line(tag))
            kinds = set(zip(here["space"], here["op"]))
            if t is shared_trace:
                expected = {("shared", SHARED_OP.get(tag, "load"))}
            else:
                expected = {("global", "store" if tag == "store" else "load")}
            assert kinds == expected, f"{tag}: {here[['space', 'op', 'array']]}"
            code = PATTERNS.read_text().splitlines()[marked_line(tag) - 1].split("//")[0].strip()
            assert set(here["source"]) == {t.line_text(marked_line(tag))} and here["source"].iloc[0].startswith(code)


# ---- global memory: sectors ------------------------------------------------------------------
# tag, bytes per lane, sectors per request, ideal
GLOBAL = [
    # A[t]: 32 lanes x 4 B = bytes 0..127 -> sectors 0..3
    ("coalesced", 4, 4, 4),
    # A[32t]: lane i at byte 128i, each in its own sector -> 32; its 128 bytes would fit in 4
    ("strided", 4, 32, 4),
    # A[5]: every lane the same 4 bytes -> 1 sector
    ("same_element", 4, 1, 1),
    # A[t + 1]: bytes 4..131 straddle sectors 0..4 -> 5 for an ideal 4
    ("off_by_one", 4, 5, 4),
    # float4 A4[t]: 32 x 16 B = bytes 0..511 -> 16 sectors
    ("float4_coalesced", 16, 16, 16),
    # C[t] = ...: bytes 0..127 of C -> 4 sectors
    ("store", 4, 4, 4),
]


@pytest.mark.parametrize("tag, size, got, ideal", GLOBAL, ids=[g[0] for g in GLOBAL])
def test_sectors_match_the_hand_derivation(global_trace, tag, size, got, ideal):
    line, op = marked_line(tag), "store" if tag == "store" else "load"
    (q,) = requests_at(global_trace, line, "global", op)
    assert q.size == size and q.lanes.size == 32 and q.array == ("C" if tag == "store" else "A")
    assert memory.sectors(q) == (got, ideal)
    r = the_row(memory.per_line(global_trace), line, "global", op)
    assert (r["requests"], r["sectors"], r["ideal sectors"], r["sectors per request"]) == (1, got, ideal, got)


# ---- races and unwritten reads -----------------------------------------------------------------

def test_the_pattern_kernels_have_no_races_and_no_unwritten_reads(shared_trace, global_trace):
    for t in (shared_trace, global_trace):
        assert memory.races(t) == [] and memory.unwritten_reads(t) == []


def test_a_missing_barrier_is_a_race_naming_both_lines():
    t = capture("race", block=64)
    found = memory.races(t)
    write, read = marked_line("race_write"), marked_line("race_read")
    assert found, "the race went unnoticed"
    assert {(r.first[1], r.second[1]) for r in found} == {(write, read)}
    r = found[0]
    assert r.array == "s" and r.first[2] == "store" and r.second[2] == "load" and r.epoch == 0
    # thread w writes s[w]; the one reading it is its left neighbour (w - 1) mod 64
    assert r.second[0] == (r.first[0] - 1) % 64
    assert f"line {write}" in str(r) and f"line {read}" in str(r)


def test_the_barrier_fixes_the_race():
    t = capture("race_fixed", block=64)
    assert memory.races(t) == [] and memory.unwritten_reads(t) == []


def test_a_read_of_unwritten_shared_memory_is_flagged():
    t = capture("unwritten")
    found = memory.unwritten_reads(t)
    line = marked_line("unwritten_read")
    assert any(u.line == line for u in found), found
    assert {u.array for u in found} == {"sums"} and {u.block for u in found} == {0}
    first = [u for u in found if u.line == line]
    assert len({u.thread for u in first}) == len(first)  # one word per thread: each thread's own read
    assert memory.races(t) == []  # one thread per word: nothing to race with


def test_zeroing_first_fixes_the_unwritten_read():
    t = capture("unwritten_fixed")
    assert memory.unwritten_reads(t) == [] and memory.races(t) == []


def test_a_compound_assignment_to_shared_memory_is_traced_as_load_and_store():
    t = capture("unwritten_fixed")
    line = marked_line("unwritten_read") + 10  # the same loop in the fixed twin, 10 lines further down
    assert "sums[t] +=" in t.line_text(line)
    table = memory.per_line(t)
    assert the_row(table, line, "shared", "load")["requests"] == 64
    assert the_row(table, line, "shared", "store")["requests"] == 64


# ---- the course's kernels -------------------------------------------------------------------

@pytest.mark.parametrize("name, per_request", [
    # lanes walk down a column of C: A[row*K+k] and C[row*N+col] are K, N floats apart -> a sector per lane;
    # B[k*N+col] has one col for the whole warp -> 1 sector
    ("02_naive", {"A": 32, "B": 1, "C": 32}),
    # lanes walk along a row: A[row*K+k] is one element (1 sector), B and C 32 consecutive floats (4)
    ("02_naive_coalesced", {"A": 1, "B": 4, "C": 4}),
])
def test_the_naive_kernels_sectors(name, per_request):
    v = stages.variant(name)
    t = trace.capture_variant(v, v.config(block_x=32, block_y=32), M=64, N=64, K=32)
    table = memory.per_line(t)
    glob = table[table["space"] == "global"]
    assert set(glob["array"]) == set(per_request)
    for array, expected in per_request.items():
        rows = glob[glob["array"] == array]
        assert (rows["sectors per request"] == expected).all(), rows
        assert (rows["lanes per request"] == 32).all()
        # attributed to the line that names the array
        assert all(f"{array}[" in src for src in rows["source"])
    assert set(glob[glob["array"] == "C"]["op"]) == {"load", "store"}
    assert memory.races(t) == [] and memory.unwritten_reads(t) == []


def test_the_smem_tiling_kernel_reads_its_tiles_without_conflicts():
    v = stages.variant("03_smem_tiling")
    t = trace.capture_variant(v, v.config(tile=32), M=64, N=64, K=64)
    table = memory.per_line(t)
    inner = [n for n, text in enumerate(v.path.read_text().splitlines(), 1) if "As[ty][k] * Bs[k][tx]" in text]
    assert len(inner) == 1
    loads = table[(table["line"] == inner[0]) & (table["space"] == "shared") & (table["op"] == "load")]
    assert set(loads["array"]) == {"As", "Bs"}
    for array in ("As", "Bs"):
        row = loads[loads["array"] == array].iloc[0]
        assert row["wavefronts per request"] == 1 and row["max ways"] == 1, row
        assert row["wavefronts"] == row["ideal wavefronts"]
    # As[ty][k]: one ty per warp -> every lane the same word (a broadcast); Bs[k][tx]: 32 consecutive words
    for q in requests_at(t, inner[0], "shared", "load"):
        words = np.unique(q.offsets // 4)
        assert words.size == (1 if q.array == "As" else 32), (q.array, words)
    # each of the 2 k-steps, each of 32 warps, 32 k's, for every traced block
    assert (loads["requests"] == 2 * 32 * 32 * len(t.blocks)).all()
    assert memory.races(t) == [] and memory.unwritten_reads(t) == []

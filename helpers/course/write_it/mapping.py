"""What the learner's mapping of threads to results costs in memory, measured from the trace of block 0
(exercises 04, 05 and 06, where the starter leaves that mapping to the learner): per source line,

- every load from shared memory, in wavefronts per warp request beside the conflict-free minimum (bank
  conflicts: helpers.measure.memory.banks);
- every global load and store, in 32-byte sectors per warp request beside the fewest its bytes fit in
  (coalescing, stage 02's lesson: helpers.measure.memory.sectors),

each beside what the course's kernel of the stage pays on the same access (CourseCosts, measured from its
trace and kept true by tests/course/test_write_it_mapping.py).

The rule (FACTOR): an access fails where it wastes at least twice what the course's kernel wastes on it.
The course's kernel is what the stage's design allows: at stage 04 it wastes nothing (one wavefront per
request, the fewest sectors); at stage 05 its 4 x 4 blocks of neighbours conflict 2-way on As and Bs and
store C in 4 times the sectors, waste that stages 06 (banks) and 07 (16-byte stores) remove. Twice that is no
longer a detail of a design: a 2-way conflict doubles the passes of every load of its line, and stage 04's
lesson, from 2 shared loads per multiply-add to 9/8 (a factor of 1.78), is gone when its 8 loads of As take
twice the passes; twice the sectors moves twice the bytes through L2 for the same data. Under the factor a
mapping passes and the verdict says what it costs; a mapping that wastes less than the course's passes too,
and the verdict says so."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from helpers.measure import accesses, memory
from helpers.measure.trace import Trace

FACTOR = 2.0


def _many(x: float, unit: str) -> str:
    """'1 wavefront', '8 wavefronts', '1.50 sectors'."""
    n = accesses.short_number(x)
    return f"{n} {unit if n == '1' else unit + 's'}"


def _conflict(ways: int) -> str:
    """'a 2-way bank conflict', 'an 8-way bank conflict'."""
    return f"{'an' if str(ways).startswith('8') or ways in (11, 18) else 'a'} {ways}-way bank conflict"


@dataclass(frozen=True)
class CourseCosts:
    """What the course's kernel of a stage wastes, per access: (space, op, array) -> its cost over the ideal
    (wavefronts over the conflict-free minimum, sectors over the fewest); an access it does not name costs it
    nothing beyond the ideal."""
    kernel: str
    waste: dict = field(default_factory=dict)
    later: dict = field(default_factory=dict)   # (space, op, array) -> the stage that removes the waste it keeps

    def of(self, a: Access) -> float:
        return float(self.waste.get((a.space, a.op, a.array), 1.0))


@dataclass(frozen=True)
class Access:
    """One source line's requests of one kind (a load of As, a store of C), in block 0."""
    line: int
    space: str                    # "shared" or "global"
    op: str                       # "load" or "store"
    array: str
    requests: int
    cost: float                   # per request: wavefronts (shared) or sectors (global)
    ideal: float                  # per request: the conflict-free minimum, or the fewest sectors
    ways: int = 1                 # shared: the worst conflict of any request (1: none)
    example: str = ""             # how the lanes of one (the worst) request fall: words and banks, or rows and columns

    @property
    def waste(self) -> float:
        return self.cost / self.ideal if self.ideal else 1.0

    @property
    def unit(self) -> str:
        return "wavefront" if self.space == "shared" else "sector"

    @property
    def key(self) -> str:
        """'As load wavefronts per request': the name of its number in Lesson.numbers."""
        return f"{self.array} {self.op} {self.unit}s per request"

    def words(self, course: CourseCosts) -> str:
        """'line 46, loads of As: 8 wavefronts per warp request where 1 would do (an 8-way bank conflict; the
        course's 04_1d_thread_tiling: 1)'."""
        what = f"line {self.line}, {self.op}s of {self.array}: {_many(self.cost, self.unit)} per warp request"
        if self.waste <= 1 + 1e-9:
            how = ("the conflict-free minimum" if self.space == "shared" else "as few as its bytes need")
        else:
            how = (f"where {accesses.short_number(self.ideal)} would do" + (
                f" ({_conflict(self.ways)})" if self.space == "shared" else " (not coalesced)"))
        theirs = course.of(self)
        beside = ("as in" if abs(theirs - self.waste) < 1e-9 else "the course's") + f" {course.kernel}"
        if abs(theirs - self.waste) >= 1e-9:
            beside += f": {accesses.short_number(theirs * self.ideal)}"
        # where it wastes what the course's kernel does: the stage that takes that waste up
        later = course.later.get((self.space, self.op, self.array)) if abs(theirs - self.waste) < 1e-9 else None
        return f"{what}, {how}; {beside}" + (f" ({later})" if later else "")


def _example(tr: Trace, q: memory.Request, dims: dict[str, tuple[int, int]]) -> str:
    """How the lanes of one request fall: words and banks (shared), or the rows and columns of the matrix (global)."""
    if q.space != "global":
        return accesses.bank_view(tr, q).lane_groups()
    width = dims.get(q.array, (0, 0))[1]
    ids = [b for b, name in tr.buffers.items() if name == q.array]
    if not width or not ids:
        return ""
    element = q.offsets // tr.itemsize[ids[0]]
    rows = np.unique(element // width)
    runs = [np.unique(element[element // width == r] % width) for r in rows]
    sizes = sorted({c.size for c in runs})
    steps = {int(d) for c in runs for d in np.unique(np.diff(c))}
    apart = ("" if len(steps) != 1 else " neighbouring" if steps == {1} else "")
    after = f" {steps.pop()} apart" if len(steps) == 1 and not apart else ""
    return (f"its {q.lanes.size} lanes {q.op} {rows.size} row{'s' * (rows.size > 1)} of {q.array}, "
            f"{'/'.join(map(str, sizes))}{apart} column{'s' * (sizes[-1] > 1)}{after} in each")


def _banks(q: memory.Request, seen: dict) -> tuple[int, int, int]:
    """(wavefronts, conflict-free minimum, ways) of a shared request. Moving every lane's address by the same
    number of whole words changes no conflict, so requests of one pattern (the same lanes, the same distances
    between their words: one loop's requests, warp after warp and step after step) are counted once."""
    base = int(q.offsets.min()) // 4 * 4
    key = (q.size, q.lanes.tobytes(), (q.offsets - base).tobytes())
    if key not in seen:
        b = memory.banks(q)
        seen[key] = (b.wavefronts, b.ideal, b.ways)
    return seen[key]


def measure(tr: Trace, M: int, N: int, K: int) -> list[Access]:
    """Every shared load and every global load and store of block 0, per source line and array."""
    dims = {"A": (M, K), "B": (K, N), "C": (M, N)}
    groups: dict[tuple, list] = {}
    seen: dict[tuple, tuple[int, int, int]] = {}
    for q in memory.requests(tr):
        if q.block != tr.blocks[0] or (q.space != "global" and q.op != "load") or q.op not in ("load", "store"):
            continue
        space = "global" if q.space == "global" else "shared"
        if space == "global":
            cost, ideal = memory.sectors(q)
            ways = 1
        else:
            cost, ideal, ways = _banks(q, seen)
        groups.setdefault((q.line, space, q.op, q.array), []).append((cost, ideal, ways, q))
    out = []
    for (line, space, op, array), rows in groups.items():
        worst = max(rows, key=lambda r: r[0] / max(r[1], 1))
        out.append(Access(line, space, op, array, len(rows), sum(r[0] for r in rows) / len(rows),
                          sum(r[1] for r in rows) / len(rows), max(r[2] for r in rows),
                          _example(tr, worst[3], dims) if worst[0] > worst[1] else ""))
    return sorted(out, key=lambda a: (a.line, a.space != "shared", a.array))


@dataclass(frozen=True)
class Verdict:
    """What the mapping costs, in lines for the verdict, and the access that fails (None: none does)."""
    measured: tuple[str, ...]
    numbers: dict
    failing: Access | None
    course: CourseCosts
    over: tuple[Access, ...] = ()     # every access over the limit, the failing one first

    def cause(self) -> str:
        a = self.failing
        theirs = self.course.of(a)
        also = [b for b in self.over if b is not a]
        return (f"line {a.line}: a warp's {a.op} of {a.array} costs {_many(a.cost, a.unit)} per request "
                f"where {accesses.short_number(a.ideal)} would do"
                + (f", {_conflict(a.ways)}" if a.space == "shared" else ", its lanes spread over memory")
                + f" ({a.example}): {accesses.short_number(a.waste / theirs)} times what the course's "
                  f"{self.course.kernel} pays there ({accesses.short_number(theirs * a.ideal)}), where the check "
                  f"accepts less than {FACTOR:.0f} times"
                + ("; over it too: " + ", ".join(f"the {b.op}s of {b.array} at line {b.line} ({_many(b.cost, b.unit)} "
                                                 f"where {accesses.short_number(b.ideal)} would do)" for b in also)
                   if also else ""))

    def hint(self) -> str:
        a = self.failing
        if a.space == "shared":
            return (f"at one step k the 32 lanes of a warp load {a.array} together, and words of one bank (other than "
                    f"one word they share) are served one after another. Choose which results each thread computes so "
                    f"that the lanes of a warp read one word of {a.array} together, or words in different banks "
                    f"(neighbouring words lie in neighbouring banks): let threads with neighbouring threadIdx.x take "
                    f"neighbouring columns of C.")
        return (f"the 32 lanes of a warp {a.op} {a.array} together, and each 32-byte sector they touch is moved whole. "
                f"Let threads with neighbouring threadIdx.x take neighbouring columns of one row of {a.array}, so that "
                f"a warp's request falls in as few sectors as its bytes need (stage 02).")


def judge(tr: Trace, M: int, N: int, K: int, course: CourseCosts, skip: tuple[str, ...] = ()) -> Verdict:
    """The mapping's costs beside the course's kernel's, and the access that wastes at least FACTOR times what
    the course's kernel wastes on it (the worst such; `skip`: arrays whose loads the stage's own lesson judges)."""
    found = measure(tr, M, N, K)
    numbers = {}
    for a in found:   # the worst line of each kind, as the verdict's numbers
        numbers[a.key] = max(numbers.get(a.key, 0.0), a.cost)
    over = [a for a in found if a.array not in skip and a.waste >= FACTOR * course.of(a) - 1e-9]
    over = sorted(over, key=lambda a: -a.waste / course.of(a))
    measured = ("what your mapping of threads to results costs, per warp request of block 0:",
                *(f"  {a.words(course)}" for a in found))
    return Verdict(measured, numbers, over[0] if over else None, course, tuple(over))

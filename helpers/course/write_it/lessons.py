"""The lessons the exercises' checks measure, each from a trace of the learner's own kernel
(block 0 of a problem whose sizes are multiples of every tile, so that no edge hides the pattern).
An exercise names one of these in its module, or writes its own: trace, M, N, K -> Lesson."""

from __future__ import annotations

from helpers.course.write_it.exercise import Lesson, LessonCheck
from helpers.measure import accesses, memory
from helpers.measure.trace import Trace


def _global_lines(tr: Trace) -> list[dict]:
    """Per source line, operation and array of global memory: requests, sectors and the ideal."""
    df = memory.per_line(tr)
    if df.empty or "sectors" not in df:
        return []
    rows = df[df["space"] == "global"].to_dict("records")
    return [{"line": int(r["line"]), "op": r["op"], "array": r["array"], "requests": int(r["requests"]),
             "sectors": r["sectors"] / r["requests"], "ideal": r["ideal sectors"] / r["requests"]} for r in rows]


def coalesced(tr: Trace, M: int, N: int, K: int) -> Lesson:
    """Stage 02: every global request of block 0 touches no more 32-byte sectors than its bytes need."""
    rows = _global_lines(tr)
    if not rows:
        return Lesson(False, (), "the trace of block 0 holds no global load or store", None,
                      "the kernel must read A and B and write C.")
    measured = tuple(f"line {r['line']}, {r['op']} of {r['array']}: {r['sectors']:.1f} sectors per warp request "
                     f"(ideal {r['ideal']:.1f})" for r in rows)
    numbers = {f"{r['op']} {r['array']} sectors per request": r["sectors"] for r in rows}
    worst = max(rows, key=lambda r: r["sectors"] / max(r["ideal"], 1e-9))
    if worst["sectors"] <= worst["ideal"] + 1e-9:
        return Lesson(True, measured, numbers=numbers)
    return Lesson(False, measured,
                  f"line {worst['line']}: each warp's {worst['op']} of {worst['array']} touches "
                  f"{worst['sectors']:.1f} sectors of 32 bytes where its bytes fit in {worst['ideal']:.1f}: "
                  f"the lanes of a warp are spread over memory (not coalesced)", worst["line"],
                  "the 32 lanes of a warp have consecutive threadIdx.x: let threadIdx.x pick the COLUMN of C "
                  "(col = blockIdx.x * blockDim.x + threadIdx.x), so that they load neighbouring elements of B "
                  "and store neighbouring elements of C.", numbers)


def loads_once(tile: int, arrays: tuple[str, ...] = ("A", "B")) -> LessonCheck:
    """Stage 03: block 0 loads each element of A (and B) it uses from global memory exactly once, and
    its threads read them from shared memory (a naive block of tile x tile threads loads each `tile` times)."""

    def lesson(tr: Trace, M: int, N: int, K: int) -> Lesson:
        dims = {"A": (M, K), "B": (K, N)}
        measured, numbers, problem = [], {}, None
        rows = _global_lines(tr)
        for name in arrays:
            counts = accesses.global_load_counts(tr, name, *dims[name])
            used = counts[counts > 0]
            most = int(used.max()) if used.size else 0
            numbers[f"{name} loads per element"] = float(used.mean()) if used.size else 0.0
            mean = accesses.short_number(used.mean()) if used.size else "0"
            measured.append(f"{name}: block 0 loads each of the {used.size} elements it uses "
                            f"{'once' if mean == '1' else mean + ' times'} from global memory, at most {most} "
                            f"(one thread per element, as in stage 02, loads each {tile} times)")
            if problem is None and most > 1:
                line = next((r["line"] for r in rows if r["op"] == "load" and r["array"] == name), None)
                problem = (f"block 0 loads elements of {name} up to {most} times from global memory "
                           f"(on average {accesses.short_number(used.mean())})", line,
                           f"copy each element of the tile once: thread (tx, ty) loads one element of {name} into "
                           f"shared memory per tile, then, after a __syncthreads(), every thread reads the {tile} "
                           f"it needs from the shared tile.")
        shared = [q for q in memory.requests(tr, "shared") if q.op == "load"]
        sizes = ", ".join(f"{v.name} {v.size} B" for v in tr.shared_variables) or "none"
        glob = sum(r["requests"] for r in rows if r["op"] == "load" and r["array"] in arrays)
        numbers.update({"shared load requests": len(shared), "global load requests": glob})
        measured.append(f"shared memory: {sizes}; block 0 made {len(shared)} shared load requests and "
                        f"{glob} global load requests of {' and '.join(arrays)}")
        if not shared:
            problem = ("block 0 reads nothing from shared memory", None,
                       f"declare __shared__ float As[{tile}][{tile}], Bs[{tile}][{tile}]; copy a tile of A and "
                       f"one of B into them, __syncthreads(), and take the multiply-adds from As and Bs.")
        if problem:
            return Lesson(False, tuple(measured), problem[0], problem[1], problem[2], numbers)
        return Lesson(True, tuple(measured), numbers=numbers)

    return lesson


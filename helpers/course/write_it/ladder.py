"""The learner's ladder (issue 30): their saved kernels, stage by stage, beside the course's and cuBLAS.

    write_it.ladder()                       # in a notebook (11's): a table
    python -m helpers ladder --mine         # on the command line (--json FILE: with provenance on a GPU)

Each saved kernel (my_kernels/NN.cu) is checked first, as its %%kernel cell checks it (correct on the stage's
shapes, safe, the lesson), and goes into the learner's record. Each stage's lesson figure (Exercise.headline)
is measured from the trace of the learner's kernel and of the course's, on the emulator, on any machine. On a
GPU, each kernel that passed is timed beside the course's (at the exercise's tiles) and cuBLAS, at size³."""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.core.errors import CourseError
from helpers.core.paths import rel
from helpers.course.write_it import compare, magic
from helpers.course.write_it.judge import TIME_REPEAT, TIME_SIZE, time_beside
from helpers.course.write_it.registry import exercises
from helpers.measure import bench
from helpers.run import backend
from helpers.run.kernel_loader import load_kernel


@dataclass
class Rung:
    exercise: str
    title: str
    status: str                    # "passed", "failed", "not done yet", or "not saved"
    verdict: str                   # the check's last line, or where nothing is saved
    headline: str                  # the lesson's figure (Exercise.headline)
    yours: float | None = None     # its value in the learner's trace
    course: float | None = None    # and in the course kernel's
    times: dict = field(default_factory=dict)   # on a GPU: name -> {"ms", "tflops", "pct_cublas"}

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Ladder:
    rungs: list[Rung]
    backend: str
    size: int
    provenance: dict | None = None

    def as_dict(self) -> dict:
        return {"backend": self.backend, "size": self.size, "rungs": [r.as_dict() for r in self.rungs],
                **({"provenance": self.provenance} if self.provenance else {})}

    def _head(self) -> str:
        timed = any(r.times for r in self.rungs)
        return (f"Your ladder: your saved kernels ({rel(magic.folder())}), each checked, beside the course's; the "
                f"lesson's figure from both traces (emulator)" +
                (f"; times at {self.size}³ on {self.backend}, median of {TIME_REPEAT}." if timed else
                 "; no times: on a GPU only."))

    def cells(self) -> list[list[str]]:
        """The table: a header row, then a row per exercise."""
        timed = any(r.times for r in self.rungs)
        out = [["exercise", "yours", "lesson figure", "yours", "course's"]
               + (["yours TFLOP/s", "% of cuBLAS", "course's TFLOP/s", "% of cuBLAS"] if timed else [])]
        for r in self.rungs:
            row = [f"{r.exercise} {r.title}", r.status, r.headline, _num(r.yours), _num(r.course)]
            if timed:
                y, c = r.times.get("yours", {}), r.times.get("course", {})
                row += [_num(y.get("tflops")), _num(y.get("pct_cublas")), _num(c.get("tflops")),
                        _num(c.get("pct_cublas"))]
            out.append(row)
        return out

    def text(self) -> str:
        rows = self.cells()
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return "\n".join([self._head(), *("  ".join(f"{v:<{w}}" for v, w in zip(row, widths)).rstrip()
                                           for row in rows)])

    def _repr_markdown_(self) -> str:
        head, *rows = self.cells()
        return "\n".join([self._head(), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                          *("| " + " | ".join(row) + " |" for row in rows)])

    __str__ = text


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int, float)):
        return f"{x:.3g}"
    return str(x)


def ladder(size: int = TIME_SIZE, ids=None) -> Ladder:
    """The learner's ladder (see the module); `ids` limits it to those exercises."""
    on_gpu = backend.name() == "gpu"
    rungs = []
    for ex in exercises():
        if ids is not None and ex.id not in ids:
            continue
        path = magic.saved_path(ex.id)
        course = compare.measure_course(ex)
        rung = Rung(ex.id, ex.title, "not saved", f"nothing saved ({rel(path)})", ex.headline,
                    course=_scalar(course.lesson.get(ex.headline)))
        if path.is_file():
            v = magic.checked(ex.id, path, "your saved kernel", timed=False)
            rung.status, rung.verdict = v.status, v.last_line()
            rung.yours = _scalar(v.numbers.get(ex.headline))
            if v.ok and on_gpu:
                rung.times = _times(ex, path, size)
        rungs.append(rung)
    provenance = bench.provenance(f"python -m helpers ladder --mine --size {size}") if on_gpu else None
    return Ladder(rungs, backend.current().device_info().name if on_gpu else "the CPU emulator", size, provenance)


def _scalar(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _times(ex, path, size: int) -> dict:
    try:
        kernels = {name: load_kernel(path, name) for name, _ in ex.signatures()}
        rows = time_beside(ex, kernels, size)
    except CourseError as e:
        return {"not timed": str(e).splitlines()[0]}
    out = {}
    for key, (name, t, pct) in zip(("yours", "course", "cublas"), rows):   # each % against its own precision
        out[key] = {"name": name, "ms": t.median_ms, "tflops": t.tflops(size, size, size), "pct_cublas": pct}
    return out

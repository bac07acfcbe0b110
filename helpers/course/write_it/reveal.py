"""Attempt before reveal (issue 30): the course's kernel for a stage, and its diff against the kernel it is built
from, are shown once the learner's own kernel for the stage passes, or when the learner asks for them anyway.

    write_it.reveal("04")                  # the course's kernel and its diff, if your saved 04 passes
    write_it.reveal("04", give_up=True)    # shown now; your record (and a teacher's grade) says you asked
                                           # before passing
    write_it.side_by_side("04")            # yours beside the course's: diff, lessons, costs, GPU times

A reveal before passing goes into the learner's record (record.py), and what it shows carries the exercise's
history in the output's metadata, so that a notebook handed in tells the teacher's grader
("asked to see the course's kernel before passing"). A reveal after passing is recorded too, as such."""

from __future__ import annotations

import difflib

from helpers.core import stages
from helpers.core.kernel_source import strip_comments
from helpers.core.markdown import Markdown
from helpers.core.paths import rel
from helpers.course.write_it import compare, magic, record
from helpers.course.write_it.judge import TIME_REPEAT, TIME_SIZE, time_beside
from helpers.course.write_it.registry import exercise
from helpers.run import backend
from helpers.run.kernel_loader import load_kernel
from helpers.views import display


def reveal(exercise_id, give_up: bool = False) -> record.Shown:
    """The course's kernel for the exercise's stage and its diff (code only), where the learner's saved kernel
    passes or `give_up` asks for them anyway; else what is missing, and how to go on."""
    ex = exercise(exercise_id)
    ok, words = magic.passes(ex.id)
    if not ok and not give_up:
        return record.Shown(
            f"**Not yet.** The course's kernel for exercise {ex.id} is shown once yours passes: {words}.\n\n"
            f"Keep at it: `write_it.hint('{ex.id}')` gives a hint in words. To see the course's kernel anyway: "
            f"`write_it.reveal('{ex.id}', give_up=True)`; your record says that you asked before passing (a "
            f"teacher's grade report shows it).", record.history(ex.id))
    record.add(ex.id, "reveal", before_passing=not ok)
    v = stages.variant(ex.course_kernel)
    parts = [f"**The course's kernel for exercise {ex.id}**, " + (
        f"shown because yours passed. `write_it.side_by_side('{ex.id}')` puts the two side by side."
        if ok else "shown at your request, before yours passed (your record says so). Yours can still pass: "
                   f"the check judges what your kernel does."), "", str(display.kernel_source(v.name))]
    if v.parent:
        parts += ["", f"What changed from `{v.parent}` (comments left out):", "",
                  str(display.lesson_diff(v.name, code_only=True))]
    return record.Shown("\n".join(parts), record.history(ex.id))


def _diff(a, b, names: tuple[str, str]) -> str:
    lines = [[ln.rstrip() for ln in strip_comments(p.read_text()).splitlines() if ln.strip()] for p in (a, b)]
    return "\n".join(difflib.unified_diff(*lines, fromfile=names[0], tofile=names[1], n=1, lineterm=""))


def _rows(rows: list[tuple[str, str, str]], course: str) -> list[str]:
    return ["| | yours | " + course + " |", "|---|---:|---:|", *(f"| {n} | {a} | {b} |" for n, a, b in rows)]


def side_by_side(exercise_id, time_size: int = TIME_SIZE) -> Markdown:
    """The learner's saved kernel beside the course's: a diff (code only), both traces' lesson figures, what each
    costs an SM and moves per multiply-add, on a GPU both times beside cuBLAS, and where theirs is slower, the
    numbers of the instruments that are worse (compare.reasons). Needs the learner's kernel to pass first (or a
    reveal asked for)."""
    ex = exercise(exercise_id)
    ok, words = magic.passes(ex.id)
    if not ok and not any(True for _ in record.events(ex.id, "reveal")):
        return Markdown(f"**Not yet**: {words}. Side by side comes after yours passes (or after "
                        f"`write_it.reveal('{ex.id}', give_up=True)`).")
    mine = magic.saved_path(ex.id)
    variant, config = compare.course_variant(ex)
    course = f"`{variant.name}` ({config.label()})"
    yours, theirs = compare.measure_yours(ex, mine), compare.measure_course(ex)
    out = [f"**Exercise {ex.id}: yours ({rel(mine)}) beside the course's {course}.**", "",
           f"The code, yours against the course's (comments left out; the course's kernel is a template for every "
           f"tile size, yours has the exercise's fixed sizes):", "",
           "```diff", _diff(mine, variant.path, (rel(mine), rel(variant.path))), "```", "",
           f"The lesson ({ex.lesson_text}), from both traces, on the emulator:", "",
           *_rows(compare.table(yours, theirs, "lesson"), course), "",
           "What each costs an SM (ptxas) and moves per multiply-add (both traces):", "",
           *_rows(compare.table(yours, theirs, "resources") + compare.table(yours, theirs, "traffic"), course)]
    out += [f"\n{m.who}: {m.problem}" for m in (yours, theirs) if m.problem]
    slower = None
    if backend.name() == "gpu":
        try:
            kernels = {name: load_kernel(mine, name) for name, _ in ex.signatures()}
            rows = time_beside(ex, kernels, time_size)
        except Exception as e:    # a GPU error must not lose the emulator's half of the comparison
            out += ["", f"Not timed: {str(e).splitlines()[0]}"]
        else:
            n = time_size
            out += ["", f"On this GPU ({backend.current().device_info().name}), {n} × {n} × {n}, median of "
                        f"{TIME_REPEAT} (each % of cuBLAS in its own precision):", "",
                    "| | ms | TFLOP/s | % of cuBLAS |", "|---|---:|---:|---:|",
                    *(f"| {name} | {t.median_ms:.3f} | {t.tflops(n, n, n):.2f} | {pct:.1f} |" for name, t, pct in rows)]
            slower = rows[0][2] * compare.MARGIN < rows[1][2]  # by % of cuBLAS: the two may differ in precision
    else:
        out += ["", "Times: on a GPU only (the emulator's speed says nothing about a GPU's); the numbers above are "
                    "the instruments' on any machine."]
    why = compare.reasons(yours, theirs)
    if slower is not None:
        out += ["", ("**Yours is slower.** " if slower else "Yours is as fast (within 5 %) or faster. ")
                + ("Where the instruments find it worse than the course's:" if why else
                   "None of the instruments' numbers above is worse than the course's by more than 5 %: what is "
                   "left is in the instructions themselves (compare the diff; `python -m helpers ncu` on a GPU).")]
    elif why:
        out += ["", "Where the instruments find yours worse than the course's (on a GPU these are the usual "
                    "reasons for a slower kernel):"]
    out += [f"- {w}" for w in why]
    return Markdown("\n".join(out))

"""Hints in levels, for a learner stuck on an exercise (issue 30: scaffolding that fades):

    write_it.hint("05")        # the next level: 1 the idea, then 2 what each thread computes
    write_it.hint("05", 3)     # the code: only when asked for by number

Levels 1 and 2 are words (Exercise.hints). Level 3 is the code the course's solution writes under each TODO
block of the starter (a copy of the course without solutions/, as a class gets it, has none to give). Each hint
goes into the learner's record, and its output carries the exercise's history for the teacher's grader
(record.py): a grade report can say "hints seen: levels 1, 2, 3 (level 3 is the code)"."""

from __future__ import annotations

import difflib
import re

from helpers.core.kernel_source import strip_comments
from helpers.course.write_it import record
from helpers.course.write_it.exercise import Exercise
from helpers.course.write_it.registry import ExerciseError, exercise

LEVELS = {1: "the idea", 2: "what each thread computes", 3: "the code"}
_TODO = re.compile(r"//\s*TODO\s*(\d+)")


def code_hint(ex: Exercise) -> str:
    """Level 3: for each TODO block of the starter, the lines the solution writes there (Markdown)."""
    if not ex.solution_path.is_file():
        raise ExerciseError(f"this copy of the course holds no solutions ({ex.solution_path.parent.name}/ is not "
                            f"there), so hint 3, the code, is not in it: your teacher's copy has it. Hints 1 and 2 "
                            f"are: write_it.hint('{ex.id}', 2).")
    starter = ex.starter_path.read_text().splitlines()
    solution = ex.solution_path.read_text().splitlines()
    blocks: dict[str, list[str]] = {}
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, starter, solution, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        code = [line for line in solution[j1:j2] if strip_comments(line).strip()]
        if not code:
            continue
        label = next((m.group(1) for line in reversed(starter[:i2]) if (m := _TODO.search(line))), "?")
        blocks.setdefault(label, []).extend(code)
    parts = [f"TODO {label}:\n\n```cpp\n{_dedent(lines)}\n```" for label, lines in sorted(blocks.items())]
    return "\n\n".join(parts) or "The solution writes nothing the starter does not hold."


def _dedent(lines: list[str]) -> str:
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    return "\n".join(line[indent:] for line in lines)


def hint(exercise_id, level: int | None = None) -> record.Shown:
    """The hint of that level for the exercise (default: the next one, up to 2; level 3, the code, only when
    asked for by number), recorded in the learner's record and in the output's metadata."""
    ex = exercise(exercise_id)
    seen = {int(e.get("level", 0)) for e in record.events(ex.id, "hint")}
    if level is None:
        level = min(max(seen, default=0) + 1, 2)
    if level not in LEVELS:
        raise ExerciseError(f"hint levels are 1 ({LEVELS[1]}), 2 ({LEVELS[2]}) and 3 ({LEVELS[3]}), not {level!r}.")
    if level < 3 and len(ex.hints) < level:
        raise ExerciseError(f"exercise {ex.id} has {len(ex.hints)} hint{'s' * (len(ex.hints) != 1)} in words.")
    text = ex.hints[level - 1] if level < 3 else code_hint(ex)
    record.add(ex.id, "hint", level=level)
    after = {1: f"Still stuck? `write_it.hint('{ex.id}')` gives hint 2, what each thread computes.",
             2: f"The code itself, only if you want it: `write_it.hint('{ex.id}', 3)` (your record will say so).",
             3: "Now write it your way: the check measures what your kernel does, not whether it matches these lines."}
    return record.Shown(f"**Exercise {ex.id}, hint {level} of 3: {LEVELS[level]}.**\n\n{text}\n\n{after[level]}",
                        record.history(ex.id))

"""Where a notebook cell calls an exercise's checker: each call's name and where its arguments sit in the source.

What an answer is in the course: one call of a checker in a code cell, `check_05_exercise_1(("?", "?"))`, the
learner's answer between its parentheses. The teacher kit rewrites those arguments (student and teacher copies),
the grader reads them, and the maintainers' answers-on-screen check looks above them; all find them here.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from helpers.course.exercises import CHECKER_NAME


@dataclasses.dataclass(frozen=True)
class Call:
    name: str             # check_05_exercise_1
    args: str             # the source between the parentheses
    start: int            # offsets of `args` in the cell's source
    end: int
    func_start: int = 0   # offsets of the called expression (check_05_exercise_1, exercises.check_...)
    func_end: int = 0


MAX_PARSED = 200_000        # characters of a cell parsed for its calls: a course cell has a few thousand

# where a line ends for Python's parser: \n, \r\n or \r. str.splitlines also breaks at a form feed, \x0b, \x1c-\x1e,
# \x85, \u2028 and \u2029, which a comment or a string may hold: offsets counted from those lines land elsewhere.
_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def _offset(lines: list[str], line: int, col_bytes: int) -> int:
    """Character offset in the source of (1-based line, UTF-8 byte column), as ast reports them."""
    text = lines[line - 1]
    return sum(len(s) for s in lines[:line - 1]) + len(text.encode()[:col_bytes].decode(errors="ignore"))


def parse(source: str) -> ast.Module | None:
    """A cell's syntax tree; None for one Python cannot parse (IPython magics, a null byte), one nested past the
    parser's depth (100,000 terms of 1+1+...), or one over MAX_PARSED characters (its tree would take gigabytes)."""
    if len(source) > MAX_PARSED:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def checker_calls(source: str) -> list[Call]:
    """The checker calls in a cell, in order. A cell Python cannot parse (parse()) has none."""
    tree = parse(source)
    if tree is None:
        return []
    lines = _LINE_BREAK.split(source)    # Python's own line breaks, not str.splitlines' (\f, \x85, \u2028, ...)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if not name or not CHECKER_NAME.match(name):
            continue
        parts = [*node.args, *node.keywords]
        if parts:
            start = _offset(lines, parts[0].lineno, parts[0].col_offset)
            end = _offset(lines, parts[-1].end_lineno, parts[-1].end_col_offset)
        else:   # check_x(): the empty space between the parentheses
            end = start = _offset(lines, node.end_lineno, node.end_col_offset) - 1
        found.append(Call(name, source[start:end], start, end, _offset(lines, f.lineno, f.col_offset),
                          _offset(lines, f.end_lineno, f.end_col_offset)))
    return sorted(found, key=lambda c: c.start)

"""What an answer's value is, read by the grader from the cell's source and never executed: arguments written
as constants, and whether the notebook names the course's solution registry."""

from __future__ import annotations

import ast

from helpers.course.exercises.calls import parse

SOLUTION_NAMES = {"solution", "solutions", "SOLUTIONS", "teacher_copy", "write_copies"}


class _NotConstant(Exception):
    pass


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a ** b}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 2 ** 64


def _const(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_const(e) for e in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_const(k): _const(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _const(node.operand)
        if _number(v):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _const(node.left), _const(node.right)
        if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str) and len(a) + len(b) < 10 ** 4:
            return a + b
        if _number(a) and _number(b) and not (isinstance(node.op, ast.Pow) and abs(b) > 64):
            try:
                v = _OPS[type(node.op)](a, b)
            except (ArithmeticError, ValueError):
                raise _NotConstant from None
            if _number(v):
                return v
    raise _NotConstant


def constant_arguments(args_source: str) -> tuple[list, dict] | None:
    """The arguments written between a call's parentheses, when all are constants; else None."""
    try:
        call = ast.parse(f"f({args_source})", mode="eval").body
        return [_const(a) for a in call.args], {k.arg: _const(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, _NotConstant, TypeError, RecursionError, ValueError):   # TypeError: {[1]}, unhashable
        return None


def reads_solutions(source: str) -> bool:
    """Whether Python code names the course's solution registry (exercises.solution, SOLUTIONS, ...)."""
    tree = parse(source)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in SOLUTION_NAMES or \
                isinstance(node, ast.Name) and node.id == "SOLUTIONS" or \
                isinstance(node, ast.ImportFrom) and (any(a.name in SOLUTION_NAMES for a in node.names)
                                                      or (node.module or "").endswith(".solutions")) or \
                isinstance(node, ast.Import) and any(a.name.endswith(".solutions") for a in node.names):
            return True
    return False

"""Block sizes a ``.py`` submission's launch plan spells out, read with ``ast`` (never run), for
``submitgen diff``'s occupancy estimate."""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping

_MAX_BLOCK = 1 << 20
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _eval_int(node: ast.AST, consts: Mapping[str, int], depth: int = 0) -> int | None:
    """Integer value of a literal, a known constant name, or + - * // on those; else None."""
    if depth > 32:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _eval_int(node.operand, consts, depth + 1)
        return -v if v is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _eval_int(node.left, consts, depth + 1), _eval_int(node.right, consts, depth + 1)
        if a is None or b is None or max(abs(a), abs(b)) > _MAX_BLOCK:
            return None
        return None if not b and type(node.op) is ast.FloorDiv else _OPS[type(node.op)](a, b)
    return None


def plan_blocks(text: str) -> dict[str | None, tuple[int, ...]]:
    """Block sizes (threads) of the launches a plan's source spells out, by kernel name (None for
    launches whose name is computed). Read with ``ast``; never run. Empty if none is readable."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    consts: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = _eval_int(stmt.value, consts)
            if v is not None:
                consts[stmt.targets[0].id] = v
            else:
                consts.pop(stmt.targets[0].id, None)
    found: dict[str | None, set[int]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Tuple) and len(node.elts) == 5):
            continue
        name_node, _grid, block, _lds, _args = node.elts
        if not (isinstance(block, ast.Tuple) and len(block.elts) == 3):
            continue
        dims = [_eval_int(e, consts) for e in block.elts]
        if any(d is None or d < 1 for d in dims):
            continue
        size = dims[0] * dims[1] * dims[2]  # type: ignore[operator]
        if size > _MAX_BLOCK:
            continue
        if isinstance(name_node, ast.Constant):
            if not isinstance(name_node.value, str):
                continue
            key: str | None = name_node.value
        else:
            key = None
        found.setdefault(key, set()).add(size)
    return {k: tuple(sorted(v)) for k, v in found.items()}



"""The TRITON table as the emitted file holds it: of each entry, only the keys the plan's code
names (a build-only key such as ``signature`` or ``source`` that the plan never names is left
out), written as a compact literal in the layout ``ruff format`` gives it."""

from __future__ import annotations

import ast

from submitgen.textfmt import py_string

LINE = 110  # the project's line length (pyproject.toml), which ruff format is run with


def named_strings(tree: ast.Module, skip: ast.AST) -> frozenset[str]:
    """Every string constant of ``tree`` outside ``skip`` (the TRITON literal itself)."""
    inside = {id(n) for n in ast.walk(skip)}
    return frozenset(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in inside)


def plan_view(table: dict, named: frozenset[str]) -> dict:
    """``table`` with each entry's keys cut to those in ``named``."""
    return {name: ({k: v for k, v in entry.items() if k in named} if isinstance(entry, dict) else entry)
            for name, entry in table.items()}


def _flat(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if isinstance(value, tuple):
        items = [_flat(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, str):
        return py_string(value)
    return repr(value)


def _items(value: object) -> tuple[str, str, list[tuple[str, object]]]:
    if isinstance(value, dict):
        return "{", "}", [(f"{_flat(k)}: ", v) for k, v in value.items()]
    opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
    return opening, closing, [("", v) for v in value]


def formatted(value: object, indent: int = 0, head: str = "", tail: str = "") -> list[str]:
    """``head + value + tail`` as lines at ``indent``: on one line when it fits, else one item a
    line (each with a trailing comma), as ruff format splits a collection."""
    pad = " " * indent
    flat = f"{pad}{head}{_flat(value)}{tail}"
    if len(flat) <= LINE or not isinstance(value, (dict, list, tuple)) or not value:
        return [flat]
    opening, closing, items = _items(value)
    lines = [f"{pad}{head}{opening}"]
    for prefix, item in items:
        lines += formatted(item, indent + 4, prefix, ",")
    return [*lines, f"{pad}{closing}{tail}"]


def assignment(name: str, call: str, value: object) -> str:
    """``name = call(value)`` as ruff format writes it."""
    one = f"{name} = {call}({_flat(value)})"
    if len(one) <= LINE:
        return one
    inner = formatted(value, 4)
    if len(inner) == 1:
        return "\n".join([f"{name} = {call}(", inner[0], ")"])
    return "\n".join([f"{name} = {call}(", *inner, ")"])

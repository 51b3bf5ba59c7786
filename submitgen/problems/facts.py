"""What lint needs of each shipped problem (name, leaderboard, GPU, payload baseline, whether its
evaluator clones the inputs), read from the problem module's source with ``ast`` instead of
importing it: a problem module imports torch (seconds), and lint reads no tensor.

A module's ``PROBLEM = ProblemSpec(...)`` is read keyword by keyword; ``PROBLEM = helper(globals(),
...)`` through the helper's own ``return ProblemSpec(...)`` in :mod:`submitgen.problems.spec`
(``ns["NAME"]`` is the module's constant ``NAME``, a parameter is the caller's keyword, ``**extra``
the caller's other keywords), and a field left out takes ``ProblemSpec``'s default. Anything else
(a computed value, another helper) makes :func:`static_problems` answer None, and the registry
imports the modules as usual. tests/test_lint_no_torch.py checks that the facts read here equal
the imported specs."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELDS = ("name", "leaderboard", "gpu", "payload_baseline", "eval_clones_inputs")


@dataclass(frozen=True)
class ProblemFacts:
    module: str
    name: str
    leaderboard: str
    gpu: str
    payload_baseline: int
    eval_clones_inputs: bool


class _Unknown(Exception):
    """A value that is not a literal."""


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        raise _Unknown
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _Unknown from None


def _tree(path: Path) -> ast.Module | None:
    """The module's tree; None when its text has no "PROBLEM =" (not a problem module)."""
    try:
        text = path.read_text(encoding="utf-8")
        return ast.parse(text) if "PROBLEM =" in text else None
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        raise _Unknown from None


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            out[stmt.targets[0].id] = stmt.value
    return out


def _spec_source() -> tuple[dict[str, ast.FunctionDef], dict[str, ast.expr]]:
    """The helpers of spec.py (by name) and ProblemSpec's field defaults."""
    tree = _tree(Path(__file__).with_name("spec.py"))
    if tree is None:
        raise _Unknown
    helpers = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    defaults: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == "ProblemSpec":
            for item in stmt.body:
                named = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                if named and item.value is not None:
                    defaults[item.target.id] = item.value
    return helpers, defaults


def _spec_call(fn: ast.FunctionDef) -> ast.Call:
    for stmt in fn.body:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "ProblemSpec":
            return stmt.value
    raise _Unknown


def _facts(module: str, path: Path, helpers: dict[str, ast.FunctionDef],
           defaults: dict[str, ast.expr]) -> ProblemFacts | None:
    tree = _tree(path)
    if tree is None:
        return None
    consts = _constants(tree)
    call = consts.get("PROBLEM")
    if call is None:
        return None  # not a problem module
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise _Unknown
    given = {k.arg: k.value for k in call.keywords if k.arg is not None}
    values: dict[str, Any] = {}
    if call.func.id == "ProblemSpec":
        for field in FIELDS:
            values[field] = _literal(given.get(field, defaults.get(field)))
    elif call.func.id in helpers:
        fn = helpers[call.func.id]
        params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        ns = params[0] if fn.args.args else None
        inner = {k.arg: k.value for k in _spec_call(fn).keywords if k.arg is not None}
        extra = fn.args.kwarg is not None and any(k.arg is None for k in _spec_call(fn).keywords)
        for field in FIELDS:
            node = inner.get(field)
            if node is None:
                node = given.get(field) if extra and field not in params else None
                node = node if node is not None else defaults.get(field)
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == ns:
                node = consts.get(_literal(node.slice))
            elif isinstance(node, ast.Name) and node.id in params:
                node = given.get(node.id)
            values[field] = _literal(node)
    else:
        raise _Unknown
    if not (isinstance(values["name"], str) and isinstance(values["leaderboard"], str)
            and isinstance(values["gpu"], str) and type(values["payload_baseline"]) is int
            and isinstance(values["eval_clones_inputs"], bool)):
        raise _Unknown
    return ProblemFacts(module, **values)


@functools.cache
def static_problems() -> tuple[ProblemFacts, ...] | None:
    """The facts of every built-in problem module, in the registry's order, or None when one of them
    cannot be read without importing it."""
    from submitgen.problems.registry import REGISTRY  # lazy: the registry imports this module

    try:
        helpers, defaults = _spec_source()
        out = []
        for _, module in REGISTRY.builtins:
            path = Path(__file__).parent / f"{module.rsplit('.', 1)[1]}.py"
            facts = _facts(module, path, helpers, defaults)
            if facts is not None:
                out.append(facts)
    except _Unknown:
        return None
    return tuple(out)

"""The AST rules about ``custom_kernel``: that the module binds it (``custom-kernel``) and, for a
problem whose evaluator passes the inputs uncloned, that it does not visibly write into them
(``input-write``, a warning). Both walk the tree iteratively."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from submitgen.lint.findings import WARNING, LintFinding

_VIEWS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "t", "T", "mT", "transpose", "permute", "flatten",
    "unflatten", "squeeze", "unsqueeze", "narrow", "select", "expand", "expand_as", "as_strided",
    "unfold", "movedim", "swapaxes", "diagonal", "real", "imag", "data", "detach", "flip",
})
"""Methods and attributes whose result shares the tensor's memory (``flip`` copies, but it is where
a write is meant for the input)."""
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "record_"})


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for an attribute chain (``?`` where the chain starts with something else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return [stmt.body, stmt.orelse, stmt.finalbody] + [h.body for h in stmt.handlers]
    return []


def _binds(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == "custom_kernel"
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(isinstance(n, ast.Name) and n.id == "custom_kernel" for t in targets for n in ast.walk(t))
    if isinstance(stmt, ast.ImportFrom):
        return any((a.asname or a.name) == "custom_kernel" for a in stmt.names)
    return False


def binds_custom_kernel(body: list[ast.stmt]) -> bool:
    """Whether ``custom_kernel`` is bound at module level, also inside a module-level
    ``if``/``try``/``with`` (however deep: 1,000 ``elif``s are 1,000 nested blocks)."""
    todo = [body]
    while todo:
        for stmt in todo.pop():
            if _binds(stmt):
                return True
            todo.extend(_bodies(stmt))
    return False


def _root(node: ast.expr) -> str | None:
    """The name a subscript/view chain starts from: ``a`` for ``a[0].view(-1)[1:]``."""
    while True:
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and node.attr in _VIEWS:
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _input_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameter ``data`` and every name bound from it in ``fn`` (in source order, so
    ``a, b = data`` then ``x = a.view(-1)`` makes a, b and x inputs)."""
    params = fn.args.posonlyargs + fn.args.args
    if not params:
        return set()
    names = {params[0].arg}
    assigns = sorted(
        (n for n in ast.walk(fn) if isinstance(n, ast.Assign)), key=lambda n: (n.lineno, n.col_offset)
    )
    for node in assigns:
        if _root(node.value) in names:
            names.update(n for t in node.targets for n in _bound_names(t))
    return names


def _bound_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds: ``x``, ``a, (b, *c)``; a subscript or attribute
    target (``box[0] = data``) stores into an object and binds nothing."""
    stack = [target]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)


def _assign_writes(node: ast.Assign | ast.AugAssign, inputs: set[str]) -> Iterator[tuple[int, str, str]]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        name = _root(t)
        if name not in inputs:
            continue
        if isinstance(t, ast.Subscript):
            yield node.lineno, name, "assigns into a slice of it"
        elif isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
            yield node.lineno, name, "updates it in place with an augmented assignment"


def _call_writes(node: ast.Call, inputs: set[str]) -> Iterator[tuple[int, str, str]]:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_") \
            and func.attr not in _NOT_WRITES:
        name = _root(func.value)
        if name not in inputs and node.args and _dotted(func.value).split(".")[0] == "torch":
            name = _root(node.args[0])  # torch.relu_(x) and the like
        if name in inputs:
            yield node.lineno, name, f"calls the in-place {func.attr}() on it"
    for kw in node.keywords:
        name = _root(kw.value) if kw.arg == "out" else None
        if name in inputs:
            yield node.lineno, name, f"passes it as out= of {_dotted(func)}()"


def _writes(fn: ast.FunctionDef | ast.AsyncFunctionDef, inputs: set[str]) -> Iterator[tuple[int, str, str]]:
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            yield from _assign_writes(node, inputs)
        elif isinstance(node, ast.Call):
            yield from _call_writes(node, inputs)


def input_write_findings(tree: ast.Module) -> list[LintFinding]:
    """Warnings for visible writes into the inputs, in ``custom_kernel`` and in every function
    whose first parameter is ``data``."""
    found: list[LintFinding] = []
    seen: set[tuple[int, str]] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = fn.args.posonlyargs + fn.args.args
        if fn.name != "custom_kernel" and not (params and params[0].arg == "data"):
            continue
        for line, name, how in _writes(fn, _input_names(fn)):
            if (line, name) in seen:
                continue
            seen.add((line, name))
            found.append(LintFinding(
                "input-write", line, f"{fn.name}() writes into its input '{name}' ({how}): this "
                "leaderboard's evaluator passes the inputs without cloning them, and its reference "
                "then reads the changed tensors", "write results into a fresh tensor "
                "(torch.empty_like) and leave the inputs as they are", WARNING, source="eval.py"))
    return found

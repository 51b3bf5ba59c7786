"""The AST rules about hidden code: ``exec-decoded``, ``exec-dynamic`` and ``import-dynamic``.

Taint: a name is tainted when some binding of it (assignment, ``for``, ``with``, walrus) takes a
value that calls a decoder, reads a tainted name or calls a tainted function; a function is
tainted when one of its ``return`` values is. The least such set is found in one pass over a
dependency graph (every name and function a node, every binding an edge), so the cost grows with
the size of the file, not with its square. Every walk of the tree is iterative."""

from __future__ import annotations

import ast
from collections import defaultdict, deque
from collections.abc import Iterable

from submitgen.lint.findings import WARNING, LintFinding

_DECODERS = frozenset({
    "b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "decodebytes",
    "standard_b64decode", "urlsafe_b64decode", "decompress", "decompressobj", "fromhex",
    "unhexlify", "a2b_base64", "a2b_hex", "a2b_uu",
})
_EXEC_NAMES = frozenset({"exec", "eval", "compile"})
_BUILTINS_MODULES = frozenset({"builtins", "__builtins__"})


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node`` (itself first), like ``ast.walk`` but without its per-node
    generators: the lint walks 1 MB files several times."""
    out = [node]
    i = 0
    while i < len(out):
        cur = out[i]
        i += 1
        for name in cur._fields:
            value = getattr(cur, name, None)
            if isinstance(value, ast.AST):
                out.append(value)
            elif isinstance(value, list):
                out.extend(v for v in value if isinstance(v, ast.AST))
    return out


def returns_by_function(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """The values of the ``return`` statements of each function, by function name (a nested
    function's returns are its own)."""
    out: dict[str, list[ast.expr]] = defaultdict(list)
    todo: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while todo:
        node, func = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        elif isinstance(node, ast.Return) and node.value is not None and func is not None:
            out[func].append(node.value)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                todo.append((child, func))
    return out


def callee_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def dotted(node: ast.expr) -> str:
    """``a.b.c`` for an attribute chain (``?`` where the chain starts with something else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


def _is_source_call(node: ast.AST) -> bool:
    """A call of a decoder by name (``b64decode``, ``zlib.decompress``, ``codecs.decode``...)."""
    if not isinstance(node, ast.Call):
        return False
    name = callee_name(node.func)
    if name in _DECODERS:
        return True
    return name == "decode" and isinstance(node.func, ast.Attribute) and dotted(node.func.value) == "codecs"


def _bindings(nodes: list[ast.AST]) -> Iterable[tuple[list[ast.expr], ast.AST]]:
    for node in nodes:
        if isinstance(node, ast.Assign):
            yield node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if node.value is not None:
                yield [node.target], node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield [node.target], node.iter
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    yield [item.optional_vars], item.context_expr


def _reads(value: ast.AST) -> tuple[set[tuple[str, str]], bool]:
    """The names and called functions ``value`` depends on, and whether it calls a decoder."""
    deps: set[tuple[str, str]] = set()
    source = False
    for sub in walk(value):
        if isinstance(sub, ast.Name):
            deps.add(("name", sub.id))
        elif isinstance(sub, ast.Call):
            if _is_source_call(sub):
                source = True
            elif isinstance(sub.func, ast.Name):
                deps.add(("func", sub.func.id))
    return deps, source


class Taint:
    """The tainted names and functions of a module."""

    def __init__(self, nodes: list[ast.AST], returns: dict[str, list[ast.expr]]) -> None:
        edges: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
        start: set[tuple[str, str]] = set()

        def bind(targets: Iterable[tuple[str, str]], value: ast.AST) -> None:
            deps, source = _reads(value)
            for t in targets:
                if source:
                    start.add(t)
                for d in deps:
                    edges[d].add(t)

        for targets, value in _bindings(nodes):
            names = [("name", n.id) for t in targets for n in walk(t) if isinstance(n, ast.Name)]
            bind(names, value)
        for name, values in returns.items():
            for value in values:
                bind([("func", name)], value)
        seen = set(start)
        todo = deque(start)
        while todo:
            for nxt in edges.get(todo.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        self.names = {n for kind, n in seen if kind == "name"}
        self.funcs = {n for kind, n in seen if kind == "func"}

    def of(self, node: ast.AST) -> bool:
        """Whether ``node`` calls a decoder, reads a tainted name or calls a tainted function."""
        for sub in walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.names:
                return True
            if isinstance(sub, ast.Call) and (_is_source_call(sub) or (
                    isinstance(sub.func, ast.Name) and sub.func.id in self.funcs)):
                return True
        return False


class Sinks:
    """Which calls execute code or import a module, however they are reached."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        shadowed: set[str] = set()
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                shadowed.update(a.asname or a.name.split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                shadowed.add(node.name)
        self.shadowed = shadowed & _EXEC_NAMES
        self.aliases: frozenset[str] = frozenset()
        aliases: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Assign) and self.kind(node.value) == "exec":
                aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.aliases = frozenset(aliases)

    def _name_kind(self, name: str) -> str | None:
        if (name in _EXEC_NAMES and name not in self.shadowed) or name in self.aliases:
            return "exec"
        return "import" if name in ("__import__", "import_module") else None

    def kind(self, func: ast.expr) -> str | None:
        """'exec' for exec/eval/compile reached any way, 'import' for a dynamic import, None."""
        if isinstance(func, ast.Name):
            return self._name_kind(func.id)
        if isinstance(func, ast.Attribute):
            return _attribute_kind(func)
        if isinstance(func, ast.Call) and callee_name(func.func) == "getattr" and len(func.args) >= 2:
            attr = func.args[1]
            if isinstance(attr, ast.Constant) and attr.value in _EXEC_NAMES:
                return "exec"
            if isinstance(attr, ast.Constant) and attr.value == "__import__":
                return "import"
        if isinstance(func, ast.Subscript) and dotted(func.value) in _BUILTINS_MODULES:
            key = func.slice
            if isinstance(key, ast.Constant) and key.value in _EXEC_NAMES:
                return "exec"
        return None


def _attribute_kind(func: ast.Attribute) -> str | None:
    base = dotted(func.value)
    if func.attr in _EXEC_NAMES and base in _BUILTINS_MODULES:
        return "exec"
    if func.attr == "__import__" and base in _BUILTINS_MODULES:
        return "import"
    if func.attr == "import_module" and base.split(".")[-1] == "importlib":
        return "import"
    return None


_PLAIN = "write the code in the file as plain Python"


def _sink_finding(node: ast.Call, kind: str, taint: Taint) -> LintFinding | None:
    what = dotted(node.func) if not isinstance(node.func, ast.Call) else "getattr(...)"
    arg = node.args[0] if node.args else None
    literal = arg is not None and _is_literal(arg)
    if any(taint.of(a) for a in node.args) or any(taint.of(k.value) for k in node.keywords):
        return LintFinding(
            "exec-decoded", node.lineno,
            f"{what}() of decoded data (base64/zlib/lzma/... decode flows into it): "
            "hidden code, which reviewers disqualify (KernelGuard refuses the forms it recognizes as "
            "OBFUSCATED_EXEC)",
            "write the code in the file as plain Python; decode only binary data "
            "(e.g. a code object for hipModuleLoadData)", WARNING, source="policy")
    if not literal and kind == "exec":
        return LintFinding(
            "exec-dynamic", node.lineno, f"{what}() of a computed argument: the checker cannot tell it "
            "from decoded code, and kernelguard records it as DYNAMIC_EXECUTION", _PLAIN, WARNING,
            source="policy")
    if not literal and kind == "import":
        return LintFinding(
            "import-dynamic", node.lineno, f"{what}() of a computed module name: what gets imported is "
            "hidden from review", "import the module by name ('import x')", WARNING, source="policy")
    return None


def _loader_finding(node: ast.Call, taint: Taint) -> LintFinding | None:
    name = callee_name(node.func)
    base = dotted(node.func.value) if isinstance(node.func, ast.Attribute) else ""
    module = base.split(".")[-1]
    arg = node.args[0] if node.args else None
    if name == "loads" and module == "marshal":
        return LintFinding(
            "exec-decoded", node.lineno, "marshal.loads() builds code objects from bytes: hidden code, "
            "which reviewers disqualify as obfuscated execution", _PLAIN, WARNING, source="policy")
    if name == "loads" and module in ("pickle", "cPickle", "dill") and arg is not None and taint.of(arg):
        return LintFinding(
            "exec-decoded", node.lineno, f"{base}.loads() of decoded data can run arbitrary code: "
            "obfuscated execution", "store plain data (numbers, shapes) as Python literals", WARNING,
            source="policy")
    if name == "exec_module" or (module == "runpy" and name in ("run_path", "run_module")):
        return LintFinding("exec-dynamic", node.lineno, f"{dotted(node.func)}() runs code the checker "
                           "cannot see", _PLAIN, WARNING, source="policy")
    return None


def hidden_code_findings(tree: ast.Module, nodes: list[ast.AST] | None = None) -> list[LintFinding]:
    """``nodes``: :func:`walk` of ``tree`` when the caller has it already."""
    nodes = walk(tree) if nodes is None else nodes
    taint, sinks = Taint(nodes, returns_by_function(tree)), Sinks(nodes)
    found: list[LintFinding] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        kind = sinks.kind(node.func)
        finding = _sink_finding(node, kind, taint) if kind is not None else _loader_finding(node, taint)
        if finding is not None:
            found.append(finding)
    return found

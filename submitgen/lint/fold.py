"""Constant string expressions, folded without running anything: what ``chr(83) + chr(116) +
'ream'`` or ``''.join(map(chr, [...]))`` evaluates to, for the rules that look for words built
by name (``banned-word``, ``hsa-queue``).

Folded: string, bytes and int constants; ``+`` (chains of any length), ``*`` by an int, ``%``
formatting; f-strings; ``chr()``, ``str()``, ``bytes()``/``bytearray()`` of ints, ``reversed()``,
``map(chr|str, ...)``, ``range()``; ``sep.join(...)`` of a list, a tuple, a string, ``map`` or a
one-loop comprehension; the str/bytes methods ``lower``, ``upper``, ``casefold``, ``capitalize``,
``title``, ``swapcase``, ``strip``/``lstrip``/``rstrip``, ``replace``, ``removeprefix``/
``removesuffix``, ``format``, ``encode``/``decode``; indexing and slicing; ``bytes.fromhex``,
base64/hex decoders and ``codecs.decode(..., 'rot13')`` of constants; and a name bound exactly
once in the file, by a plain assignment (``chr``, ``str``, ... count only while the file does not
bind them itself).

Bounded: the evaluation is iterative (a stack of generators, no recursion however deep the
expression), a value longer than :data:`MAX_FOLDED_CHARS` is given up, widths in format specs are
at most 4 digits, and the whole file gets :data:`FOLD_BUDGET` units of work (one per node, one per
character made: a name passes its value on, it makes none); past it nothing more is folded and
:attr:`Folder.exhausted` says so."""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import re
import string
from collections.abc import Generator, Iterator
from typing import Any

MAX_FOLDED_CHARS = 1 << 20
"""The longest string a fold may make (longer: not folded)."""
FOLD_BUDGET = 8_000_000
"""Work units for a whole file: one per node evaluated, one per character made."""
MAX_ITEMS = 100_000
"""The most items of a folded sequence (``range``, a comprehension's loop)."""
MAX_INT = 1 << 64

_NO = object()
"""Not a constant (or past a bound)."""

_PERCENT_RE = re.compile(r"%(?:[-#0 +]*\d{0,4}(?:\.\d{0,4})?[diouxXeEfFgGcrsa]|%)")
_SPEC_RE = re.compile(r"(?:.?[<>=^])?[-+ ]?#?0?\d{0,4}[,_]?(?:\.\d{0,4})?[bcdeEfFgGnosxX%]?")
_NO_ARG_METHODS = frozenset({"lower", "upper", "casefold", "capitalize", "title", "swapcase"})
_STRIP = frozenset({"strip", "lstrip", "rstrip", "removeprefix", "removesuffix"})
_B64 = {"b64decode": base64.b64decode, "standard_b64decode": base64.standard_b64decode,
        "urlsafe_b64decode": base64.urlsafe_b64decode, "b32decode": base64.b32decode,
        "b16decode": base64.b16decode, "b85decode": base64.b85decode, "a85decode": base64.a85decode,
        "unhexlify": binascii.unhexlify, "a2b_hex": binascii.a2b_hex, "a2b_base64": binascii.a2b_base64}
_BUILTINS = frozenset({"chr", "str", "bytes", "bytearray", "reversed", "map", "range"})
_TEXT_CODECS = frozenset({"utf-8", "utf8", "ascii", "latin-1", "latin1", "iso-8859-1"})

Env = tuple[tuple[str, Any], ...]
_BINDERS = frozenset({ast.Name, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg, ast.alias,
                      ast.Global, ast.Nonlocal, ast.ExceptHandler, ast.MatchAs, ast.MatchStar,
                      ast.MatchMapping, ast.Assign, ast.AnnAssign})
_CANDIDATES = frozenset({ast.Constant, ast.BinOp, ast.Call, ast.JoinedStr, ast.Subscript})


def _bindings(nodes: list[ast.AST]) -> tuple[dict[str, ast.expr], set[str]]:
    """(name -> its value, for names bound exactly once, by ``name = value``; every name bound)."""
    count: dict[str, int] = {}
    value: dict[str, ast.expr] = {}
    star = False

    def bound(name: str, n: int = 1) -> None:
        count[name] = count.get(name, 0) + n

    for node in nodes:
        if type(node) not in _BINDERS:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound(node.name)
        elif isinstance(node, ast.arg):
            bound(node.arg)
        elif isinstance(node, ast.alias):
            star = star or node.name == "*"
            bound(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound(name, 2)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound(node.rest)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            value[node.target.id] = node.value
    if star:
        return {}, set(count) | _BUILTINS  # a star import may bind anything
    return {k: v for k, v in value.items() if count.get(k) == 1}, set(count)


def _text(v: Any) -> str | None:
    """``v`` as text for the word rules: str as is, bytes as latin-1."""
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("latin-1")
    return None


def _seq(v: Any) -> tuple[Any, ...] | None:
    if isinstance(v, tuple):
        return v
    if isinstance(v, str):
        return tuple(v)
    if isinstance(v, (bytes, bytearray)):
        return tuple(v)
    return None


def _small(v: Any) -> Any:
    if isinstance(v, int) and not -MAX_INT < v < MAX_INT:
        return _NO
    if isinstance(v, (str, bytes)) and len(v) > MAX_FOLDED_CHARS:
        return _NO
    if isinstance(v, tuple) and len(v) > MAX_ITEMS:
        return _NO
    return v


def _safe_format(fmt: str) -> bool:
    """Whether ``str.format`` of ``fmt`` uses only plain fields with small widths."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return False
    for _lit, name, spec, conv in fields:
        if name is None:
            continue
        if (name and not name.isdigit()) or conv not in (None, "r", "s", "a"):
            return False
        if not _SPEC_RE.fullmatch(spec or ""):
            return False
    return True


def _percent(fmt: str, args: Any) -> Any:
    rest = _PERCENT_RE.sub("", fmt)
    if "%" in rest:
        return _NO
    try:
        return fmt % args
    except (TypeError, ValueError, OverflowError, KeyError):
        return _NO


class Folder:
    """Folds the constant expressions of one module; values are memoized per node."""

    def __init__(self, nodes: list[ast.AST], budget: int = FOLD_BUDGET) -> None:
        """``nodes``: every node of the module (:func:`submitgen.lint.flow.walk`)."""
        self.assigned, bound = _bindings(nodes)
        self.builtins = _BUILTINS - bound
        self.budget = budget
        self.exhausted = False
        self._memo: dict[tuple[int, Env], Any] = {}

    def text(self, node: ast.AST) -> str | None:
        """The str (or bytes, as latin-1) ``node`` folds to, None when it is not a constant."""
        if type(node) is ast.Constant:  # no folding to do
            return _text(node.value)  # type: ignore[attr-defined]
        v = self.value(node)
        return None if v is _NO else _text(v)

    def value(self, node: ast.AST, env: Env = ()) -> Any:
        """What ``node`` evaluates to (str, bytes, int or a tuple of them), or ``_NO``."""
        key = (id(node), env)
        if key in self._memo:
            return self._memo[key]
        active = {key}
        stack: list[tuple[tuple[int, Env], ast.AST, Generator[tuple[ast.AST, Env], Any, Any]]] = [
            (key, node, self._eval(node, env))]
        send: Any = None
        while stack:
            top, gen_node, gen = stack[-1]
            try:
                child, cenv = gen.send(send)
            except StopIteration as stop:
                stack.pop()
                active.discard(top)
                result = _small(stop.value)
                made = isinstance(result, (str, bytes, tuple)) and not isinstance(gen_node, ast.Name)
                self._spend(1 + (len(result) if made else 0))
                if self.exhausted:
                    result = _NO
                self._memo[top] = result
                send = result
                continue
            ckey = (id(child), cenv)
            if ckey in self._memo:
                send = self._memo[ckey]
            elif ckey in active or self.exhausted:
                send = _NO  # a name defined through itself
            else:
                active.add(ckey)
                stack.append((ckey, child, self._eval(child, cenv)))
                send = None
        return self._memo[key]

    def _spend(self, units: int) -> None:
        self.budget -= units
        if self.budget < 0:
            self.exhausted = True

    # ------------------------------------------------------------------ one node each

    def _eval(self, node: ast.AST, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        if isinstance(node, ast.Constant):
            v = node.value
            return v if isinstance(v, (str, bytes, int)) else _NO
        if isinstance(node, ast.Name):
            for name, v in reversed(env):
                if name == node.id:
                    return v
            target = self.assigned.get(node.id)
            return (yield (target, ())) if target is not None else _NO
        if isinstance(node, (ast.Tuple, ast.List)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    return _NO
                v = yield (e, env)
                if v is _NO:
                    return _NO
                items.append(v)
            return tuple(items)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = yield (node.operand, env)
            return (-v if isinstance(node.op, ast.USub) else v) if isinstance(v, int) else _NO
        if isinstance(node, ast.BinOp):
            return (yield from self._binop(node, env))
        if isinstance(node, ast.JoinedStr):
            return (yield from self._fstring(node, env))
        if isinstance(node, ast.Subscript):
            return (yield from self._subscript(node, env))
        if isinstance(node, ast.Call):
            return (yield from self._call(node, env))
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            return (yield from self._comprehension(node, env))
        return _NO

    def _binop(self, node: ast.BinOp, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        if isinstance(node.op, ast.Add):
            leaves: list[ast.AST] = []
            todo: list[ast.AST] = [node]
            while todo:  # the whole chain at once: its inner nodes are never memoized
                n = todo.pop()
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
                    todo += (n.right, n.left)
                else:
                    leaves.append(n)
            values = []
            size = 0
            for leaf in leaves:
                v = yield (leaf, env)
                if v is _NO:
                    return _NO
                size += len(v) if isinstance(v, (str, bytes, tuple)) else 0
                if size > MAX_FOLDED_CHARS:
                    return _NO
                values.append(v)
            kinds = {type(v) for v in values}
            if kinds == {str}:
                return "".join(values)
            if kinds <= {bytes, bytearray}:
                return b"".join(values)
            if kinds == {int}:
                return sum(values)
            if kinds == {tuple}:
                return tuple(x for v in values for x in v)
            return _NO
        left = yield (node.left, env)
        if left is _NO:
            return _NO
        right = yield (node.right, env)
        if right is _NO:
            return _NO
        if isinstance(node.op, ast.Mult):
            seq, n = (left, right) if isinstance(right, int) else (right, left)
            if not isinstance(n, int):
                return _NO
            if isinstance(seq, int):
                return seq * n
            if isinstance(seq, (str, bytes, tuple)) and len(seq) * max(n, 0) <= MAX_FOLDED_CHARS:
                return seq * n
            return _NO
        if isinstance(node.op, ast.Sub) and isinstance(left, int) and isinstance(right, int):
            return left - right
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            return _percent(left, right)
        return _NO

    def _fstring(self, node: ast.JoinedStr, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                parts.append(part.value)
                continue
            if not isinstance(part, ast.FormattedValue):
                return _NO
            v = yield (part.value, env)
            if v is _NO or not isinstance(v, (str, int)):
                return _NO
            conv = {-1: str, 115: str, 114: repr, 97: ascii}.get(part.conversion)
            if conv is None:
                return _NO
            spec = ""
            if part.format_spec is not None:
                spec = yield (part.format_spec, env)
                if not isinstance(spec, str) or not _SPEC_RE.fullmatch(spec):
                    return _NO
            try:
                parts.append(format(conv(v) if part.conversion != -1 else v, spec))
            except (TypeError, ValueError):
                return _NO
        return "".join(parts)

    def _subscript(self, node: ast.Subscript, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        base = yield (node.value, env)
        if not isinstance(base, (str, bytes, tuple)):
            return _NO
        sl = node.slice
        if isinstance(sl, ast.Slice):
            bounds = []
            for part in (sl.lower, sl.upper, sl.step):
                v = None if part is None else (yield (part, env))
                if v is not None and not isinstance(v, int):
                    return _NO
                bounds.append(v)
            try:
                return base[slice(*bounds)]
            except ValueError:
                return _NO
        index = yield (sl, env)
        if not isinstance(index, int):
            return _NO
        try:
            return base[index]
        except IndexError:
            return _NO

    def _args(self, node: ast.Call, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        values = []
        for a in node.args:
            v = yield (a, env)
            if v is _NO:
                return None
            values.append(v)
        return values

    def _call(self, node: ast.Call, env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.builtins:
            if func.id == "map" and len(node.args) == 2 and isinstance(node.args[0], ast.Name) \
                    and node.args[0].id in ("chr", "str") and node.args[0].id in self.builtins:
                items = _seq((yield (node.args[1], env)))
                return _NO if items is None else _apply_all(node.args[0].id, items)
            args = yield from self._args(node, env)
            return _NO if args is None else _builtin(func.id, args)
        if not isinstance(func, ast.Attribute):
            return _NO
        if func.attr in _B64 or func.attr == "fromhex" or (
                func.attr == "decode" and isinstance(func.value, ast.Name) and func.value.id == "codecs"):
            args = yield from self._args(node, env)
            return _NO if args is None else _decoded(func.attr, args)
        if func.attr == "join" and len(node.args) == 1 and not node.keywords:
            sep = yield (func.value, env)
            if not isinstance(sep, (str, bytes)):
                return _NO
            items = _seq((yield (node.args[0], env)))
            if items is None or not all(isinstance(i, type(sep)) for i in items):
                return _NO
            if sum(len(i) for i in items) + len(sep) * len(items) > MAX_FOLDED_CHARS:
                return _NO
            return sep.join(items)
        base = yield (func.value, env)
        if not isinstance(base, (str, bytes)):
            return _NO
        args = yield from self._args(node, env)
        return _NO if args is None else _method(base, func.attr, args)

    def _comprehension(self, node: ast.GeneratorExp | ast.ListComp,
                       env: Env) -> Generator[tuple[ast.AST, Env], Any, Any]:
        if len(node.generators) != 1:
            return _NO
        gen = node.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
            return _NO
        items = _seq((yield (gen.iter, env)))
        if items is None:
            return _NO
        out = []
        for item in items:
            v = yield (node.elt, env + ((gen.target.id, item),))
            if v is _NO:
                return _NO
            out.append(v)
        return tuple(out)


def _apply_all(name: str, items: tuple[Any, ...]) -> Any:
    out = tuple(_builtin(name, [i]) for i in items)
    return _NO if any(v is _NO for v in out) else out


def _builtin(name: str, args: list[Any]) -> Any:
    try:
        if name == "chr" and len(args) == 1 and isinstance(args[0], int):
            return chr(args[0])
        if name == "str" and len(args) == 1 and isinstance(args[0], (str, int)):
            return str(args[0])
        if name in ("bytes", "bytearray") and len(args) == 1 and isinstance(args[0], tuple):
            return bytes(args[0])
        if name == "reversed" and len(args) == 1:
            seq = _seq(args[0])
            return _NO if seq is None else tuple(reversed(seq))
        if name == "range" and 1 <= len(args) <= 3 and all(isinstance(a, int) for a in args):
            r = range(*args)
            return tuple(r) if len(r) <= MAX_ITEMS else _NO
    except (ValueError, TypeError, OverflowError):
        return _NO
    return _NO


def _decoded(name: str, args: list[Any]) -> Any:
    if not args or not isinstance(args[0], (str, bytes)) or len(args[0]) > MAX_FOLDED_CHARS:
        return _NO
    try:
        if name == "fromhex" and len(args) == 1 and isinstance(args[0], str):
            return bytes.fromhex(args[0])
        if name == "decode":
            codec = args[1] if len(args) == 2 else None
            rot13 = isinstance(codec, str) and codec.replace("_", "").lower() == "rot13"
            if rot13 and isinstance(args[0], str):
                return codecs.decode(args[0], "rot13")
            return _NO
        if name in _B64 and len(args) == 1:
            return _B64[name](args[0])
    except (ValueError, TypeError, binascii.Error):
        return _NO
    return _NO


def _method(base: str | bytes, name: str, args: list[Any]) -> Any:
    try:
        if name in _NO_ARG_METHODS and not args:
            return getattr(base, name)()
        if name in _STRIP and len(args) <= 1 and all(isinstance(a, type(base)) for a in args):
            return getattr(base, name)(*args)
        if name == "replace" and 2 <= len(args) <= 3 and all(isinstance(a, type(base)) for a in args[:2]) \
                and (len(args) == 2 or isinstance(args[2], int)):
            worst = len(base) + (len(base) + 1) * len(args[1])
            return base.replace(*args) if worst <= MAX_FOLDED_CHARS else _NO
        if name == "format" and isinstance(base, str) and _safe_format(base) \
                and all(isinstance(a, (str, int)) for a in args):
            return base.format(*args)
        if name == "decode" and isinstance(base, bytes) and len(args) <= 1:
            codec = args[0] if args else "utf-8"
            return base.decode(codec) if isinstance(codec, str) and codec.lower() in _TEXT_CODECS else _NO
        if name == "encode" and isinstance(base, str) and len(args) <= 1:
            codec = args[0] if args else "utf-8"
            return base.encode(codec) if isinstance(codec, str) and codec.lower() in _TEXT_CODECS else _NO
    except (ValueError, TypeError, IndexError, KeyError, UnicodeError):
        return _NO
    return _NO


def candidates(nodes: list[ast.AST]) -> Iterator[ast.expr]:
    """The expressions worth folding among ``nodes`` (parents before children): string
    constants, operators, calls, f-strings and subscripts, but not the inner links of a ``+``
    chain (folding those one by one would make the chain's strings again and again)."""
    inner: set[int] = set()
    for node in nodes:
        kind = type(node)
        if kind not in _CANDIDATES:
            continue
        if kind is ast.BinOp and isinstance(node.op, ast.Add):  # type: ignore[attr-defined]
            for side in (node.left, node.right):  # type: ignore[attr-defined]
                if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Add):
                    inner.add(id(side))
        if id(node) not in inner:
            yield node  # type: ignore[misc]

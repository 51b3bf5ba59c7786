"""One place that gathers the imports of a rendered submission: the template's own blocks and the
code pasted into it (packer, the problem's inputs and fallback, the plan) each import what they
use; this module moves every top-level import to one block at the top of the file, without
duplicates and in isort's order (the order ``ruff check --select I`` expects), and leaves the rest
of the code as it was."""

from __future__ import annotations

import ast
import sys
from typing import NamedTuple

from submitgen.errors import RenderError

_SECTIONS = ("future", "stdlib", "thirdparty")


class _Import(NamedTuple):
    module: str
    name: str | None  # None: ``import module``
    asname: str | None

    @property
    def binds(self) -> str:
        return self.asname or self.name or self.module.partition(".")[0]

    def text(self) -> str:
        head = f"import {self.module}" if self.name is None else f"from {self.module} import {self.name}"
        return head + (f" as {self.asname}" if self.asname else "")


def _section(module: str) -> str:
    top = module.partition(".")[0]
    if top == "__future__":
        return "future"
    return "stdlib" if top in sys.stdlib_module_names else "thirdparty"


def _member_key(name: str) -> tuple[int, str]:
    """isort's order-by-type for the names of one ``from`` import: CONSTANTS, Classes, others."""
    if name.isupper() and len(name) > 1:
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, name.lower()


def _imports_of(node: ast.stmt, where: str) -> list[_Import]:
    if isinstance(node, ast.Import):
        return [_Import(a.name, None, a.asname) for a in node.names]
    assert isinstance(node, ast.ImportFrom)
    if node.level or node.module is None:
        raise RenderError(
            f"{where} line {node.lineno}: a relative import cannot be pasted into a single file"
        )
    if any(a.name == "*" for a in node.names):
        raise RenderError(
            f"{where} line {node.lineno}: 'from {node.module} import *' cannot be hoisted; name the imports"
        )
    return [_Import(node.module, a.name, a.asname) for a in node.names]


def _block(imports: list[_Import]) -> list[str]:
    lines: list[str] = []
    for section in _SECTIONS:
        mine = [i for i in imports if _section(i.module) == section]
        straight = sorted({i for i in mine if i.name is None},
                          key=lambda i: (i.module.lower(), i.asname or ""))
        froms: dict[str, list[_Import]] = {}
        for i in mine:
            if i.name is not None and i not in froms.setdefault(i.module, []):
                froms[i.module].append(i)
        if not straight and not froms:
            continue
        if lines:
            lines.append("")
        lines += [i.text() for i in straight]
        for module in sorted(froms, key=str.lower):
            members = sorted(froms[module], key=lambda i: (_member_key(i.name or ""), i.asname or ""))
            names = ", ".join(i.text().partition(" import ")[2] for i in members)
            lines.append(f"from {module} import {names}")
    return lines


def _check_bindings(imports: list[_Import]) -> None:
    bound: dict[str, _Import] = {}
    for i in imports:
        other = bound.setdefault(i.binds, i)
        if i.name is None and other.name is None and not i.asname and not other.asname:
            continue  # `import a` and `import a.b` both bind `a` to the same module
        if other != i:
            raise RenderError(
                f"two pasted imports bind the name {i.binds!r} differently: {other.text()} and {i.text()}"
            )


def _spans(tree: ast.Module, lines: list[str], where: str) -> list[tuple[int, int]]:
    """0-based [first, last] line ranges of the top-level imports, each alone on its lines."""
    spans = []
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        rest = lines[last][node.end_col_offset:].strip()
        if node.col_offset or (rest and not rest.startswith("#")) or (spans and spans[-1][1] >= first):
            raise RenderError(f"{where} line {node.lineno}: put each import statement on lines of its own")
        spans.append((first, last))
    return spans


def hoist_imports(source: str, where: str = "submission") -> tuple[list[str], str]:
    """(the import block's lines, ``source`` without its top-level imports). Blank lines around a
    removed import shrink to what surrounded it, so the code keeps its spacing."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise RenderError(f"{where} line {e.lineno}: {e.msg}") from None
    lines = source.split("\n")
    imports: list[_Import] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports += _imports_of(node, where)
    _check_bindings(imports)
    drop = [False] * len(lines)
    for first, last in _spans(tree, lines, where):
        for n in range(first, last + 1):
            drop[n] = True
    out: list[str] = []
    n = 0
    while n < len(lines):
        if not drop[n]:
            out.append(lines[n])
            n += 1
            continue
        last_dropped = n
        while n < len(lines) and (drop[n] or not lines[n].strip()):
            last_dropped = n if drop[n] else last_dropped
            n += 1  # a run of imports and the blank lines among and after them
        before = 0
        while out and not out[-1].strip():
            out.pop()
            before += 1
        if out and n < len(lines):
            out += [""] * min(2, max(before, n - last_dropped - 1))
    if source.endswith("\n") and out and out[-1]:
        out.append("")  # the file still ends with a line break
    return _block(imports), "\n".join(out)


def assemble(text: str, where: str = "submission") -> str:
    """``text`` with its leading comment block first, then one import block, then the rest."""
    lines = text.split("\n")
    head = 0
    while head < len(lines) and lines[head].startswith("#"):
        head += 1
    block, body = hoist_imports("\n".join(lines[head:]), where)
    return "\n".join([*lines[:head], *block, "", body.lstrip("\n")])

"""The package's layers: every import of every module (those inside functions too), read with ``ast``.

A unit is a subpackage of submitgen (``readers``) or a top-level module (``errors``). Each unit has a
layer in :data:`LAYERS`, in pipeline order; a unit imports only units of its own layer or a lower one,
and no two units import each other, directly or around a circle. ``readers/`` reads bytes: it imports
no other subpackage. The only imports allowed to point up are the lazy ones in ``cli.py``'s command
functions (the top layer: nothing is above it anyway). No two classes of the package share a name."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "submitgen"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors", "rules", "options", "registry", "textfmt", "files", "system", "runtime"),
    ("readers",),
    ("toolchain",),
    ("project",),
    ("problems",),
    ("backends",),
    ("launchers",),
    ("render",),
    ("lint",),
    ("pipeline",),
    ("evaluate", "inspection", "diff"),
    ("cli", "__main__"),
)
"""Pipeline order, lowest first. Bottom: the version, the leaderboard's constants, the option values,
the registry helper, text and file helpers, the bounds on processes and reads, and the code pasted
into submissions. Then what comes in (readers: bytes -> models, AMD's processor facts included),
compilers, the kernel project, the problems (what each leaderboard takes; a problem folder's plan
runs as a project's does), the targets, the launchers, the emitted text, lint's rules (the build
reuses them), the build, the commands that run or compare files, and the CLI."""

LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    is_package = rel.name == "__init__"
    parts = rel.parts[:-1] if is_package else rel.parts
    return ".".join(parts), is_package


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or not ((PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file()):
        return "__init__"  # the package itself, or a name it binds (__version__)
    return parts[1]


def _imports() -> list[tuple[str, str, str, int]]:
    """(importing unit, imported unit, file, line) of every import of a submitgen module."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name, is_package = _module_name(path)
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                bare = not node.module or module == "submitgen"
                targets = [f"{module}.{a.name}" for a in node.names] if bare else [module]
            else:
                continue
            for target in targets:
                if target.startswith("submitgen."):
                    out.append((_unit(name), _unit(target), str(path.relative_to(PACKAGE.parent)),
                                node.lineno))
    return out


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)[0]) for p in PACKAGE.rglob("*.py")}
    assert units - set(LAYER) == set()


def test_no_import_points_up():
    up = [f"{file}:{line}: {a} (layer {LAYER[a]}) imports {b} (layer {LAYER[b]})"
          for a, b, file, line in _imports() if a != b and LAYER[b] > LAYER[a]]
    assert up == []


def test_no_circle_between_units():
    edges: dict[str, set[str]] = defaultdict(set)
    for a, b, _, _ in _imports():
        if a != b:
            edges[a].add(b)
    circles = []
    for start in list(edges):
        seen, todo = set(), [(start, (start,))]
        while todo:
            unit, path = todo.pop()
            for nxt in edges[unit]:
                if nxt == start:
                    circles.append(" -> ".join((*path, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    todo.append((nxt, (*path, nxt)))
    assert circles == []


def test_the_readers_import_no_other_subpackage():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    found = [f"{file}:{line}: imports {b}" for a, b, file, line in _imports()
             if a == "readers" and b != "readers" and b in subpackages]
    assert found == []


def test_imports_inside_functions_only_where_a_cost_or_a_circle_needs_them():
    """Outside cli.py's commands (which import the library lazily, so torch is never imported
    before the arguments are checked), a function-level import of submitgen names why it is not at
    the top: a ``# lazy:`` comment on its line."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "cli.py" and path.parent == PACKAGE:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.ImportFrom):
                    continue
                ours = node.level or (node.module or "").startswith("submitgen")
                if ours and "# lazy:" not in lines[node.lineno - 1]:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert found == []


def test_no_two_classes_share_a_name():
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(PACKAGE.parent)))
    assert {name: files for name, files in where.items() if len(files) > 1} == {}

"""Kernel projects: a folder of device sources and a ``launch.py`` plan (HACKING.md has the
contract). The plan's source is pasted verbatim into the submission, so it is checked here for
what would break there: imports other than torch/ctypes/math/struct, the banned word, submitgen."""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .errors import PlanError
from .rules import BANNED_RE

DEVICE_SUFFIXES = (".hip", ".cu", ".cpp", ".cl", ".s")
ALLOWED_IMPORTS = frozenset({"torch", "ctypes", "math", "struct"})
PLAN_FILE = "launch.py"


@dataclass(frozen=True)
class KernelProject:
    root: Path
    sources: tuple[Path, ...]
    plan_path: Path
    plan_source: str
    kernels: tuple[str, ...]


def _literal_names(tree: ast.Module, name: str, path: Path) -> tuple[str, ...] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else ()
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise PlanError(f"{path}:{node.lineno}: {name} must be a literal tuple of strings") from None
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise PlanError(f"{path}:{node.lineno}: {name} must be a tuple of strings, got {value!r}")
            return tuple(value)
    return None


def check_plan_source(text: str, path: Path) -> ast.Module:
    """Static checks of a plan that will be pasted into a submission."""
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise PlanError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    m = BANNED_RE.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise PlanError(
            f"{path}:{line}: the plan contains the word '{m.group(0)}', which the leaderboard rejects")
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]] if node.level == 0 else ["(relative import)"]
        for name in names:
            if name not in ALLOWED_IMPORTS and name != "__future__":
                raise PlanError(
                    f"{path}:{node.lineno}: the plan imports '{name}'; it is pasted into the submission, "
                    f"so it may import only {', '.join(sorted(ALLOWED_IMPORTS))}"
                )
    if not any(isinstance(n, ast.FunctionDef) and n.name == "plan" for n in tree.body):
        raise PlanError(f"{path}: defines no function 'plan(data)'")
    return tree


def load_project(root: Path | str) -> KernelProject:
    root = Path(root)
    if not root.is_dir():
        raise PlanError(f"kernel project {root} is not a folder")
    plan_path = root / PLAN_FILE
    if not plan_path.is_file():
        raise PlanError(f"kernel project {root} has no {PLAN_FILE}")
    text = plan_path.read_text()
    tree = check_plan_source(text, plan_path)
    kernels = _literal_names(tree, "KERNELS", plan_path)
    if not kernels:
        raise PlanError(f"{plan_path}: KERNELS must name the kernels the plan launches")
    names = _literal_names(tree, "SOURCES", plan_path)
    if names is None:
        sources = tuple(sorted(p for p in root.iterdir() if p.suffix in DEVICE_SUFFIXES and p.is_file()))
    else:
        sources = tuple(root / n for n in names)
        for s in sources:
            if not s.is_file():
                raise PlanError(f"{plan_path}: SOURCES names {s.name}, which is not in {root}")
    return KernelProject(root, sources, plan_path, text, kernels)


def load_plan_module(project: KernelProject) -> ModuleType:
    """Import the project's launch.py under a private name (it is the user's own code)."""
    name = f"_submitgen_plan_{abs(hash(str(project.plan_path)))}"
    spec = importlib.util.spec_from_file_location(name, project.plan_path)
    if spec is None or spec.loader is None:
        raise PlanError(f"{project.plan_path}: Python cannot load this file as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's module failed at import: report it as theirs
        raise PlanError(f"{project.plan_path}: importing the plan failed: {type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(name, None)
    return module

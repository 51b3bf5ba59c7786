"""Kernel projects: a folder of device sources, Triton kernels and a ``launch.py`` plan (HACKING.md
has the contract). Every file is read once, here; the build validates, compiles and embeds those
same bytes. The plan's source is pasted verbatim into the submission, so it is checked for what
would break there (imports other than torch/ctypes/math, the banned word, encodings) before any
of it runs; it runs only in ``plan_run.py``'s child process."""

from __future__ import annotations

import ast
import codecs
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from submitgen.errors import CompileError, PlanError
from submitgen.project.plan_view import assignment, named_strings, plan_view
from submitgen.project.triton_table import specs_from_launch
from submitgen.rules import BANNED_RE
from submitgen.runtime.frozen import sg_frozen
from submitgen.system import over_budget
from submitgen.toolchain.inputs import read_input

DEVICE_SUFFIXES = (".hip", ".cu", ".cpp", ".cl", ".s")
ALLOWED_IMPORTS = frozenset({"torch", "ctypes", "math"})
PLAN_FILE = "launch.py"
# Names through which a plan could import or run code beyond the contract.
_BANNED_NAMES = frozenset({"__import__", "__builtins__", "builtins", "importlib", "exec", "eval", "compile",
                           "globals", "breakpoint"})
_DUNDERS = frozenset({"__name__"})
_CODING_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class KernelProject:
    root: Path
    sources: tuple[Path, ...]  # device sources, compiled into one code object
    plan_path: Path
    plan_source: str  # launch.py (UTF-8, no BOM) as it runs and is embedded: TRITON resolved for the arch
    kernels: tuple[str, ...]  # KERNELS: the device sources' kernels the plan may launch
    source_bytes: tuple[bytes, ...] = ()  # of each device source, as read
    triton: tuple[Any, ...] = ()  # TritonSpec of each TRITON entry (its source bytes read once)
    plan_read: str = ""  # launch.py as read, when plan_source differs from it (the digest's input)

    @property
    def launch_names(self) -> tuple[str, ...]:
        """Every name the plan may launch: the KERNELS, then the TRITON keys."""
        return self.kernels + tuple(s.name for s in self.triton)

    def digest(self) -> str:
        """sha256 over each input's name and bytes as read (the provenance's ``sources``)."""
        h = hashlib.sha256()
        plan = self.plan_read or self.plan_source
        files = [*zip(self.sources, self.source_bytes), (self.plan_path, plan.encode())]
        seen = set()
        for spec in self.triton:
            if spec.source not in seen:
                seen.add(spec.source)
                files.append((spec.source, spec.source_bytes))
        for path, data in files:
            h.update(path.name.encode() + b"\0" + data + b"\0")
        return h.hexdigest()


def _read(path: Path, what: str) -> bytes:
    try:
        return read_input(path, what)
    except CompileError as e:
        raise PlanError(str(e)) from None


def decode_plan(data: bytes, path: Path) -> str:
    """launch.py's text: UTF-8 (a BOM is dropped), no NUL byte, no other declared coding."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise PlanError(f"{path}:{line}: a NUL byte; the plan must be text")
    for number, line in enumerate(data.splitlines()[:2], start=1):
        m = _CODING_RE.match(line)
        if m and m.group(1).decode("ascii", "replace").lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise PlanError(f"{path}:{number}: declares coding '{m.group(1).decode('ascii', 'replace')}'; "
                            "the plan is pasted into a UTF-8 submission: save it as UTF-8 and drop the "
                            "coding line")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise PlanError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x}); save the file as "
                        "UTF-8") from None


def _assignment(tree: ast.Module, name: str) -> ast.Assign | None:
    """The first module-level ``NAME = ...``; None when the plan has none."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else ()
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node
    return None


def _literal(tree: ast.Module, name: str, path: Path) -> tuple[int, Any] | None:
    """(line, value) of the module-level ``NAME = <literal>``; None when the plan has none."""
    node = _assignment(tree, name)
    if node is None:
        return None
    try:
        return node.lineno, ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        bad, where = _not_literal(node.value, name) or (node.value, name)
        shown = ast.unparse(bad) if isinstance(bad, ast.expr) else ""
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        line = getattr(bad, "lineno", node.lineno)
        raise PlanError(f"{path}:{line}: {where} must be a literal (plain data)"
                        + (f", not {shown}" if shown else "")) from None


def _not_literal(node: ast.AST, where: str) -> tuple[ast.AST, str] | None:
    """The first part of a literal-looking value that is not a literal, with its key path
    (``TRITON['mm']['constexprs']['BLOCK']``); None when every part is one."""
    parts: list[tuple[ast.AST, str]] = []
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is None:  # **other
                return value, where
            try:
                label = repr(ast.literal_eval(key))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return key, where
            parts.append((value, f"{where}[{label}]"))
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        parts = [(e, f"{where}[{i}]") for i, e in enumerate(node.elts)]
    else:
        try:
            ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return node, where
        return None
    for part, label in parts:
        found = _not_literal(part, label)
        if found is not None:
            return found
    return None


def _names(tree: ast.Module, name: str, path: Path) -> tuple[str, ...] | None:
    found = _literal(tree, name, path)
    if found is None:
        return None
    line, value = found
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{path}:{line}: {name} must be a tuple of strings, got {type(value).__name__} "
                        f"{value!r:.60}")
    return tuple(value)


def _check_imports(tree: ast.Module, path: Path) -> None:
    allowed = ", ".join(sorted(ALLOWED_IMPORTS))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]] if node.level == 0 else ["(relative import)"]
        elif isinstance(node, ast.Name) and node.id in _BANNED_NAMES:
            raise PlanError(f"{path}:{node.lineno}: the plan uses '{node.id}'; it is pasted into the "
                            f"submission, so it may import only {allowed}, by name")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr not in _DUNDERS:
            raise PlanError(f"{path}:{node.lineno}: the plan uses the attribute '{node.attr}'; plans are "
                            "plain code over torch, ctypes and math")
        for name in names:
            if name not in ALLOWED_IMPORTS and name != "__future__":
                raise PlanError(f"{path}:{node.lineno}: the plan imports '{name}'; it is pasted into the "
                                f"submission, so it may import only {allowed}")


def check_plan_source(text: str, path: Path) -> ast.Module:
    """Static checks of a plan that will be pasted into a submission."""
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise PlanError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise PlanError(f"{path}: cannot be parsed: {type(e).__name__}") from None
    m = BANNED_RE.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise PlanError(f"{path}:{line}: the plan contains the word '{m.group(0)}', which the leaderboard "
                        "rejects")
    _check_imports(tree, path)
    if not any(isinstance(n, ast.FunctionDef) and n.name == "plan" for n in tree.body):
        raise PlanError(f"{path}: defines no function 'plan(data)'")
    return tree


def _inside(root: Path, name: str, where: str) -> Path:
    real_root = Path(os.path.realpath(root))
    path = Path(os.path.realpath(root / name))
    if real_root not in path.parents:
        raise PlanError(f"{where}: SOURCES names {name!r}, which is outside the project folder {root}")
    return root / name


def _sources(root: Path, tree: ast.Module, plan_path: Path) -> tuple[Path, ...]:
    names = _names(tree, "SOURCES", plan_path)
    if names is None:
        return tuple(sorted(p for p in root.iterdir() if p.suffix in DEVICE_SUFFIXES and p.is_file()))
    sources = tuple(_inside(root, n, str(plan_path)) for n in names)
    for s in sources:
        if not s.is_file():
            raise PlanError(f"{plan_path}: SOURCES names {s.name}, which is not in {root}")
    return sources


_ARCH_KEYS = ("num_warps", "num_stages", "constexprs", "options", "plan")
_MERGED_KEYS = ("constexprs", "plan")  # dicts an override merges into; the others it replaces


def _for_arch(table: Any, arch: str | None, plan_path: Path) -> Any:
    """TRITON with each entry's optional ``"arch": {ARCH: {...}}`` applied for ``arch``: its
    num_warps / num_stages / options replace the entry's, its constexprs and plan values are
    merged over them."""
    if not isinstance(table, dict):
        return table  # specs_from_launch names the problem
    out = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or "arch" not in entry:
            out[name] = entry
            continue
        entry = dict(entry)
        per_arch = entry.pop("arch")
        where = f"{plan_path}: TRITON[{name!r}]['arch']"
        if not isinstance(per_arch, dict) or not all(isinstance(v, dict) for v in per_arch.values()):
            raise PlanError(f"{where}: must be a dict of arch -> dict of overrides, got {per_arch!r:.60}")
        for key in (k for over in per_arch.values() for k in over if k not in _ARCH_KEYS):
            raise PlanError(f"{where}: unknown key {key!r} (expected {', '.join(_ARCH_KEYS)})")
        over = per_arch.get(arch, {})
        for key in _MERGED_KEYS:
            if isinstance(over.get(key), dict) and isinstance(entry.get(key, {}), dict):
                over = {**over, key: {**entry.get(key, {}), **over[key]}}
        out[name] = {**entry, **over}
    return out


FREEZE = "sg_frozen"  # runtime/frozen.py: pasted right before the plan in the submission


def _resolved_text(text: str, tree: ast.Module, table: dict, arch: str | None, path: Path,
                   overridden: bool) -> str:
    """launch.py with its TRITON literal replaced by ``sg_frozen(table)``: the entries' "arch"
    overrides applied, cut to the keys the plan's code names (``plan_view``), and read-only, so that
    the plan reads, at build time and in the emitted file, the specialization that was compiled and
    cannot change it."""
    node = _assignment(tree, "TRITON")  # the one _literal read (the caller found it)
    # ast's line numbers count \n, \r\n and \r only (str.splitlines would also split at \f,
    # \x1c, \u2028, ...), and its columns are UTF-8 byte offsets
    raw = text.encode()
    starts = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", raw)]
    head = starts[node.lineno - 1] + node.col_offset
    start = starts[node.value.lineno - 1] + node.value.col_offset
    end = starts[node.value.end_lineno - 1] + node.value.end_col_offset
    how = "its entries' \"arch\" overrides applied, " if overridden else ""
    note = (f"# TRITON as compiled for {arch or 'the default arch'}: {how}the keys the plan names,\n"
            f"# read-only ({FREEZE})\n")
    table = plan_view(table, named_strings(tree, node.value))
    literal = assignment("TRITON", FREEZE, table)[len("TRITON = "):]
    out = (raw[:head] + note.encode() + raw[head:start] + literal.encode() + raw[end:]).decode()
    try:
        value = _assignment(ast.parse(out), "TRITON").value
        ok = (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == FREEZE
              and len(value.args) == 1 and ast.literal_eval(value.args[0]) == table)
    except (SyntaxError, ValueError, AttributeError):
        ok = False
    if not ok:  # never expected: the replacement must read back
        raise PlanError(f"{path}: cannot rewrite TRITON for {arch}: the replaced text does not read back")
    return out


def _check_triton_bound_once(tree: ast.Module, path: Path) -> None:
    """TRITON is bound once, by its literal: a plan that rebinds or deletes it would launch with
    other values than those compiled."""
    first = _assignment(tree, "TRITON")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "TRITON" in node.names:
            bad = f"declares '{'global' if isinstance(node, ast.Global) else 'nonlocal'} TRITON'"
        elif (isinstance(node, ast.Name) and node.id == "TRITON"
              and isinstance(node.ctx, (ast.Store, ast.Del))):
            if first is not None and any(t is node for t in first.targets):
                continue
            bad = "deletes TRITON" if isinstance(node.ctx, ast.Del) else "assigns TRITON again"
        else:
            continue
        raise PlanError(f"{path}:{node.lineno}: the plan {bad}; TRITON is what was compiled, read it only")


def _triton(tree: ast.Module, root: Path, plan_path: Path, arch: str | None
            ) -> tuple[tuple[Any, ...], Any, bool]:
    """(TritonSpec of each entry, the TRITON table resolved for ``arch`` or None when the plan
    has none, whether an entry has an "arch" override)."""
    found = _literal(tree, "TRITON", plan_path)
    if found is None:
        return (), None, False

    _check_triton_bound_once(tree, plan_path)
    table = _for_arch(found[1], arch, plan_path)
    entries = found[1].values() if isinstance(found[1], dict) else ()
    overridden = any(isinstance(e, dict) and "arch" in e for e in entries)
    return specs_from_launch(table, root), table, overridden


def load_project(root: Path | str, arch: str | None = None) -> KernelProject:
    """The project at ``root``, its files read once; TRITON entries specialised for ``arch``."""
    root = Path(root)
    if not root.is_dir():
        raise PlanError(f"kernel project {root} is not a folder")
    plan_path = root / PLAN_FILE
    if not plan_path.exists():
        raise PlanError(f"kernel project {root} has no {PLAN_FILE}")
    text = decode_plan(_read(plan_path, "plan"), plan_path)
    tree = check_plan_source(text, plan_path)
    kernels = _names(tree, "KERNELS", plan_path) or ()
    triton, resolved, overridden = _triton(tree, root, plan_path, arch)
    if not kernels and not triton:
        raise PlanError(f"{plan_path}: KERNELS (or TRITON) must name the kernels the plan launches")
    clash = sorted(set(kernels) & {s.name for s in triton})
    if clash:
        raise PlanError(f"{plan_path}: {', '.join(map(repr, clash))} is both in KERNELS and a TRITON key")
    sources = _sources(root, tree, plan_path) if kernels else ()
    data = tuple(_read(s, "source") for s in sources)
    if resolved is None:
        return KernelProject(root, sources, plan_path, text, kernels, data, triton)
    run_text = _resolved_text(text, tree, resolved, arch, plan_path, overridden)
    return KernelProject(root, sources, plan_path, run_text, kernels, data, triton, plan_read=text)


def load_plan_module(project: KernelProject) -> ModuleType:
    """Run the plan's text (the bytes read once) as a module of its own (it is the user's code)."""
    module = ModuleType(f"_submitgen_plan_{abs(hash(str(project.plan_path)))}")
    module.__file__ = str(project.plan_path)
    if project.plan_read:  # its TRITON literal reads sg_frozen, pasted before it in the submission
        module.__dict__[FREEZE] = sg_frozen
    try:
        exec(compile(project.plan_source, str(project.plan_path), "exec"), module.__dict__)
    except BaseException as e:  # the user's module failed at import: report it as theirs
        if over_budget(e):  # the command's budget: enforced() names it
            raise
        raise PlanError(f"{project.plan_path}: importing the plan failed: {type(e).__name__}: {e}") from None
    return module

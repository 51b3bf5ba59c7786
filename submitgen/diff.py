"""``submitgen diff OLD NEW``: what changed between two builds of a kernel.

OLD and NEW are each a code object, a clang offload bundle, or a ``.py`` submission (read
statically, never run). Kernels are paired by metadata ``.name``; kernels only in NEW are
"added", only in OLD "removed". For each pair ``diff_sources`` compares the fields in ``FIELDS``
(registers, spills, scratch, static LDS, occupancy, code size, kernarg sizes, max workgroup size,
wavefront, target) and the explicit arguments (offset, size, value kind, by index).

Occupancy is estimated (``targets.occupancy``) at one block size per side, chosen in this order:
``--block N``; else the block sizes the launch plan of a ``.py`` submission passes for that
kernel, when they can be read statically (a 5-tuple ``(name, grid, (x, y, z), lds, args)`` whose
block entries are integer literals, module-level integer constants or arithmetic on them; a
launch whose kernel name is not a literal applies to every kernel without a literal launch; if
only one side has a plan, its block is used for both; several sizes -> the largest); else each
side's ``max_flat_workgroup_size``. The output says which block was used and why.

``--fail-on`` rules (a rule trips when the measure gets worse in any paired kernel):
``spills`` VGPR or SGPR spill count up; ``scratch`` private segment bytes up; ``occupancy`` waves
per SIMD down (only when both sides have an estimate); ``lds`` static LDS bytes up; ``args`` any
explicit argument's offset, size or kind changed, or an argument added or removed. Added or removed
kernels trip nothing.

JSON (``to_json``), format_version 1. It always carries every field (``--all`` only affects text)::

    {
      "format_version": 1,
      "old": {"source": PATH, "code_objects": [{"provenance": str, "target": TARGET_ID,
                                                "sha256": str, "kernels": [NAME, ...]}]},
      "new": {... same ...},
      "arch": ARCH or null,                 # --arch
      "added": [NAME, ...], "removed": [NAME, ...],
      "kernels": [{                         # one per paired kernel, in NEW's order
        "name": NAME, "demangled_name": str, "changed": bool,
        "block": {"old": int, "new": int, "source": "option" | "launch plan" | "max workgroup size",
                  "detail": str},
        "occupancy_target": "gfx950" or null,  # facts used for occupancy; null: none known
        "fields": [{"field": KEY, "label": str, "unit": str, "old": V, "new": V,
                    "delta": int or null, "changed": bool, "worse": bool or null}, ...],
        "occupancy": {"old": {"waves_per_simd", "limited_by", "launchable", "problems"} or null,
                      "new": ... },
        "args": [{"index": int, "old": ARG or null, "new": ARG or null}, ...]  # changed args only
      }],                                   # ARG: {"name", "offset", "size", "value_kind"}
      "fail_on": [RULE, ...],
      "tripped": [{"rule": RULE, "kernel": NAME, "message": str}, ...],
      "exit_code": 0 | 1                    # 1 when anything tripped
    }

``field`` KEYs are the ``Kernel`` attribute names (``vgpr_count``, ``private_segment_fixed_size``,
...) plus ``target`` (the code object's target ID) and ``occupancy`` (waves per SIMD). ``worse``
is set for the measures ``--fail-on`` knows (null for the others)."""

from __future__ import annotations

import ast
import contextlib
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import targets
from .codeobject import CodeObject, Kernel, KernelArg, demangle_many
from .containers import LoadedCodeObject, load_code_objects
from .errors import CodeObjectError, DiffError

WIDTH = 100
JSON_FORMAT_VERSION = 1
FAIL_ON_RULES = ("spills", "scratch", "occupancy", "lds", "args")

# (Kernel attribute or special key, label, unit, fail-on rule that watches it, worse direction)
# direction +1: an increase is worse; -1: a decrease is worse; 0: neither.
FIELDS: tuple[tuple[str, str, str, str | None, int], ...] = (
    ("target", "target", "", None, 0),
    ("vgpr_count", "VGPR", "", None, 0),
    ("agpr_count", "AGPR", "", None, 0),
    ("sgpr_count", "SGPR", "", None, 0),
    ("vgpr_spill_count", "VGPR spills", "", "spills", +1),
    ("sgpr_spill_count", "SGPR spills", "", "spills", +1),
    ("private_segment_fixed_size", "scratch", "B", "scratch", +1),
    ("group_segment_fixed_size", "static LDS", "B", "lds", +1),
    ("occupancy", "occupancy", "waves/SIMD", "occupancy", -1),
    ("code_size", "code size", "B", None, 0),
    ("explicit_args_size", "explicit kernarg", "B", None, 0),
    ("kernarg_segment_size", "kernarg segment", "B", None, 0),
    ("max_flat_workgroup_size", "max workgroup size", "", None, 0),
    ("wavefront_size", "wavefront", "", None, 0),
)
_LABEL_WIDTH = max(len(f[1]) for f in FIELDS) + 2


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Side:
    """One input (OLD or NEW): its code objects and kernels by name."""

    source: str
    loaded: tuple[LoadedCodeObject, ...]
    code_objects: tuple[CodeObject, ...]
    kernels: tuple[tuple[Kernel, CodeObject], ...]  # in file order, names unique
    plan_blocks: Mapping[str | None, tuple[int, ...]]  # None: launches with a non-literal name

    def get(self, name: str) -> tuple[Kernel, CodeObject] | None:
        for k, co in self.kernels:
            if k.name == name:
                return k, co
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k, _ in self.kernels)


@dataclass(frozen=True)
class FieldChange:
    key: str
    label: str
    unit: str
    old: Any
    new: Any
    rule: str | None
    direction: int

    @property
    def changed(self) -> bool:
        return self.old != self.new

    @property
    def delta(self) -> int | None:
        if isinstance(self.old, int) and isinstance(self.new, int) and not isinstance(self.old, bool):
            return self.new - self.old
        return None

    @property
    def worse(self) -> bool | None:
        if self.rule is None:
            return None
        d = self.delta
        return d is not None and d * self.direction > 0


@dataclass(frozen=True)
class ArgChange:
    index: int
    old: KernelArg | None
    new: KernelArg | None


@dataclass(frozen=True)
class BlockChoice:
    old: int
    new: int
    source: str  # "option" | "launch plan" | "max workgroup size"
    detail: str  # words for the output, e.g. "from the launch plan"


@dataclass(frozen=True)
class KernelDiff:
    name: str
    demangled: str
    block: BlockChoice
    occupancy_target: str | None
    old_occupancy: targets.Occupancy | None
    new_occupancy: targets.Occupancy | None
    fields: tuple[FieldChange, ...]
    args: tuple[ArgChange, ...]  # changed explicit args only

    @property
    def changed(self) -> bool:
        return bool(self.args) or any(f.changed for f in self.fields)


@dataclass(frozen=True)
class Trip:
    rule: str
    kernel: str
    message: str


@dataclass(frozen=True)
class DiffResult:
    old: Side
    new: Side
    arch: str | None
    added: tuple[str, ...]
    removed: tuple[str, ...]
    kernels: tuple[KernelDiff, ...]
    fail_on: tuple[str, ...]
    tripped: tuple[Trip, ...]

    @property
    def exit_code(self) -> int:
        return 1 if self.tripped else 0


# --------------------------------------------------------------------------- options


def parse_fail_on(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"spills,occupancy"`` (or several such strings) -> ``("spills", "occupancy")``."""
    if text is None:
        return ()
    parts = [text] if isinstance(text, str) else list(text)
    out: list[str] = []
    for part in parts:
        for word in part.split(","):
            w = word.strip().lower()
            if not w:
                continue
            if w not in FAIL_ON_RULES:
                raise DiffError(f"--fail-on: unknown measure {word.strip()!r}: expected a comma-separated "
                                f"list of {', '.join(FAIL_ON_RULES)}")
            if w not in out:
                out.append(w)
    if not out:
        raise DiffError(f"--fail-on: expected a comma-separated list of {', '.join(FAIL_ON_RULES)}, got nothing")
    return tuple(out)


# --------------------------------------------------------------------------- launch plan blocks

_MAX_BLOCK = 1 << 20


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
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a = _eval_int(node.left, consts, depth + 1)
        b = _eval_int(node.right, consts, depth + 1)
        if a is None or b is None or abs(a) > _MAX_BLOCK or abs(b) > _MAX_BLOCK:
            return None
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        return a // b if b else None
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


# --------------------------------------------------------------------------- loading


def load_side(source: str | os.PathLike[str], *, arch: str | None = None) -> Side:
    """Every code object ``source`` holds (filtered to ``arch``), its kernels by unique name, and
    the launch plan's block sizes when it is a ``.py`` submission."""
    loaded = tuple(load_code_objects(source, arch=arch))
    cos = tuple(lo.read() for lo in loaded)
    kernels: list[tuple[Kernel, CodeObject]] = []
    where: dict[str, list[str]] = {}
    for co in cos:
        for k in co.kernels:
            where.setdefault(k.name, []).append(co.processor)
            if len(where[k.name]) == 1:
                kernels.append((k, co))
    for name, procs in where.items():
        if len(procs) > 1:
            raise DiffError(f"{source}: kernel {name!r} is in {len(procs)} code objects ({', '.join(procs)}); "
                            "expected one: choose the code object with --arch")
    blocks: dict[str | None, tuple[int, ...]] = {}
    if loaded and loaded[0].container == "python":
        try:
            blocks = plan_blocks(Path(source).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            blocks = {}
    return Side(str(source), loaded, cos, tuple(kernels), blocks)


# --------------------------------------------------------------------------- comparing


def _side_plan_block(side: Side, name: str) -> tuple[int, ...]:
    if name in side.plan_blocks:
        return side.plan_blocks[name]
    return side.plan_blocks.get(None, ())


def _choose_block(old: Side, new: Side, ko: Kernel, kn: Kernel, block: int | None) -> BlockChoice:
    if block is not None:
        return BlockChoice(block, block, "option", f"block {block} (--block)")
    po, pn = _side_plan_block(old, ko.name), _side_plan_block(new, kn.name)
    if po or pn:
        po, pn = po or pn, pn or po
        bo, bn = max(po), max(pn)
        others = sorted(set(po + pn) - {bo, bn})
        shown = f"block {bo}" if bo == bn else f"block {bo} -> {bn}"
        extra = f"; it also uses {', '.join(map(str, others))}" if others else ""
        return BlockChoice(bo, bn, "launch plan", f"{shown} (launch plan{extra})")

    def cap(k: Kernel) -> int:
        return min(k.max_flat_workgroup_size or 1024, 1024)

    bo, bn = cap(ko), cap(kn)
    shown = f"block {bo}" if bo == bn else f"block {bo} -> {bn}"
    return BlockChoice(bo, bn, "max workgroup size", f"{shown} (max workgroup size; no launch plan)")


def _target_for(co: CodeObject, arch: str | None) -> targets.Target | None:
    if arch:
        return targets.TARGETS.get(arch.split(":", 1)[0].strip().lower())
    return co.target()


def _arg_changes(ko: Kernel, kn: Kernel) -> tuple[ArgChange, ...]:
    a, b = ko.explicit_args, kn.explicit_args
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None or y is None or (x.offset, x.size, x.value_kind) != (y.offset, y.size, y.value_kind):
            out.append(ArgChange(i, x, y))
    return tuple(out)


def _compare(old: Side, new: Side, name: str, demangled: str, arch: str | None, block: int | None) -> KernelDiff:
    ko, co_o = old.get(name)  # type: ignore[misc]
    kn, co_n = new.get(name)  # type: ignore[misc]
    choice = _choose_block(old, new, ko, kn, block)
    to, tn = _target_for(co_o, arch), _target_for(co_n, arch)
    occ_o = targets.occupancy(ko, to, choice.old) if to is not None else None
    occ_n = targets.occupancy(kn, tn, choice.new) if tn is not None else None
    fields = []
    for key, label, unit, rule, direction in FIELDS:
        if key == "target":
            vo, vn = co_o.target_id, co_n.target_id
        elif key == "occupancy":
            vo = occ_o.waves_per_simd if occ_o is not None else None
            vn = occ_n.waves_per_simd if occ_n is not None else None
            if vo is None or vn is None:
                vo = vn = None  # nothing to compare
        else:
            vo, vn = getattr(ko, key), getattr(kn, key)
        fields.append(FieldChange(key, label, unit, vo, vn, rule, direction))
    occ_target = tn.name if tn is not None else (to.name if to is not None else None)
    return KernelDiff(name, demangled, choice, occ_target, occ_o, occ_n, tuple(fields), _arg_changes(ko, kn))


def _fmt_arg(a: KernelArg | None) -> str:
    if a is None:
        return "(none)"
    return f"{a.value_kind} {a.size} B @{a.offset}"


def _trips(kd: KernelDiff, rules: Sequence[str]) -> list[Trip]:
    out = []
    for rule in rules:
        if rule == "args":
            if kd.args:
                first = kd.args[0]
                more = f" (and {len(kd.args) - 1} more)" if len(kd.args) > 1 else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} arg {first.index}: {_fmt_arg(first.old)} -> "
                                              f"{_fmt_arg(first.new)}{more}"))
            continue
        for f in kd.fields:
            if f.rule == rule and f.worse:
                unit = f" {f.unit}" if f.unit else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} {f.label} {f.old} -> {f.new}{unit} "
                                              f"({f.delta:+d})"))
    return out


def diff_sides(old: Side, new: Side, *, kernel: str | None = None, block: int | None = None,
               arch: str | None = None, fail_on: Sequence[str] = ()) -> DiffResult:
    """Pair the kernels of two loaded inputs by name and compare them (see the module docstring)."""
    if block is not None and not 1 <= block <= 1024:
        raise DiffError(f"--block: expected 1..1024 threads, got {block}")
    old_names, new_names = old.names, new.names
    if kernel is not None:
        picked = set()
        for side in (old, new):
            for co in side.code_objects:
                with contextlib.suppress(CodeObjectError):
                    picked.add(co.kernel(kernel).name)
        if not picked:
            avail = list(dict.fromkeys(old_names + new_names))
            raise DiffError(f"no kernel named {kernel!r} in OLD or NEW; available: "
                            f"{', '.join(repr(n) for n in avail) or 'none'}")
        old_names = tuple(n for n in old_names if n in picked)
        new_names = tuple(n for n in new_names if n in picked)
    paired = [n for n in new_names if n in old_names]
    added = tuple(n for n in new_names if n not in old_names)
    removed = tuple(n for n in old_names if n not in new_names)
    demangled = dict(zip(paired, demangle_many(tuple(paired))))
    diffs = [_compare(old, new, n, demangled.get(n, n), arch, block) for n in paired]
    rules = tuple(fail_on)
    tripped = tuple(t for kd in diffs for t in _trips(kd, rules))
    return DiffResult(old, new, arch, added, removed, tuple(diffs), rules, tripped)


def diff_sources(old: str | os.PathLike[str], new: str | os.PathLike[str], *, kernel: str | None = None,
                 block: int | None = None, arch: str | None = None, fail_on: Sequence[str] = ()) -> DiffResult:
    """Load OLD and NEW (code object, bundle or ``.py`` submission) and diff them."""
    return diff_sides(load_side(old, arch=arch), load_side(new, arch=arch), kernel=kernel, block=block,
                      arch=arch, fail_on=fail_on)


# --------------------------------------------------------------------------- text


def _fit(s: str, width: int) -> str:
    """``s`` shortened in the middle with ``...`` to at most ``width`` characters."""
    if len(s) <= width:
        return s
    keep = width - 3
    return s[: keep // 2] + "..." + s[len(s) - (keep - keep // 2):]


def _val(v: Any) -> str:
    return "n/a" if v is None else str(v)


def _field_line(f: FieldChange, kd: KernelDiff) -> str:
    unit = f" {f.unit}" if f.unit else ""
    if f.key == "target":
        text = f"{f.old} -> {f.new}" if f.changed else str(f.new)
        return _fit(f"  {f.label:<{_LABEL_WIDTH}}{text}", WIDTH)
    if f.changed:
        body = f"{_val(f.old):>8} -> {_val(f.new)}{unit if f.new is not None else ''}"
    else:
        body = f"{_val(f.new):>8}{unit if f.new is not None else ''}"
    line = f"  {f.label:<{_LABEL_WIDTH}}{body}"
    notes = []
    if f.changed and f.delta is not None:
        notes.append(f"{f.delta:+d}" + (" (worse)" if f.worse else ""))
    if f.key == "occupancy":
        occ = kd.new_occupancy
        if f.new is None:
            notes.append("no occupancy facts for this target")
        elif occ is not None and not occ.launchable:
            notes.append("cannot launch: " + "; ".join(occ.problems))
        elif occ is not None:
            notes.append(f"limited by {', '.join(occ.limited_by)}")
    if not notes:
        return _fit(line, WIDTH)
    indent = _LABEL_WIDTH + 2 + 32
    line = f"{line:<{indent - 2}}  {'; '.join(notes)}"
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent, drop_whitespace=True))


def _arg_line(c: ArgChange) -> str:
    ref = c.new or c.old
    name = f" {ref.name}" if ref is not None and ref.name else ""
    return _fit(f"  {('arg ' + str(c.index) + name):<{_LABEL_WIDTH}}{_fmt_arg(c.old)} -> {_fmt_arg(c.new)}", WIDTH)


def _side_lines(tag: str, side: Side) -> list[str]:
    lines = []
    for lo, co in zip(side.loaded, side.code_objects):
        lines.append(_fit(f"{tag}  {lo.provenance}", WIDTH))
        lines.append(_fit(f"     {co.target_id}, code object v{co.code_object_version}, {len(co.kernels)} "
                          f"kernel{'s' if len(co.kernels) != 1 else ''}, sha256 {co.sha256[:16]}", WIDTH))
    return lines


def render_text(result: DiffResult, *, show_all: bool = False) -> str:
    """The human report: every line at most 100 columns."""
    lines = _side_lines("old", result.old) + _side_lines("new", result.new)
    changed = sum(1 for kd in result.kernels if kd.changed)
    lines.append(f"kernels: {len(result.kernels)} paired, {changed} changed, {len(result.added)} added, "
                 f"{len(result.removed)} removed")
    for n in result.added:
        lines.append(_fit(f"added    kernel {n}", WIDTH))
    for n in result.removed:
        lines.append(_fit(f"removed  kernel {n}", WIDTH))
    for kd in result.kernels:
        head = f"kernel {kd.name}"
        if kd.demangled != kd.name:
            head += f" ({kd.demangled})"
        if not kd.changed and not show_all:
            lines.append(_fit(f"{head}: unchanged", WIDTH))
            continue
        lines.append("")
        lines.append(_fit(head, WIDTH))
        where = f"{kd.occupancy_target}, " if kd.occupancy_target else ""
        lines.append(_fit(f"  occupancy estimated for {where}{kd.block.detail}", WIDTH))
        for f in kd.fields:
            if f.changed or show_all:
                lines.append(_field_line(f, kd))
        if kd.args:
            lines.extend(_arg_line(c) for c in kd.args)
        elif show_all:
            lines.append(f"  {'explicit args':<{_LABEL_WIDTH}}unchanged")
    if result.fail_on:
        lines.append("")
        rules = ",".join(result.fail_on)
        if result.tripped:
            for t in result.tripped:
                lines.append(_fit(f"fail-on {t.rule}: tripped: {t.message}", WIDTH))
        else:
            lines.append(_fit(f"fail-on {rules}: passed (no listed measure got worse)", WIDTH))
    return "\n".join(lines)


# --------------------------------------------------------------------------- JSON


def _arg_json(a: KernelArg | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {"name": a.name, "offset": a.offset, "size": a.size, "value_kind": a.value_kind}


def _occ_json(o: targets.Occupancy | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {"waves_per_simd": o.waves_per_simd, "limited_by": list(o.limited_by), "launchable": o.launchable,
            "problems": list(o.problems)}


def _side_json(side: Side) -> dict[str, Any]:
    return {"source": side.source, "code_objects": [
        {"provenance": lo.provenance, "target": co.target_id, "sha256": co.sha256,
         "kernels": [k.name for k in co.kernels]}
        for lo, co in zip(side.loaded, side.code_objects)]}


def to_json(result: DiffResult) -> dict[str, Any]:
    """The documented JSON structure (module docstring)."""
    return {
        "format_version": JSON_FORMAT_VERSION,
        "old": _side_json(result.old),
        "new": _side_json(result.new),
        "arch": result.arch,
        "added": list(result.added),
        "removed": list(result.removed),
        "kernels": [{
            "name": kd.name,
            "demangled_name": kd.demangled,
            "changed": kd.changed,
            "block": {"old": kd.block.old, "new": kd.block.new, "source": kd.block.source,
                      "detail": kd.block.detail},
            "occupancy_target": kd.occupancy_target,
            "fields": [{"field": f.key, "label": f.label, "unit": f.unit, "old": f.old, "new": f.new,
                        "delta": f.delta, "changed": f.changed, "worse": f.worse} for f in kd.fields],
            "occupancy": {"old": _occ_json(kd.old_occupancy), "new": _occ_json(kd.new_occupancy)},
            "args": [{"index": c.index, "old": _arg_json(c.old), "new": _arg_json(c.new)} for c in kd.args],
        } for kd in result.kernels],
        "fail_on": list(result.fail_on),
        "tripped": [{"rule": t.rule, "kernel": t.kernel, "message": t.message} for t in result.tripped],
        "exit_code": result.exit_code,
    }

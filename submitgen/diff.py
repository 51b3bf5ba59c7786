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

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import targets
from .containers import LoadedCodeObject, load_code_objects
from .demangle import demangle_many
from .diffplan import plan_blocks
from .difftext import JSON_FORMAT_VERSION, fmt_arg, render_text, to_json
from .errors import CodeObjectError, DiffError
from .kernelinfo import ArgInfo as KernelArg
from .kernelinfo import KernelInfo as Kernel
from .kernelinfo import ObjectInfo as CodeObject
from .targets import MAX_WORKGROUP_SIZE
from .textfmt import WIDTH

__all__ = ["FAIL_ON_RULES", "FIELDS", "JSON_FORMAT_VERSION", "WIDTH", "DiffError", "DiffResult", "diff_sides",
           "diff_sources", "load_side", "parse_fail_on", "plan_blocks", "render_text", "to_json"]
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
        return min(k.max_flat_workgroup_size or MAX_WORKGROUP_SIZE, MAX_WORKGROUP_SIZE)

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


def _trips(kd: KernelDiff, rules: Sequence[str]) -> list[Trip]:
    out = []
    for rule in rules:
        if rule == "args":
            if kd.args:
                first = kd.args[0]
                more = f" (and {len(kd.args) - 1} more)" if len(kd.args) > 1 else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} arg {first.index}: {fmt_arg(first.old)} -> "
                                              f"{fmt_arg(first.new)}{more}"))
            continue
        for f in kd.fields:
            if f.rule == rule and f.worse:
                unit = f" {f.unit}" if f.unit else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} {f.label} {f.old} -> {f.new}{unit} "
                                              f"({f.delta:+d})"))
    return out


def _selected(old: Side, new: Side, kernel: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The kernel names of each side, kept to those ``--kernel`` names when it is given."""
    if kernel is None:
        return old.names, new.names
    picked = set()
    for side in (old, new):
        for co in side.code_objects:
            with contextlib.suppress(CodeObjectError):
                picked.add(co.kernel(kernel).name)
    if not picked:
        avail = list(dict.fromkeys(old.names + new.names))
        raise DiffError(f"no kernel named {kernel!r} in OLD or NEW; available: "
                        f"{', '.join(repr(n) for n in avail) or 'none'}")
    return tuple(n for n in old.names if n in picked), tuple(n for n in new.names if n in picked)


def diff_sides(old: Side, new: Side, *, kernel: str | None = None, block: int | None = None,
               arch: str | None = None, fail_on: Sequence[str] = ()) -> DiffResult:
    """Pair the kernels of two loaded inputs by name and compare them (see the module docstring)."""
    if block is not None and not 1 <= block <= MAX_WORKGROUP_SIZE:
        raise DiffError(f"--block: expected 1..{MAX_WORKGROUP_SIZE} threads, got {block}")
    old_names, new_names = _selected(old, new, kernel)
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



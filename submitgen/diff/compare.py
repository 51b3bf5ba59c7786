"""``submitgen diff OLD NEW``: load both inputs, pair their kernels and compare each pair. How
kernels are named and paired, and which block the occupancy uses: docs/diff-json.md; a
``--fail-on`` rule trips when its measure got worse in any pair, or when nothing was compared."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from submitgen.diff.model import (
    FAIL_ON_RULES,
    FIELDS,
    ArgChange,
    BlockChoice,
    DiffResult,
    FieldChange,
    KernelDiff,
    Side,
    Trip,
)
from submitgen.diff.plan_blocks import plan_blocks
from submitgen.diff.text import arg_label, fmt_arg
from submitgen.errors import CodeObjectError, ContainerError, DiffError
from submitgen.inspection.report import Inspected, inspect_sources
from submitgen.inspection.source import Launch, with_arg_names
from submitgen.readers.amd import processors
from submitgen.readers.amd.occupancy import required_block
from submitgen.readers.amd.processors import MAX_WORKGROUP_SIZE
from submitgen.readers.base import ArgInfo
from submitgen.readers.base import KernelInfo as Kernel
from submitgen.readers.containers import read_input
from submitgen.readers.pycoding import decode_python


def parse_fail_on(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"spills,occupancy"`` (or several such strings) -> ``("spills", "occupancy")``."""
    words = [w.strip() for part in ([text] if isinstance(text, str) else text or ()) for w in part.split(",")]
    expected = f"expected a comma-separated list of {', '.join(FAIL_ON_RULES)}"
    if bad := [w for w in words if w and w.lower() not in FAIL_ON_RULES]:
        raise DiffError(f"--fail-on: unknown measure {bad[0]!r}: {expected}")
    if text is not None and not any(words):
        raise DiffError(f"--fail-on: {expected}, got nothing")
    return tuple(dict.fromkeys(w.lower() for w in words if w))


def parse_pairs(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``("old_k=new_k", ...)`` -> ``(("old_k", "new_k"), ...)``."""
    out = []
    for v in values:
        o, sep, n = v.partition("=")
        if not sep or not o.strip() or not n.strip():
            raise DiffError(f"--pair: expected OLD=NEW (two kernel names), got {v!r}")
        out.append((o.strip(), n.strip()))
    return tuple(out)


def load_side(source: str | os.PathLike[str], *, arch: str | None = None) -> Side:
    """Every code object ``source`` holds (filtered to ``arch``) as inspect reads it, its kernels
    by unique launch name, and the launch plan's block sizes when it is a ``.py`` submission."""
    objects = tuple(inspect_sources([source], arch=arch, disasm=False))
    blocks: dict[str | None, tuple[int, ...]] = {}
    if objects and objects[0].loaded.container == "python":
        with contextlib.suppress(ContainerError):
            blocks = plan_blocks(decode_python(read_input(source), str(source)).text)
    names: list[str] = []
    kernels: list[tuple[Kernel, Inspected]] = []
    launches: list[Launch | None] = []
    where: dict[str, list[str]] = {}
    for item in objects:
        for k in item.kernels:
            table = item.submission.launches if item.submission else ()
            for la in tuple(la for la in table if la.symbol == k.name) or (None,):
                name = la.name if la is not None else k.name
                where.setdefault(name, []).append(item.code_object.processor)
                if len(where[name]) == 1:
                    names.append(name)
                    kernels.append((with_arg_names(k, la.arg_names) if la is not None else k, item))
                    launches.append(la)
    for name, procs in where.items():
        if len(procs) > 1:
            advice = "choose the code object with --arch" if len(set(procs)) == len(procs) else (
                "nothing names them apart (a submitgen build names each in its _SG_KERNEL_IMAGE table, which "
                "this file lacks); compare the code objects one by one")
            raise DiffError(f"{source}: kernel {name!r} is in {len(procs)} code objects "
                            f"({', '.join(procs)}); expected one: {advice}")
    return Side(str(source), objects, tuple(names), tuple(kernels), tuple(launches), blocks)


def pair_kernels(old: Sequence[str], new: Sequence[str], explicit: Sequence[tuple[str, str]] = ()
                 ) -> tuple[list[tuple[str, str, str]], tuple[str, ...], tuple[str, ...]]:
    """((OLD name, NEW name, how) in NEW's order, NEW names left (added), OLD names left (removed)):
    the ``--pair`` pairs, then equal names, else the one kernel left on each side."""
    pairs = [(o, n, "--pair") for o, n in explicit]
    rest_old = [n for n in old if n not in {p[0] for p in pairs}]
    rest_new = [n for n in new if n not in {p[1] for p in pairs}]
    pairs += [(n, n, "name") for n in rest_new if n in rest_old]
    if not pairs and len(rest_old) == 1 and len(rest_new) == 1:
        pairs.append((rest_old[0], rest_new[0], "one-to-one"))
    order = {n: i for i, n in enumerate(new)}
    pairs.sort(key=lambda p: order.get(p[1], len(order)))
    return (pairs, tuple(n for n in new if n not in {p[1] for p in pairs}),
            tuple(n for n in old if n not in {p[0] for p in pairs}))


def pair_args(old: Sequence[ArgInfo], new: Sequence[ArgInfo]) -> tuple[ArgChange, ...]:
    """The differing explicit arguments in NEW's order (removals at their position in OLD):
    difflib's matching of (name, kind); within a replaced run, arguments pair in order."""
    keys = [[(a.name, a.value_kind) for a in args] for args in (old, new)]
    out: list[ArgChange] = []
    for _, i0, i1, j0, j1 in SequenceMatcher(None, *keys, autojunk=False).get_opcodes():
        n = min(i1 - i0, j1 - j0)
        for i, j in zip(range(i0, i0 + n), range(j0, j0 + n)):
            a, b = old[i], new[j]
            if (a.name, a.offset, a.size, a.value_kind) != (b.name, b.offset, b.size, b.value_kind):
                out.append(ArgChange(j, a, b))
        out += [ArgChange(j, None, new[j]) for j in range(j0 + n, j1)]
        out += [ArgChange(i, old[i], None) for i in range(i0 + n, i1)]
    out.sort(key=lambda c: (c.index, c.new is not None))
    return tuple(out)


def _choose_block(old: Side, new: Side, names: tuple[str, str], block: int | None) -> BlockChoice:
    def choice(bo: int, bn: int, source: str, why: str) -> BlockChoice:
        return BlockChoice(bo, bn, source, f"{f'block {bo}' if bo == bn else f'block {bo} -> {bn}'} ({why})")

    if block is not None:
        return choice(block, block, "option", "--block")
    lo, ln = old.launch(names[0]), new.launch(names[1])
    to, tn = (lo.block if lo else None), (ln.block if ln else None)
    if to or tn:
        return choice(to or tn, tn or to, "triton", "Triton's num_warps x wave size")  # type: ignore[arg-type]
    po, pn = (side.plan_blocks.get(n, side.plan_blocks.get(None, ())) for side, n in zip((old, new), names))
    if po or pn:
        po, pn = po or pn, pn or po
        others = sorted(set(po + pn) - {max(po), max(pn)})
        return choice(max(po), max(pn), "launch plan",
                      "launch plan" + (f"; it also uses {', '.join(map(str, others))}" if others else ""))
    ko, kn = old.get(names[0])[0], new.get(names[1])[0]  # type: ignore[index]

    def cap(k: Kernel) -> int:
        return required_block(k) or min(k.max_flat_workgroup_size or MAX_WORKGROUP_SIZE, MAX_WORKGROUP_SIZE)

    if required_block(ko) or required_block(kn):
        return choice(cap(ko), cap(kn), "required block", ".reqd_workgroup_size; no launch plan")
    return choice(cap(ko), cap(kn), "max workgroup size", "max workgroup size; no launch plan")


def _compare(old: Side, new: Side, pair: tuple[str, str, str], block: int | None) -> KernelDiff:
    (ko, io), (kn, in_) = old.get(pair[0]), new.get(pair[1])  # type: ignore[misc]
    choice = _choose_block(old, new, pair[:2], block)
    to, tn = io.target, in_.target  # --arch's facts, else each object's
    recorded = [d.bytes if d is not None and d.source == "provenance" else None  # a .py's provenance only
                 for d in (io.dynamic_lds.get(ko.name), in_.dynamic_lds.get(kn.name))]
    occ_o = processors.occupancy(ko, to, choice.old, dynamic_lds=recorded[0] or 0) if to is not None else None
    occ_n = processors.occupancy(kn, tn, choice.new, dynamic_lds=recorded[1] or 0) if tn is not None else None
    both = occ_o is not None and occ_n is not None
    values: dict[str, tuple[Any, Any]] = {
        "target": (io.code_object.target_id, in_.code_object.target_id),
        "dynamic_lds": (recorded[0], recorded[1]),
        "occupancy": (occ_o.waves_per_simd, occ_n.waves_per_simd) if both else (None, None)}  # type: ignore[union-attr]
    old_new = {key: values.get(key) or (getattr(ko, key), getattr(kn, key)) for key, *_ in FIELDS}
    fields = tuple(FieldChange(key, label, unit, *old_new[key], rule, direction)
                   for key, label, unit, rule, direction in FIELDS)
    args = pair_args(ko.explicit_args, kn.explicit_args)
    return KernelDiff(pair[1], pair[0], pair[2], kn.name, in_.demangled.get(kn.name, kn.name), choice,
                      to.name if to else None, tn.name if tn else None, occ_o, occ_n, fields, args)


def _trips(kd: KernelDiff, rules: Sequence[str]) -> list[Trip]:
    out = []
    for rule in rules:
        if rule == "args" and kd.args:
            first, more = kd.args[0], f" (and {len(kd.args) - 1} more)" if len(kd.args) > 1 else ""
            out.append(Trip(rule, kd.name, f"kernel {kd.name!r} {arg_label(first)}: {fmt_arg(first.old)} "
                                           f"-> {fmt_arg(first.new)}{more}"))
        out += [Trip(rule, kd.name, f"kernel {kd.name!r} {f.label} {f.old} -> {f.new}"
                                    f"{f' {f.unit}' if f.unit else ''} ({f.delta:+d})")
                for f in kd.fields if f.rule == rule and f.worse]
    return out


def _named(side: Side, name: str) -> tuple[str, ...]:
    """The launch names of ``side`` that ``name`` (a launch name, or a kernel's .name, .symbol or
    demangled name) names."""
    def names(launch: str, k: Kernel, item: Inspected) -> bool:
        with contextlib.suppress(CodeObjectError):
            return launch == name or item.code_object.kernel(name).name == k.name
        return False

    return tuple(n for n, (k, item) in zip(side.names, side.kernels) if names(n, k, item))


def _resolve(side: Side, name: str, which: str) -> str:
    """``--pair`` names a kernel by launch name, .name, .symbol or demangled name; its launch name."""
    found = _named(side, name)
    if name in found or len(found) == 1:
        return name if name in found else found[0]
    if found:
        raise DiffError(f"--pair: {name!r} in {which} is launched as {', '.join(repr(n) for n in found)}; "
                        "name one of them")
    raise DiffError(f"--pair: no kernel named {name!r} in {which}; it has "
                    f"{', '.join(repr(n) for n in side.names) or 'none'}")


def diff_sides(old: Side, new: Side, *, kernel: str | None = None, block: int | None = None,
               arch: str | None = None, fail_on: Sequence[str] = (),
               pairs: Sequence[tuple[str, str]] = ()) -> DiffResult:
    """Pair the kernels of two loaded inputs and compare them (see the module docstring)."""
    if block is not None and not 1 <= block <= MAX_WORKGROUP_SIZE:
        raise DiffError(f"--block: expected 1..{MAX_WORKGROUP_SIZE} threads, got {block}")
    old_names, new_names = old.names, new.names
    if kernel is not None:  # --kernel keeps the kernels it names
        old_names, new_names = _named(old, kernel), _named(new, kernel)
        if not old_names and not new_names:
            raise DiffError(f"no kernel named {kernel!r} in OLD or NEW; available: "
                            f"{', '.join(repr(n) for n in dict.fromkeys(old.names + new.names)) or 'none'}")
    explicit = [(_resolve(old, o, "OLD"), _resolve(new, n, "NEW")) for o, n in pairs]
    paired, added, removed = pair_kernels(old_names, new_names, explicit)
    diffs = [_compare(old, new, p, block) for p in paired]
    tripped = [t for kd in diffs for t in _trips(kd, fail_on)]
    if fail_on and not diffs:
        tripped.append(Trip("nothing-compared", "", "no kernel of OLD was compared with one of NEW "
                                                    "(pair them with --pair OLD=NEW)"))
    return DiffResult(old, new, arch, added, removed, tuple(diffs), tuple(fail_on), tuple(tripped))


def diff_sources(old: str | os.PathLike[str], new: str | os.PathLike[str], *, kernel: str | None = None,
                 block: int | None = None, arch: str | None = None, fail_on: Sequence[str] = (),
                 pairs: Sequence[tuple[str, str]] = ()) -> DiffResult:
    """Load OLD and NEW (code object, bundle or ``.py`` submission) and diff them."""
    return diff_sides(load_side(old, arch=arch), load_side(new, arch=arch), kernel=kernel, block=block,
                      arch=arch, fail_on=fail_on, pairs=pairs)

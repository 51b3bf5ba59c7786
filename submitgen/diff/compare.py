"""``submitgen diff OLD NEW``: what changed between two builds of a kernel (docs/cli.md,
docs/diff-json.md).

Kernels are named by launch name (a ``.py`` submission's launch table), else by ``.name``; paired
by ``--pair``, then by name, then one-to-one when each side holds one kernel. Occupancy uses one
block per side: ``--block``, else Triton's num_warps x wave size, else the largest block the
plan's source spells out (``plan_blocks``; one side's plan serves both), else
``.reqd_workgroup_size``, else the max workgroup size. A ``--fail-on`` rule trips when its measure
gets worse in any paired kernel; with any rule, comparing nothing trips ``nothing-compared``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from submitgen.diff.model import (
    FAIL_ON_RULES,
    FIELDS,
    BlockChoice,
    DiffResult,
    FieldChange,
    KernelDiff,
    Side,
    Trip,
)
from submitgen.diff.pairing import KernelPair, pair_args, pair_kernels
from submitgen.diff.plan_blocks import plan_blocks
from submitgen.diff.text import arg_label, fmt_arg
from submitgen.errors import CodeObjectError, ContainerError, DiffError
from submitgen.inspection.launchtable import Launch, object_indices, read_launch_table, with_arg_names
from submitgen.readers.amd import processors
from submitgen.readers.amd.occupancy import required_block
from submitgen.readers.amd.processors import MAX_WORKGROUP_SIZE
from submitgen.readers.base import KernelInfo as Kernel
from submitgen.readers.base import ObjectInfo as CodeObject
from submitgen.readers.containers import load_code_objects, read_input
from submitgen.readers.demangle import demangle_many
from submitgen.readers.pycoding import decode_python
from submitgen.render import provenance

# --------------------------------------------------------------------------- options


def parse_fail_on(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"spills,occupancy"`` (or several such strings) -> ``("spills", "occupancy")``."""
    if text is None:
        return ()
    words = [w.strip() for part in ([text] if isinstance(text, str) else text) for w in part.split(",")]
    expected = f"expected a comma-separated list of {', '.join(FAIL_ON_RULES)}"
    for word in words:
        if word and word.lower() not in FAIL_ON_RULES:
            raise DiffError(f"--fail-on: unknown measure {word!r}: {expected}")
    if not any(words):
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


# --------------------------------------------------------------------------- loading


def _duplicate_error(source: object, name: str, procs: Sequence[str]) -> DiffError:
    if len(set(procs)) == len(procs):
        advice = "choose the code object with --arch"
    else:
        advice = ("nothing names them apart (a submitgen build names each in its _SG_KERNEL_IMAGE "
                  "table, which this file lacks); compare the code objects one by one")
    return DiffError(f"{source}: kernel {name!r} is in {len(procs)} code objects ({', '.join(procs)}); "
                     f"expected one: {advice}")


def load_side(source: str | os.PathLike[str], *, arch: str | None = None) -> Side:
    """Every code object ``source`` holds (filtered to ``arch``), its kernels by unique launch
    name, and the launch plan's block sizes when it is a ``.py`` submission."""
    loaded = tuple(load_code_objects(source, arch=arch))
    cos = tuple(lo.read() for lo in loaded)
    blocks: dict[str | None, tuple[int, ...]] = {}
    table = None
    indices = list(range(len(cos)))
    if loaded and loaded[0].container == "python":
        try:
            text = decode_python(read_input(source), str(source)).text
        except ContainerError:
            text = ""
        blocks, table = plan_blocks(text), read_launch_table(text)
        prov = provenance.read(text)
        indices = object_indices([co.sha256 for co in cos], prov.code_objects if prov is not None else ())
    kernels: list[tuple[Kernel, CodeObject]] = []
    launches: list[Launch | None] = []
    where: dict[str, list[str]] = {}
    for index, co in zip(indices, cos):
        for k in co.kernels:
            named = table.launches(index, k.name) if table is not None else ()
            for la in named or (None,):
                name = la.name if la is not None else k.name
                where.setdefault(name, []).append(co.processor)
                if len(where[name]) == 1:
                    kernels.append((with_arg_names(k, la.arg_names) if la is not None else k, co))
                    launches.append(la)
    for name, procs in where.items():
        if len(procs) > 1:
            raise _duplicate_error(source, name, procs)
    return Side(str(source), loaded, cos, tuple(kernels), blocks, tuple(launches))


# --------------------------------------------------------------------------- comparing


def _choose_block(old: Side, new: Side, pair: KernelPair, block: int | None) -> BlockChoice:
    def choice(bo: int, bn: int, source: str, why: str) -> BlockChoice:
        return BlockChoice(bo, bn, source, f"{f'block {bo}' if bo == bn else f'block {bo} -> {bn}'} ({why})")

    if block is not None:
        return choice(block, block, "option", "--block")
    lo, ln = old.launch(pair.old), new.launch(pair.new)
    to, tn = (lo.block if lo else None), (ln.block if ln else None)
    if to or tn:
        return choice(to or tn, tn or to, "triton", "Triton's num_warps x wave size")  # type: ignore[arg-type]
    po, pn = (side.plan_blocks.get(n, side.plan_blocks.get(None, ()))
              for side, n in ((old, pair.old), (new, pair.new)))
    if po or pn:
        po, pn = po or pn, pn or po
        others = sorted(set(po + pn) - {max(po), max(pn)})
        return choice(max(po), max(pn), "launch plan",
                      "launch plan" + (f"; it also uses {', '.join(map(str, others))}" if others else ""))
    ko, kn = old.get(pair.old)[0], new.get(pair.new)[0]  # type: ignore[index]

    def cap(k: Kernel) -> int:
        return required_block(k) or min(k.max_flat_workgroup_size or MAX_WORKGROUP_SIZE, MAX_WORKGROUP_SIZE)

    if required_block(ko) or required_block(kn):
        return choice(cap(ko), cap(kn), "required block", ".reqd_workgroup_size; no launch plan")
    return choice(cap(ko), cap(kn), "max workgroup size", "max workgroup size; no launch plan")


def _target_for(co: CodeObject, arch: str | None) -> processors.Processor | None:
    if arch:
        return processors.PROCESSORS.get(arch.split(":", 1)[0].strip().lower())
    return co.processor_facts()


def _fields(ko: Kernel, kn: Kernel, co_o: CodeObject, co_n: CodeObject,
            occ_o: processors.Occupancy | None, occ_n: processors.Occupancy | None,
            lds: tuple[int | None, int | None]) -> tuple[FieldChange, ...]:
    out = []
    for key, label, unit, rule, direction in FIELDS:
        if key == "target":
            vo, vn = co_o.target_id, co_n.target_id
        elif key == "dynamic_lds":
            vo, vn = lds
        elif key == "occupancy":
            vo = occ_o.waves_per_simd if occ_o is not None else None
            vn = occ_n.waves_per_simd if occ_n is not None else None
            if vo is None or vn is None:
                vo = vn = None  # nothing to compare
        else:
            vo, vn = getattr(ko, key), getattr(kn, key)
        out.append(FieldChange(key, label, unit, vo, vn, rule, direction))
    return tuple(out)


def _compare(old: Side, new: Side, pair: KernelPair, demangled: str, arch: str | None,
             block: int | None) -> KernelDiff:
    ko, co_o = old.get(pair.old)  # type: ignore[misc]
    kn, co_n = new.get(pair.new)  # type: ignore[misc]
    choice = _choose_block(old, new, pair, block)
    to, tn = _target_for(co_o, arch), _target_for(co_n, arch)
    lo, ln = old.launch(pair.old), new.launch(pair.new)
    lds = (lo.dynamic_lds if lo else None, ln.dynamic_lds if ln else None)
    occ_o = processors.occupancy(ko, to, choice.old, dynamic_lds=lds[0] or 0) if to is not None else None
    occ_n = processors.occupancy(kn, tn, choice.new, dynamic_lds=lds[1] or 0) if tn is not None else None
    fields = _fields(ko, kn, co_o, co_n, occ_o, occ_n, lds)
    return KernelDiff(pair.new, demangled, choice, tn.name if tn else None, occ_o, occ_n, fields,
                      pair_args(ko.explicit_args, kn.explicit_args), old_name=pair.old, pairing=pair.how,
                      old_target=to.name if to else None, symbol=kn.name)


def _trips(kd: KernelDiff, rules: Sequence[str]) -> list[Trip]:
    out = []
    for rule in rules:
        if rule == "args":
            if kd.args:
                first = kd.args[0]
                more = f" (and {len(kd.args) - 1} more)" if len(kd.args) > 1 else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} {arg_label(first)}: {fmt_arg(first.old)} "
                                               f"-> {fmt_arg(first.new)}{more}"))
            continue
        for f in kd.fields:
            if f.rule == rule and f.worse:
                unit = f" {f.unit}" if f.unit else ""
                out.append(Trip(rule, kd.name, f"kernel {kd.name!r} {f.label} {f.old} -> {f.new}{unit} "
                                              f"({f.delta:+d})"))
    return out


def _named(side: Side, name: str) -> tuple[str, ...]:
    """The launch names of ``side`` that ``name`` (a launch name, or a kernel's .name, .symbol or
    demangled name) names."""
    def names(launch: str, k: Kernel, co: CodeObject) -> bool:
        with contextlib.suppress(CodeObjectError):
            return launch == name or co.kernel(name).name == k.name
        return False

    return tuple(n for n, (k, co) in zip(side.names, side.kernels) if names(n, k, co))


def _selected(old: Side, new: Side, kernel: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The kernel names of each side, kept to those ``--kernel`` names when it is given."""
    if kernel is None:
        return old.names, new.names
    picked = [_named(s, kernel) for s in (old, new)]
    if not picked[0] and not picked[1]:
        avail = list(dict.fromkeys(old.names + new.names))
        raise DiffError(f"no kernel named {kernel!r} in OLD or NEW; available: "
                        f"{', '.join(repr(n) for n in avail) or 'none'}")
    return picked[0], picked[1]


def _resolve(side: Side, name: str, which: str) -> str:
    """``--pair`` names a kernel by launch name, .name, .symbol or demangled name; its launch name."""
    found = _named(side, name)
    if name in found:
        return name
    if len(found) == 1:
        return found[0]
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
    old_names, new_names = _selected(old, new, kernel)
    explicit = [(_resolve(old, o, "OLD"), _resolve(new, n, "NEW")) for o, n in pairs]
    paired, added, removed = pair_kernels(old_names, new_names, explicit)
    symbols = tuple(new.get(p.new)[0].name for p in paired)  # type: ignore[index]
    demangled = dict(zip(symbols, demangle_many(symbols)))
    diffs = [_compare(old, new, p, demangled.get(s, s), arch, block) for p, s in zip(paired, symbols)]
    rules = tuple(fail_on)
    tripped = [t for kd in diffs for t in _trips(kd, rules)]
    if rules and not diffs:
        tripped.append(Trip("nothing-compared", "", "no kernel of OLD was compared with one of NEW "
                                                    "(pair them with --pair OLD=NEW)"))
    return DiffResult(old, new, arch, added, removed, tuple(diffs), rules, tuple(tripped))


def diff_sources(old: str | os.PathLike[str], new: str | os.PathLike[str], *, kernel: str | None = None,
                 block: int | None = None, arch: str | None = None, fail_on: Sequence[str] = (),
                 pairs: Sequence[tuple[str, str]] = ()) -> DiffResult:
    """Load OLD and NEW (code object, bundle or ``.py`` submission) and diff them."""
    return diff_sides(load_side(old, arch=arch), load_side(new, arch=arch), kernel=kernel, block=block,
                      arch=arch, fail_on=fail_on, pairs=pairs)



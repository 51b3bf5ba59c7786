"""``submitgen diff``'s text report (100 columns) and JSON (docs/diff-json.md)."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import TYPE_CHECKING, Any

from submitgen import textfmt
from submitgen.diff.model import FIELDS
from submitgen.textfmt import WIDTH, fit_call, fit_middle, fit_pair, jsonable

if TYPE_CHECKING:
    from submitgen.diff.model import ArgChange, DiffResult, FieldChange, KernelDiff, Side
    from submitgen.readers.amd import processors
    from submitgen.readers.base import ArgInfo as KernelArg

JSON_FORMAT_VERSION = 1
_MOVED_RUN = 4  # this many consecutive args moved by the same offset collapse into one line


_LW = max(len(f[1]) for f in FIELDS) + 2  # the label column: the longest field label plus 2


def fmt_arg(a: KernelArg | None) -> str:
    if a is None:
        return "(none)"
    return f"{a.value_kind} {a.size} B @{a.offset}"


def arg_label(c: ArgChange) -> str:
    """``arg 'N'`` for an argument with a name (the metadata's, or a Triton signature's), else
    ``arg 5``."""
    ref = c.new or c.old
    return f"arg {ref.name!r}" if ref is not None and ref.name else f"arg {c.index}"


def _val(v: Any, key: str) -> str:
    """A field's value: ``-`` when the metadata does not record it, ``n/a`` for no occupancy."""
    if v is None:
        return "n/a" if key == "occupancy" else "-"
    return str(v)


def _labelled(label: str, body: str) -> list[str]:
    """``label`` in the label column and ``body`` after it; a label too long for the column gets
    a line of its own, so that it never runs into the values."""
    if len(label) < _LW:
        return [fit_middle(f"  {label:<{_LW}}{body}", WIDTH)]
    return [fit_middle(f"  {label}", WIDTH), fit_middle(f"  {'':<{_LW}}{body}", WIDTH)]


def _field_lines(f: FieldChange, kd: KernelDiff) -> list[str]:
    unit = f" {f.unit}" if f.unit else ""
    if f.key == "target":
        return _labelled(f.label, f"{f.old} -> {f.new}" if f.changed else str(f.new))
    if f.changed:
        body = f"{_val(f.old, f.key):>8} -> {_val(f.new, f.key)}{unit if f.new is not None else ''}"
    else:
        body = f"{_val(f.new, f.key):>8}{unit if f.new is not None else ''}"
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
    line = f"  {f.label:<{_LW}}{body}"
    if not notes:
        return [fit_middle(line, WIDTH)]
    indent = _LW + 2 + 32
    line = f"{line:<{indent - 2}}  {'; '.join(notes)}"
    return textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent, drop_whitespace=True)


def _arg_body(c: ArgChange) -> list[str]:
    if c.old is None:
        return [f"inserted: {fmt_arg(c.new)}"]
    if c.new is None:
        return [f"removed: {fmt_arg(c.old)}"]
    body = [f"{fmt_arg(c.old)} -> {fmt_arg(c.new)}"]
    if c.old.name != c.new.name:
        body.append(f"(name {c.old.name or '-'} -> {c.new.name or '-'})")
    return body


def _moved_runs(args: tuple[ArgChange, ...]) -> list[tuple[int, int]]:
    """[start, end) spans of ``args`` that are consecutive moves by one offset delta."""
    spans, i = [], 0
    while i < len(args):
        j = i
        delta = args[i].new.offset - args[i].old.offset if args[i].status == "moved" else None  # type: ignore[union-attr]
        while (delta is not None and j + 1 < len(args) and args[j + 1].status == "moved"
               and args[j + 1].index == args[j].index + 1
               and args[j + 1].new.offset - args[j + 1].old.offset == delta):  # type: ignore[union-attr]
            j += 1
        spans.append((i, j + 1))
        i = j + 1
    return spans


def _arg_lines(args: tuple[ArgChange, ...]) -> list[str]:
    lines: list[str] = []
    for i, j in _moved_runs(args):
        if j - i >= _MOVED_RUN:
            first, last = args[i], args[j - 1]
            delta = first.new.offset - first.old.offset  # type: ignore[union-attr]
            lines += _labelled(f"args {first.index}..{last.index}",
                               f"{j - i} args moved by {delta:+d} B, otherwise unchanged")
            continue
        for c in args[i:j]:
            ref = c.new or c.old
            first, *more = _arg_body(c)
            name = f" {ref.name}" if ref is not None and ref.name else ""
            lines += _labelled(f"arg {c.index}{name}", first)
            lines += [fit_middle(f"  {'':<{_LW}}{extra}", WIDTH) for extra in more]
    return lines


def _launched_as(side: Side, co: Any) -> str:
    """``: mm_m16`` when a launch table names this object's kernels otherwise than their .name."""
    names = [side.names[i] for i, (_, c) in enumerate(side.kernels) if c is co]
    return f": {', '.join(names)}" if names != [k.name for k in co.kernels] else ""


def _side_lines(tag: str, side: Side, paths: list[str]) -> list[str]:
    lines = []
    for co, shown in zip(side.code_objects, paths):
        lines.append(fit_middle(f"{tag}  {shown}", WIDTH))
        lines.append(fit_middle(f"     {co.target_id}, {co.version_label}, sha256 {co.sha256[:16]}, "
                                f"{len(co.kernels)} kernel{'s' if len(co.kernels) != 1 else ''}"
                                f"{_launched_as(side, co)}", WIDTH))
    return lines


def _sides(result: DiffResult) -> list[str]:
    old = [lo.provenance for lo in result.old.loaded]
    new = [lo.provenance for lo in result.new.loaded]
    for i in range(min(len(old), len(new))):
        old[i], new[i] = fit_pair(old[i], new[i], WIDTH - 5)
    return _side_lines("old", result.old, old) + _side_lines("new", result.new, new)


def _kernel_head(kd: KernelDiff, suffix: str = "") -> list[str]:
    width = WIDTH - len(suffix)
    if kd.old_name not in ("", kd.name):  # paired across names: show both, keeping where they differ
        old, new = fit_pair(kd.old_name, kd.name, (width - len("kernel  -> ")) // 2)
        head = [f"kernel {old} -> {new}{suffix}"]
        why = "one-to-one: each side holds one kernel and no name matches" if kd.pairing == "one-to-one" \
            else "by --pair"
        return head + [f"  paired {why}"]
    if kd.symbol and kd.symbol != kd.name:  # a launch name (a Triton specialization)
        return [fit_middle(f"kernel {kd.name} ({kd.demangled})", width) + suffix]
    if kd.demangled != kd.name:
        return [fit_call(f"kernel {kd.name}", kd.demangled, width) + suffix]
    return [fit_middle(f"kernel {kd.name}", width) + suffix]


def _occupancy_head(kd: KernelDiff) -> list[str]:
    old_t, new_t = kd.old_target, kd.occupancy_target
    if old_t == new_t or old_t is None or new_t is None:
        where = f"{new_t or old_t}, " if (new_t or old_t) else ""
    else:
        where = f"{old_t} (old) and {new_t} (new), "
    return textwrap.wrap(f"occupancy estimated for {where}{kd.block.detail}", WIDTH, initial_indent="  ",
                         subsequent_indent="      ")


def _kernel_lines(kd: KernelDiff, show_all: bool) -> list[str]:
    if not kd.changed and not show_all:
        return _kernel_head(kd, ": unchanged")
    lines = ["", *_kernel_head(kd), *_occupancy_head(kd)]
    for f in kd.fields:
        if f.changed or show_all:
            lines += _field_lines(f, kd)
    if kd.args:
        lines += _arg_lines(kd.args)
    elif show_all:
        lines.append(f"  {'explicit args':<{_LW}}unchanged")
    return lines


def render_text(result: DiffResult, *, show_all: bool = False) -> str:
    """The human report: every line at most 100 columns."""
    lines = _sides(result)
    changed = sum(1 for kd in result.kernels if kd.changed)
    lines.append(f"kernels: {len(result.kernels)} paired, {changed} changed, {len(result.added)} added, "
                 f"{len(result.removed)} removed")
    if not result.kernels:
        lines += textwrap.wrap("nothing compared: no kernel of OLD pairs with one of NEW by name, and the "
                               "sides do not hold exactly one kernel each; pair them with --pair OLD=NEW",
                               WIDTH)
    lines += [fit_middle(f"added    kernel {n}", WIDTH) for n in result.added]
    lines += [fit_middle(f"removed  kernel {n}", WIDTH) for n in result.removed]
    for kd in result.kernels:
        lines += _kernel_lines(kd, show_all)
    if result.fail_on:
        lines.append("")
        rules = ",".join(result.fail_on)
        if result.tripped:
            for t in result.tripped:
                lines += textwrap.wrap(f"fail-on {t.rule}: tripped: {t.message}", WIDTH,
                                       subsequent_indent="    ")
        else:
            lines.append(fit_middle(f"fail-on {rules}: passed (no listed measure got worse)", WIDTH))
    return textfmt.lines(lines)


# --------------------------------------------------------------------------- JSON


def _arg_json(a: KernelArg | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {"name": a.name, "offset": a.offset, "size": a.size, "value_kind": a.value_kind}


def _occ_json(o: processors.Occupancy | None) -> dict[str, Any] | None:
    if o is None:
        return None
    return {"waves_per_simd": o.waves_per_simd, "limited_by": list(o.limited_by), "launchable": o.launchable,
            "problems": list(o.problems)}


def _side_json(side: Side) -> dict[str, Any]:
    return {"source": side.source, "launch_names": list(side.names), "code_objects": [
        {"provenance": lo.provenance, "target": co.target_id, "sha256": co.sha256,
         "kernels": [k.name for k in co.kernels]}
        for lo, co in zip(side.loaded, side.code_objects)]}


def _kernel_json(kd: KernelDiff) -> dict[str, Any]:
    return {
        "name": kd.name, "old_name": kd.old_name or kd.name, "symbol": kd.symbol or kd.name,
        "pairing": kd.pairing, "demangled_name": kd.demangled, "changed": kd.changed,
        "block": dataclasses.asdict(kd.block), "occupancy_target": kd.occupancy_target,
        "occupancy_targets": {"old": kd.old_target, "new": kd.occupancy_target},
        "fields": [{"field": f.key, "label": f.label, "unit": f.unit, "old": f.old, "new": f.new,
                    "delta": f.delta, "changed": f.changed, "worse": f.worse} for f in kd.fields],
        "occupancy": {"old": _occ_json(kd.old_occupancy), "new": _occ_json(kd.new_occupancy)},
        "args": [{"index": c.index, "status": c.status, "old": _arg_json(c.old), "new": _arg_json(c.new)}
                 for c in kd.args],
    }


def to_json(result: DiffResult) -> dict[str, Any]:
    """The documented JSON structure (docs/diff-json.md), as strict JSON values."""
    return jsonable({
        "format_version": JSON_FORMAT_VERSION,
        "old": _side_json(result.old), "new": _side_json(result.new), "arch": result.arch,
        "added": list(result.added), "removed": list(result.removed),
        "kernels": [_kernel_json(kd) for kd in result.kernels],
        "fail_on": list(result.fail_on),
        "tripped": [{"rule": t.rule, "kernel": t.kernel, "message": t.message} for t in result.tripped],
        "compared": result.compared,
        "exit_code": result.exit_code,
    })

"""``submitgen diff``'s text report (100 columns) and JSON (format in ``diff``'s docstring)."""

from __future__ import annotations

import textwrap
from functools import cache
from typing import TYPE_CHECKING, Any

from .textfmt import WIDTH

if TYPE_CHECKING:
    from . import targets
    from .diff import ArgChange, DiffResult, FieldChange, KernelDiff, Side
    from .kernelinfo import ArgInfo as KernelArg

JSON_FORMAT_VERSION = 1


@cache
def _lw() -> int:
    """Width of the label column: the longest field label plus 2."""
    from .diff import FIELDS  # noqa: PLC0415  (diff imports this module)

    return max(len(f[1]) for f in FIELDS) + 2


def fmt_arg(a: KernelArg | None) -> str:
    if a is None:
        return "(none)"
    return f"{a.value_kind} {a.size} B @{a.offset}"



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
        return _fit(f"  {f.label:<{_lw()}}{text}", WIDTH)
    if f.changed:
        body = f"{_val(f.old):>8} -> {_val(f.new)}{unit if f.new is not None else ''}"
    else:
        body = f"{_val(f.new):>8}{unit if f.new is not None else ''}"
    line = f"  {f.label:<{_lw()}}{body}"
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
    indent = _lw() + 2 + 32
    line = f"{line:<{indent - 2}}  {'; '.join(notes)}"
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent, drop_whitespace=True))


def _arg_line(c: ArgChange) -> str:
    ref = c.new or c.old
    name = f" {ref.name}" if ref is not None and ref.name else ""
    return _fit(f"  {('arg ' + str(c.index) + name):<{_lw()}}{fmt_arg(c.old)} -> {fmt_arg(c.new)}", WIDTH)


def _side_lines(tag: str, side: Side) -> list[str]:
    lines = []
    for lo, co in zip(side.loaded, side.code_objects):
        lines.append(_fit(f"{tag}  {lo.provenance}", WIDTH))
        lines.append(_fit(f"     {co.target_id}, {co.version_label}, {len(co.kernels)} "
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
            lines.append(f"  {'explicit args':<{_lw()}}unchanged")
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

"""``submitgen diff``'s text report (100 columns) and JSON (docs/diff-json.md)."""

from __future__ import annotations

import dataclasses
import textwrap
from itertools import groupby
from typing import TYPE_CHECKING, Any

from submitgen import textfmt
from submitgen.diff.model import FIELDS
from submitgen.textfmt import WIDTH, fit_call, fit_middle, fit_pair, jsonable

if TYPE_CHECKING:
    from submitgen.diff.model import ArgChange, DiffResult, FieldChange, KernelDiff, Side
    from submitgen.readers.base import ArgInfo as KernelArg

JSON_FORMAT_VERSION = 1
_MOVED_RUN = 4  # this many consecutive args moved by the same offset collapse into one line
_LW = max(len(f[1]) for f in FIELDS) + 2  # the label column: the longest field label plus 2


def fmt_arg(a: KernelArg | None) -> str:
    return "(none)" if a is None else f"{a.value_kind} {a.size} B @{a.offset}"


def arg_label(c: ArgChange) -> str:
    """``arg 'N'`` for an argument with a name (the metadata's, or a Triton signature's), else
    ``arg 5``."""
    ref = c.new or c.old
    return f"arg {ref.name!r}" if ref is not None and ref.name else f"arg {c.index}"


def _val(v: Any, key: str) -> str:
    """A field's value: ``-`` when the metadata does not record it, ``n/a`` for no occupancy."""
    return str(v) if v is not None else "n/a" if key == "occupancy" else "-"


def _labelled(label: str, body: str) -> list[str]:
    """``label`` in the label column and ``body`` after it; a label too long for the column gets
    a line of its own, so that it never runs into the values."""
    if len(label) < _LW:
        return [fit_middle(f"  {label:<{_LW}}{body}", WIDTH)]
    return [fit_middle(f"  {label}", WIDTH), fit_middle(f"  {'':<{_LW}}{body}", WIDTH)]


def _field_lines(f: FieldChange, kd: KernelDiff) -> list[str]:
    if f.key == "target":
        return _labelled(f.label, f"{f.old} -> {f.new}" if f.changed else str(f.new))
    body = (f"{_val(f.old, f.key):>8} -> {_val(f.new, f.key)}" if f.changed else f"{_val(f.new, f.key):>8}")
    body += f" {f.unit}" if f.unit and f.new is not None else ""
    notes = []
    if f.changed and f.delta is not None:
        notes.append(f"{f.delta:+d}" + (" (worse)" if f.worse else ""))
    if f.key == "occupancy":
        occ = kd.new_occupancy
        if f.new is None:
            notes.append("no occupancy facts for this target")
        elif occ is not None:
            notes.append(f"limited by {', '.join(occ.limited_by)}" if occ.launchable
                         else "cannot launch: " + "; ".join(occ.problems))
    line = f"  {f.label:<{_LW}}{body}"
    if not notes:
        return [fit_middle(line, WIDTH)]
    indent = _LW + 2 + 32
    line = f"{line:<{indent - 2}}  {'; '.join(notes)}"
    return textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent, drop_whitespace=True)


def _arg_body(c: ArgChange) -> list[str]:
    if c.old is None or c.new is None:
        return [f"inserted: {fmt_arg(c.new)}" if c.old is None else f"removed: {fmt_arg(c.old)}"]
    renamed = [f"(name {c.old.name or '-'} -> {c.new.name or '-'})"] if c.old.name != c.new.name else []
    return [f"{fmt_arg(c.old)} -> {fmt_arg(c.new)}", *renamed]


def _shift(c: ArgChange) -> int:
    return c.new.offset - c.old.offset  # type: ignore[union-attr]


def _arg_lines(args: tuple[ArgChange, ...]) -> list[str]:
    lines: list[str] = []
    # consecutive arguments moved by one offset delta share a key (the others' keys are unique)
    for _, group in groupby(enumerate(args), lambda p: (_shift(p[1]), p[1].index - p[0])
                            if p[1].status == "moved" else p[0]):
        run = [c for _, c in group]
        if len(run) >= _MOVED_RUN:
            lines += _labelled(f"args {run[0].index}..{run[-1].index}",
                               f"{len(run)} args moved by {_shift(run[0]):+d} B, otherwise unchanged")
            continue
        for c in run:
            ref = c.new or c.old
            first, *more = _arg_body(c)
            name = f" {ref.name}" if ref is not None and ref.name else ""
            lines += _labelled(f"arg {c.index}{name}", first)
            lines += [fit_middle(f"  {'':<{_LW}}{extra}", WIDTH) for extra in more]
    return lines


def _side_lines(tag: str, side: Side, paths: list[str]) -> list[str]:
    lines = []
    for item, shown in zip(side.objects, paths):
        co = item.code_object
        # ": mm_m16" when a launch table names this object's kernels otherwise than their .name
        names = [side.names[i] for i, (_, it) in enumerate(side.kernels) if it is item]
        launched = f": {', '.join(names)}" if names != [k.name for k in co.kernels] else ""
        lines.append(fit_middle(f"{tag}  {shown}", WIDTH))
        plural = "s" if len(co.kernels) != 1 else ""
        lines.append(fit_middle(f"     {co.target_id}, {co.version_label}, sha256 {co.sha256[:16]}, "
                                f"{len(co.kernels)} kernel{plural}{launched}", WIDTH))
    return lines


def _sides(result: DiffResult) -> list[str]:
    old, new = ([item.loaded.provenance for item in side.objects] for side in (result.old, result.new))
    for i in range(min(len(old), len(new))):  # a path pair keeps where the two differ
        old[i], new[i] = fit_pair(old[i], new[i], WIDTH - 5)
    return _side_lines("old", result.old, old) + _side_lines("new", result.new, new)


def _kernel_head(kd: KernelDiff, suffix: str = "") -> list[str]:
    width = WIDTH - len(suffix)
    if kd.old_name != kd.name:  # paired across names: show both, keeping where they differ
        old, new = fit_pair(kd.old_name, kd.name, (width - len("kernel  -> ")) // 2)
        why = "one-to-one: each side holds one kernel and no name matches" if kd.pairing == "one-to-one" \
            else "by --pair"
        return [f"kernel {old} -> {new}{suffix}", f"  paired {why}"]
    if kd.symbol != kd.name:  # a launch name (a Triton specialization)
        return [fit_middle(f"kernel {kd.name} ({kd.demangled})", width) + suffix]
    if kd.demangled != kd.name:
        return [fit_call(f"kernel {kd.name}", kd.demangled, width) + suffix]
    return [fit_middle(f"kernel {kd.name}", width) + suffix]


def _occupancy_head(kd: KernelDiff) -> list[str]:
    old_t, new_t = kd.old_target, kd.occupancy_target
    where = f"{new_t or old_t}, " if new_t or old_t else ""
    if old_t and new_t and old_t != new_t:
        where = f"{old_t} (old) and {new_t} (new), "
    return textwrap.wrap(f"occupancy estimated for {where}{kd.block.detail}", WIDTH, initial_indent="  ",
                         subsequent_indent="      ")


def _kernel_lines(kd: KernelDiff, show_all: bool) -> list[str]:
    if not kd.changed and not show_all:
        return _kernel_head(kd, ": unchanged")
    lines = ["", *_kernel_head(kd), *_occupancy_head(kd)]
    lines += [line for f in kd.fields if f.changed or show_all for line in _field_lines(f, kd)]
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
    lines += [line for kd in result.kernels for line in _kernel_lines(kd, show_all)]
    if result.fail_on:
        lines.append("")
        for t in result.tripped:
            lines += textwrap.wrap(f"fail-on {t.rule}: tripped: {t.message}", WIDTH, subsequent_indent="    ")
        if not result.tripped:
            rules = ",".join(result.fail_on)
            lines.append(fit_middle(f"fail-on {rules}: passed (no listed measure got worse)", WIDTH))
    return textfmt.lines(lines)


# --------------------------------------------------------------------------- JSON


def _pick(obj: Any, keys: str) -> Any:
    """``obj``'s attributes ``keys`` (space-separated) as a dict; None for None."""
    return None if obj is None else {k: getattr(obj, k) for k in keys.split()}


def _kernel_json(kd: KernelDiff) -> dict[str, Any]:
    occ = "waves_per_simd limited_by launchable problems"
    return {
        "name": kd.name, "old_name": kd.old_name, "symbol": kd.symbol, "pairing": kd.pairing,
        "demangled_name": kd.demangled, "changed": kd.changed, "block": dataclasses.asdict(kd.block),
        "occupancy_target": kd.occupancy_target,
        "occupancy_targets": {"old": kd.old_target, "new": kd.occupancy_target},
        "fields": [{"field": f.key} | _pick(f, "label unit old new delta changed worse") for f in kd.fields],
        "occupancy": {"old": _pick(kd.old_occupancy, occ), "new": _pick(kd.new_occupancy, occ)},
        "args": [{"index": c.index, "status": c.status, "old": _pick(c.old, "name offset size value_kind"),
                  "new": _pick(c.new, "name offset size value_kind")} for c in kd.args],
    }


def to_json(result: DiffResult) -> dict[str, Any]:
    """The documented JSON structure (docs/diff-json.md), as strict JSON values."""
    return jsonable({
        "format_version": JSON_FORMAT_VERSION,
        **{tag: {"source": side.source, "launch_names": side.names, "code_objects": [
            {"provenance": it.loaded.provenance, "target": it.code_object.target_id,
             "sha256": it.code_object.sha256, "kernels": [k.name for k in it.code_object.kernels]}
            for it in side.objects]} for tag, side in (("old", result.old), ("new", result.new))},
        "arch": result.arch, "added": result.added, "removed": result.removed,
        "kernels": [_kernel_json(kd) for kd in result.kernels], "fail_on": result.fail_on,
        "tripped": [_pick(t, "rule kernel message") for t in result.tripped],
        "compared": result.compared, "exit_code": result.exit_code,
    })

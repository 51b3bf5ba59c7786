"""What ``submitgen inspect`` shows: the code object model as text (fits 100 columns) or as a
JSON-ready dict whose keys are the metadata's own names without the leading dot, plus derived
fields with clear names. docs/inspect-json.md documents every key."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from submitgen import textfmt
from submitgen.errors import CodeObjectError
from submitgen.inspection.source import (
    DynamicLds,
    SubmissionInfo,
    sidecar_lds,
    submission_infos,
    with_arg_names,
)
from submitgen.readers.amd import processors
from submitgen.readers.amd.occupancy import required_block
from submitgen.readers.base import Finding, KernelInfo, ObjectInfo
from submitgen.readers.containers import LoadedCodeObject, load_code_objects
from submitgen.readers.demangle import demangle_many
from submitgen.readers.disasm import (
    MIN_LLVM_MAJOR,
    Disassembler,
    InstructionMix,
    Job,
    find_disassembler,
    instruction_mixes,
)

WIDTH = textfmt.WIDTH
JSON_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Inspected:
    """One code object as inspect shows it."""

    loaded: LoadedCodeObject
    code_object: ObjectInfo
    kernels: tuple[KernelInfo, ...]  # after --kernel filtering
    target: processors.Processor | None  # facts used for occupancy (--arch, else the object's processor)
    occupancy: Mapping[str, processors.Occupancy]  # kernel name -> estimate
    demangled: Mapping[str, str]
    submission: SubmissionInfo | None = None  # for code objects found in a .py submission
    dynamic_lds: Mapping[str, DynamicLds] = field(default_factory=lambda: MappingProxyType({}))
    mix: Mapping[str, InstructionMix] = field(default_factory=lambda: MappingProxyType({}))
    disasm_note: str | None = None  # why there is no instruction mix (None: there is one, or not asked)

    def kernel_findings(self, k: KernelInfo) -> list[Finding]:
        """``k``'s own findings, then a block that contradicts its required one, then why it
        cannot launch as estimated."""
        fs, occ, need = list(k.findings), self.occupancy.get(k.name), required_block(k)
        if occ is not None and need is not None and occ.block_size != need:
            fs.append(Finding("error", "block-mismatch", f"a block of {occ.block_size} threads contradicts "
                              f".reqd_workgroup_size {tuple(k.reqd_workgroup_size or ())} ({need} threads)",
                              k.name))
        if occ is not None and not occ.launchable:
            have = {f.message for f in fs}
            where = f"on {occ.target} with a block of {occ.block_size}"
            fs += [Finding("error", "not-launchable", f"{where}: {p}", k.name)
                   for p in occ.problems if p not in have]
        return fs

    @property
    def findings(self) -> list[Finding]:
        """Every finding inspect shows for this object: its own, then each shown kernel's."""
        own = [f for f in self.code_object.findings if f.kernel is None]
        return own + [f for k in self.kernels for f in self.kernel_findings(k)]


def exit_status(items: Sequence[Inspected]) -> int:
    """inspect's exit status: 1 when any error-severity finding is shown, else 0."""
    return 1 if any(f.severity == "error" for item in items for f in item.findings) else 0


def _picked(read: Sequence[tuple[Any, LoadedCodeObject, ObjectInfo]], kernels: Sequence[str],
            subs: Sequence[SubmissionInfo | None]) -> list[list[KernelInfo]]:
    """Each object's kernels (a Triton kernel's arguments named from its signature), kept to those
    ``--kernel`` names by launch name (a submission's), .name, .symbol or demangled name; an error
    for a name no object has."""
    picks, found, every = [], set(), []
    for (_, _, co), sub in zip(read, subs):
        launched = {k.name: sub.launch_names(k.name) if sub else () for k in co.kernels}
        named = {k.name: with_arg_names(k, sub.arg_names(k.name)) if sub else k for k in co.kernels}
        every += [n for k in co.kernels for n in launched[k.name] or (k.name,)]
        picked: dict[str, None] = {}
        for want in kernels:
            ks = [n for n in named if want in launched[n]]
            with contextlib.suppress(CodeObjectError):
                ks = ks or [co.kernel(want).name]  # type: ignore[attr-defined]
            found.update([want] if ks else [])
            picked.update(dict.fromkeys(ks))
        picks.append([named[n] for n in (picked if kernels else named)])
    if missing := [k for k in kernels if k not in found]:
        raise CodeObjectError(f"no kernel named {missing[0]!r}; available: "
                              f"{', '.join(repr(n) for n in dict.fromkeys(every)) or 'none'}")
    return picks


def inspect_sources(paths: Iterable[str | os.PathLike[str] | bytes], *, arch: str | None = None,
                    kernels: Sequence[str] = (), block: int | None = None, lds: int | None = None,
                    disasm: bool = True) -> list[Inspected]:
    """Every code object in ``paths``, with the kernels ``kernels`` names (all if empty), their
    occupancy for ``block`` threads and ``lds`` bytes of dynamic LDS (the defaults: inspect's --help),
    and with ``disasm`` their instruction mix."""
    read: list[tuple[str | os.PathLike[str] | bytes, LoadedCodeObject, ObjectInfo]] = []
    subs: list[SubmissionInfo | None] = []
    for p in paths:
        objs = [(p, loaded, loaded.read()) for loaded in load_code_objects(p, arch=arch)]
        python = bool(objs) and objs[0][1].container == "python"
        subs += submission_infos(p, [co.sha256 for *_, co in objs]) if python else [None] * len(objs)
        read += objs
    picks = _picked(read, kernels, subs)
    every = tuple(k.name for picked in picks for k in picked)
    dem = dict(zip(every, demangle_many(every)))
    tool = find_disassembler() if disasm else None
    out: list[Inspected] = []
    for (p, loaded, co), picked, sub in zip(read, picks, subs):
        mix, note = _mix(loaded, co, picked, tool) if disasm else ({}, None)
        tgt = processors.PROCESSORS.get(arch.split(":", 1)[0].lower()) if arch else co.processor_facts()
        # dynamic LDS: --lds, else the submission's provenance, else a Triton sidecar
        fixed = DynamicLds(lds, "--lds") if lds is not None else None
        if fixed is None and sub is None and loaded.container == "elf":
            fixed = sidecar_lds(p)
        dyn = {k.name: fixed for k in picked} if fixed else sub.dynamic_lds() if sub is not None else {}
        occ = {k.name: processors.occupancy(k, tgt, block,
                                            dynamic_lds=dyn[k.name].bytes if k.name in dyn else 0)
               for k in picked} if tgt is not None else {}
        out.append(Inspected(loaded, co, tuple(picked), tgt, occ, {k.name: dem[k.name] for k in picked},
                             sub, MappingProxyType(dyn), MappingProxyType(mix), note))
    return out


def _mix(loaded: LoadedCodeObject, co: ObjectInfo, picked: Sequence[KernelInfo],
         tool: Disassembler | None) -> tuple[dict[str, InstructionMix], str | None]:
    """An AMD object's picked kernels' instruction mix (llvm-objdump lists the object once,
    ``disasm.instruction_mixes``), or the note that names the missing tool."""
    if not co.processor.startswith("gfx") or not picked:
        return {}, None  # cubins: no AMD disassembly (cuobjdump --dump-sass shows their code)
    if tool is None:
        return {}, (f"no instruction mix: no llvm-objdump >= {MIN_LLVM_MAJOR} found "
                    "(Debian: apt-get install llvm-22; or set SUBMITGEN_OBJDUMP)")
    symbols = {k.name: k.symbol.removesuffix(".kd") for k in picked}
    [found] = instruction_mixes([Job(loaded.data, co.processor, tuple(symbols.values()), loaded.provenance)],
                                tool)
    return {name: found[sym] for name, sym in symbols.items() if sym in found}, None


# --------------------------------------------------------------------------- JSON


def _occupancy(o: processors.Occupancy) -> dict[str, Any]:
    limits = {lim.resource: {"waves_per_simd": lim.waves_per_simd, "detail": lim.detail} for lim in o.limits}
    return dataclasses.asdict(o) | {"limits": limits}  # the fields in order; limits by resource


def kernel_to_json(item: Inspected, k: KernelInfo) -> dict[str, Any]:
    occ, dyn, mix = item.occupancy.get(k.name), item.dynamic_lds.get(k.name), item.mix.get(k.name)
    d = k.to_json(item.demangled.get(k.name, k.demangled_name))
    d["occupancy"] = _occupancy(occ) | {"dynamic_lds": dyn.bytes if dyn else 0,
                                        "dynamic_lds_source": dyn.source if dyn else None} if occ else None
    d["findings"] = [f.to_json() for f in item.kernel_findings(k)]
    d["instruction_mix"] = mix.to_json() if mix else None
    d["launch_names"] = list(item.submission.launch_names(k.name)) if item.submission else []
    return d


def code_object_to_json(item: Inspected) -> dict[str, Any]:
    co, ld = item.code_object, item.loaded
    return {
        "source": ld.provenance, "path": ld.path, "container": ld.container, "bundle_entry": ld.bundle_entry,
        "python_line": ld.python_line, "encoding": ld.encoding,
        **co.header_json(),
        "occupancy_target": item.target.name if item.target else None,
        "kernels": [kernel_to_json(item, k) for k in item.kernels],
        "instruction_mix_note": item.disasm_note,
        "findings": [f.to_json() for f in co.findings if f.kernel is None],
        "submission": item.submission.to_json() if item.submission else None,
    }


_ENCODER = json.JSONEncoder(allow_nan=False)


def json_text(items: Sequence[Inspected]) -> str:
    """The documented structure (docs/inspect-json.md) as strict JSON (no NaN, no infinities,
    string keys only; the metadata's unknown keys pass through ``textfmt.jsonable``): the top
    level indented, each code object on one line."""
    objs = ",\n    ".join(_ENCODER.encode(code_object_to_json(item)) for item in items)
    return (f'{{\n  "format_version": {JSON_FORMAT_VERSION},\n  "code_objects": '
            + (f"[\n    {objs}\n  ]" if objs else "[]")
            + f',\n  "exit_status": {exit_status(items)}\n}}')


# --------------------------------------------------------------------------- text


def _occupancy_lines(item: Inspected, k: KernelInfo, occ: processors.Occupancy | None) -> list[str]:
    if occ is None:
        note = item.code_object.occupancy_note() if item.target is None else None
        return textfmt.wrap(note) if note else []
    dyn = item.dynamic_lds.get(k.name)
    lds = f", dynamic LDS {dyn.bytes} B ({dyn.source})" if dyn else ""
    head = f"occupancy on {occ.target}, block {occ.block_size}{lds}: "
    if not occ.launchable:
        return textfmt.wrap(head + "cannot launch")
    per = ", ".join(f"{lim.resource} {lim.waves_per_simd}" for lim in occ.limits
                    if lim.resource != "hardware")
    return textfmt.wrap(head + f"{occ.waves_per_simd} waves/SIMD, {occ.workgroups_per_cu} workgroups/CU, "
                               f"limited by {', '.join(occ.limited_by)} ({per})")


def _kernel_text(item: Inspected, k: KernelInfo) -> list[str]:
    dem = item.demangled.get(k.name, k.name)
    launched = item.submission.launch_names(k.name) if item.submission else ()  # when not its own name
    head = f"kernel {', '.join(launched)} ({dem})" if launched and launched != (k.name,) else f"kernel {dem}"
    lines = textfmt.wrap(head, "", "    ") + (textfmt.wrap(f"raw name {k.name}") if dem != k.name else [])
    lines += k.text_lines() + _occupancy_lines(item, k, item.occupancy.get(k.name))
    if k.name in item.mix:
        lines += textfmt.wrap(item.mix[k.name].text())
    return lines + [line for f in item.kernel_findings(k) for line in _finding(f)]


def _finding(f: Finding) -> list[str]:
    return textfmt.wrap(f"{f.severity}: {f.message}")


def render_text(items: Sequence[Inspected]) -> str:
    out: list[str] = []
    for n, item in enumerate(items):
        out += [""] * bool(n) + textfmt.wrap(item.loaded.provenance, "", "    ")
        if item.submission:
            out += textfmt.wrap(item.submission.text(), "  ", "      ")
        out += item.code_object.header_lines()
        out += [line for f in item.code_object.findings if f.kernel is None for line in _finding(f)]
        if item.disasm_note:
            out += textfmt.wrap(f"note: {item.disasm_note}")
        for k in item.kernels:
            out += ["", *_kernel_text(item, k)]
    return textfmt.lines(out)

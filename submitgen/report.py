"""What ``submitgen inspect`` shows: the code object model as text (fits 100 columns) or as a
JSON-ready dict whose keys are the metadata's own names without the leading dot, plus derived
fields with clear names. docs/inspect-json.md documents every key."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from . import targets
from .codeobject import CodeObject, Finding, Kernel, KernelArg, KernelDescriptor, demangle_many
from .containers import LoadedCodeObject, load_code_objects
from .cubin import CubinObject
from .cubin import render_text as _cubin_text
from .errors import CodeObjectError

WIDTH = 100
JSON_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Inspected:
    """One code object as inspect shows it."""

    loaded: LoadedCodeObject
    code_object: CodeObject
    kernels: tuple[Kernel, ...]  # after --kernel filtering
    target: targets.Target | None  # facts used for occupancy (--arch, else the object's processor)
    occupancy: Mapping[str, targets.Occupancy]  # kernel name -> estimate
    demangled: Mapping[str, str]
    submission: SubmissionInfo | None = None  # for code objects found in a .py submission


@dataclass(frozen=True)
class SubmissionInfo:
    """What a .py submission says of itself: its directives and submitgen's provenance line."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    provenance: Mapping[str, str] | None  # None: not built by submitgen (or the line was removed)
    matches_provenance: bool | None  # the embedded object's sha256 is one the provenance records

    def to_json(self) -> dict[str, Any]:
        return {"leaderboard": self.leaderboard, "gpus": list(self.gpus),
                "provenance": dict(self.provenance) if self.provenance is not None else None,
                "matches_provenance": self.matches_provenance}

    def text(self) -> str:
        where = f"{self.leaderboard or 'no leaderboard directive'} on {', '.join(self.gpus) or 'no gpu directive'}"
        if self.provenance is None:
            return f"submission for {where}; no submitgen provenance line"
        p = self.provenance
        built = (f"built by submitgen {p.get('version', '?')} for {p.get('arch', '?')} (launcher "
                 f"{p.get('launcher', '?')}, {p.get('compress', '?')}), sources sha256 {p.get('sources', '?')[:12]}")
        verdict = ("this code object is the one it records" if self.matches_provenance
                   else "WARNING: this code object's sha256 is not the one it records (edited after the build?)")
        return f"submission for {where}; {built}; {verdict}"


def _submission_info(path: str | os.PathLike[str] | bytes, sha256: str) -> SubmissionInfo | None:
    if isinstance(path, (bytes, bytearray, memoryview)):
        return None
    from . import provenance
    from .lint import read_header

    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    header = read_header(text)
    prov = provenance.read(text)
    return SubmissionInfo(header.leaderboard, tuple(header.gpus), prov.fields if prov else None,
                          (sha256 in prov.code_objects) if prov else None)


def inspect_sources(
    paths: Iterable[str | os.PathLike[str] | bytes],
    *,
    arch: str | None = None,
    kernels: Sequence[str] = (),
    block: int | None = None,
) -> list[Inspected]:
    """Load and read every code object in ``paths``; keep the kernels named in ``kernels`` (all if
    empty); estimate occupancy for ``block`` threads (default: each kernel's max workgroup size)."""
    out: list[Inspected] = []
    wanted_found: set[str] = set()
    all_names: list[str] = []
    for p in paths:
        for loaded in load_code_objects(p, arch=arch):
            co = loaded.read()
            all_names.extend(k.name for k in co.kernels)
            if kernels:
                picked = []
                for want in kernels:
                    try:
                        k = co.kernel(want)
                    except CodeObjectError:
                        continue
                    wanted_found.add(want)
                    if k not in picked:
                        picked.append(k)
            else:
                picked = list(co.kernels)
            tgt = targets.TARGETS.get(arch.split(":", 1)[0].lower()) if arch else co.target()
            occ = {}
            if tgt is not None:
                for k in picked:
                    occ[k.name] = targets.occupancy(k, tgt, block)
            names = tuple(k.name for k in picked)
            dem = dict(zip(names, demangle_many(names)))
            sub = _submission_info(p, co.sha256) if loaded.container == "python" else None
            out.append(Inspected(loaded, co, tuple(picked), tgt, occ, dem, sub))
    missing = [k for k in kernels if k not in wanted_found]
    if missing:
        raise CodeObjectError(
            f"no kernel named {missing[0]!r}; available: {', '.join(repr(n) for n in all_names) or 'none'}"
        )
    return out


# --------------------------------------------------------------------------- JSON


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, float) and v != v:
        return None
    return v


def _unknown(target: dict[str, Any], unknown: Mapping[str, Any]) -> None:
    for k, v in unknown.items():
        key = k[1:] if k.startswith(".") else k
        target[key if key not in target else k] = _jsonable(v)


def _finding(f: Finding) -> dict[str, Any]:
    return {"severity": f.severity, "code": f.code, "message": f.message, "kernel": f.kernel}


def _arg(a: KernelArg) -> dict[str, Any]:
    d: dict[str, Any] = {"index": a.index, "offset": a.offset, "size": a.size, "value_kind": a.value_kind}
    for k in ("name", "type_name", "address_space", "access", "actual_access", "pointee_align", "is_const",
              "is_restrict", "is_volatile", "is_pipe", "value_type"):
        v = getattr(a, k)
        if v is not None:
            d[k] = v
    _unknown(d, a.unknown)
    d["hidden"] = a.hidden
    return d


def _descriptor(kd: KernelDescriptor) -> dict[str, Any]:
    d = {f.name: getattr(kd, f.name) for f in fields(kd)}
    d["entry_address"] = kd.entry_address
    return _jsonable(d)


def _occupancy(o: targets.Occupancy) -> dict[str, Any]:
    return {
        "target": o.target, "block_size": o.block_size, "waves_per_workgroup": o.waves_per_workgroup,
        "waves_per_simd": o.waves_per_simd, "waves_per_cu": o.waves_per_cu,
        "workgroups_per_cu": o.workgroups_per_cu, "limited_by": list(o.limited_by),
        "limits": {lim.resource: {"waves_per_simd": lim.waves_per_simd, "detail": lim.detail} for lim in o.limits},
        "launchable": o.launchable, "problems": list(o.problems),
    }


_KERNEL_META = ("name", "symbol", "language", "language_version", "kind", "kernarg_segment_size",
                "kernarg_segment_align", "group_segment_fixed_size", "private_segment_fixed_size",
                "wavefront_size", "sgpr_count", "vgpr_count", "agpr_count", "sgpr_spill_count",
                "vgpr_spill_count", "max_flat_workgroup_size", "uniform_work_group_size", "uses_dynamic_stack",
                "workgroup_processor_mode", "reqd_workgroup_size", "workgroup_size_hint", "vec_type_hint",
                "device_enqueue_symbol", "cluster_dims")


def _kernel_findings(k: Kernel, occ: targets.Occupancy | None) -> list[Finding]:
    fs = list(k.findings)
    if occ is not None and not occ.launchable:
        have = {f.message for f in fs}
        for p in occ.problems:
            if p not in have:
                fs.append(Finding("error", "not-launchable", f"on {occ.target} with a block of {occ.block_size}: {p}",
                                  k.name))
    return fs


def kernel_to_json(k: Kernel, occ: targets.Occupancy | None = None, demangled: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for key in _KERNEL_META:
        v = getattr(k, key)
        if v is not None:
            d[key] = _jsonable(v)
    if k.max_num_workgroups is not None:
        for axis, v in zip("xyz", k.max_num_workgroups):
            d[f"max_num_workgroups_{axis}"] = v
    d["args"] = [_arg(a) for a in k.args]
    _unknown(d, k.unknown)
    d["demangled_name"] = demangled if demangled is not None else k.demangled_name
    d["explicit_args_size"] = k.explicit_args_size
    d["explicit_arg_count"] = len(k.explicit_args)
    d["hidden_arg_count"] = len(k.hidden_args)
    d["code_size"] = k.code_size
    d["function_address"] = k.function_address
    d["descriptor"] = _descriptor(k.descriptor) if k.descriptor else None
    d["occupancy"] = _occupancy(occ) if occ else None
    d["findings"] = [_finding(f) for f in _kernel_findings(k, occ)]
    return d


def code_object_to_json(item: Inspected) -> dict[str, Any]:
    if isinstance(item.code_object, CubinObject):  # NVIDIA cubin (issue 8): cubin.py shapes it
        return {**item.code_object.to_json(), "source": item.loaded.provenance, "path": item.loaded.path,
                "container": item.loaded.container, "kernels": [k.to_json() for k in item.kernels],
                "submission": item.submission.to_json() if item.submission else None}
    co, ld, h = item.code_object, item.loaded, item.code_object.header
    meta: dict[str, Any] = {"version": list(co.metadata.version), "target": co.metadata.target,
                            "printf": list(co.metadata.printf)}
    _unknown(meta, co.metadata.unknown)
    return {
        "source": ld.provenance, "path": ld.path, "container": ld.container, "bundle_entry": ld.bundle_entry,
        "python_line": ld.python_line, "encoding": ld.encoding,
        "size": co.size, "sha256": co.sha256,
        "target": h.target_id, "processor": h.processor, "xnack": h.xnack, "sramecc": h.sramecc,
        "code_object_version": h.code_object_version, "abi_version": h.abi_version, "e_flags": h.e_flags,
        "elf_type": h.elf_type, "generic_version": h.generic_version,
        "occupancy_target": item.target.name if item.target else None,
        "metadata": meta,
        "kernels": [kernel_to_json(k, item.occupancy.get(k.name), item.demangled.get(k.name)) for k in item.kernels],
        "findings": [_finding(f) for f in co.findings if f.kernel is None],
        "submission": item.submission.to_json() if item.submission else None,
    }


def to_json(items: Sequence[Inspected]) -> dict[str, Any]:
    return {"format_version": JSON_FORMAT_VERSION, "code_objects": [code_object_to_json(i) for i in items]}


# --------------------------------------------------------------------------- text


def _wrap(text: str, indent: str = "  ", sub: str | None = None) -> list[str]:
    sub = indent + "    " if sub is None else sub
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=sub,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _arg_rows(k: Kernel) -> list[str]:
    rows = ["    #  offset  size  kind                       name / type"]
    for a in k.args:
        kind = a.value_kind + (f" ({a.address_space})" if a.address_space and not a.hidden else "")
        label = " ".join(x for x in (a.name, f"[{a.type_name}]" if a.type_name else None) if x)
        if a.hidden:
            label = "(hidden)"
        if a.access or a.actual_access:
            label += f" {a.actual_access or a.access}"
        rows.append(_cut(f"  {a.index:>3} {a.offset:>7} {a.size:>5}  {_cut(kind, 26):<26} {label}".rstrip(), WIDTH))
    return rows


def _kernel_text(item: Inspected, k: Kernel) -> list[str]:
    dem = item.demangled.get(k.name, k.name)
    lines = _wrap(f"kernel {dem}", "", "    ")
    if dem != k.name:
        lines += _wrap(f"raw name {k.name}")
    lines += _wrap(f"symbol {k.symbol}   language {k.language or '-'}   "
                   f"code {k.code_size if k.code_size is not None else '?'} bytes"
                   + ("   uniform_work_group_size" if k.uniform_work_group_size else ""))
    if k.args:
        lines += _arg_rows(k)
    else:
        lines.append("  no arguments")
    hidden = k.kernarg_segment_size - k.explicit_args_size
    lines += _wrap(f"kernarg {k.explicit_args_size} bytes explicit ({len(k.explicit_args)} args), "
                   f"{k.kernarg_segment_size} total ({hidden} hidden/padding), align {k.kernarg_segment_align}")
    lines += _wrap(
        f"LDS {k.group_segment_fixed_size} B   scratch {k.private_segment_fixed_size} B   VGPR {k.vgpr_count}   "
        f"AGPR {k.agpr_count}   SGPR {k.sgpr_count}   spills {k.vgpr_spill_count} VGPR {k.sgpr_spill_count} SGPR   "
        f"wave{k.wavefront_size}   max block {k.max_flat_workgroup_size}"
    )
    kd = k.descriptor
    if kd is not None:
        lines += _wrap(
            f"descriptor: vgpr_alloc {kd.vgpr_alloc}  sgpr_alloc {kd.sgpr_alloc}  "
            f"accum_offset {kd.accum_offset if kd.accum_offset is not None else '-'}  "
            f"user SGPRs {kd.user_sgpr_count} ({', '.join(kd.user_sgprs) or 'none'})  "
            f"wave{32 if kd.wave32 else 64}  kernarg_preload {kd.kernarg_preload_length}  "
            f"entry {kd.kernel_code_entry_byte_offset:+#x}  rsrc1 {kd.compute_pgm_rsrc1:#010x} "
            f"rsrc2 {kd.compute_pgm_rsrc2:#010x} rsrc3 {kd.compute_pgm_rsrc3:#010x}"
        )
    occ = item.occupancy.get(k.name)
    if occ is not None:
        if occ.launchable:
            per = ", ".join(f"{lim.resource} {lim.waves_per_simd}" for lim in occ.limits if lim.resource != "hardware")
            lines += _wrap(f"occupancy on {occ.target}, block {occ.block_size}: {occ.waves_per_simd} waves/SIMD, "
                           f"{occ.workgroups_per_cu} workgroups/CU, limited by {', '.join(occ.limited_by)} ({per})")
        else:
            lines += _wrap(f"occupancy on {occ.target}, block {occ.block_size}: cannot launch")
    elif item.target is None:
        lines += _wrap(f"occupancy: no target facts for {item.code_object.processor} (try --arch gfx950)")
    for f in _kernel_findings(k, occ):
        lines += _wrap(f"{f.severity}: {f.message}")
    return lines


def render_text(items: Sequence[Inspected]) -> str:
    out: list[str] = []
    for n, item in enumerate(items):
        co, ld, h = item.code_object, item.loaded, item.code_object.header
        if n:
            out.append("")
        if isinstance(co, CubinObject):  # NVIDIA cubin (issue 8): cubin.py renders it
            out.append(_cubin_text(co, item.kernels, ld.provenance))
            if item.submission:
                out += _wrap(item.submission.text(), "  ", "      ")
            continue
        out += _wrap(f"{ld.provenance}", "", "    ")
        if item.submission:
            out += _wrap(item.submission.text(), "  ", "      ")
        out += _wrap(f"{h.target_id}   code object v{h.code_object_version}   {h.elf_type}   "
                     f"metadata {'.'.join(map(str, co.metadata.version))}   {co.size} bytes   "
                     f"{len(co.kernels)} kernel{'s' if len(co.kernels) != 1 else ''}   sha256 {co.sha256[:12]}")
        for f in co.findings:
            if f.kernel is None:
                out += _wrap(f"{f.severity}: {f.message}")
        for k in item.kernels:
            out.append("")
            out += _kernel_text(item, k)
    return "\n".join(out)

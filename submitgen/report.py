"""What ``submitgen inspect`` shows: the code object model as text (fits 100 columns) or as a
JSON-ready dict whose keys are the metadata's own names without the leading dot, plus derived
fields with clear names. docs/inspect-json.md documents every key."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import targets, textfmt
from .containers import LoadedCodeObject, load_code_objects
from .demangle import demangle_many
from .errors import CodeObjectError
from .kernelinfo import Finding, KernelInfo, ObjectInfo

WIDTH = textfmt.WIDTH
JSON_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Inspected:
    """One code object as inspect shows it."""

    loaded: LoadedCodeObject
    code_object: ObjectInfo
    kernels: tuple[KernelInfo, ...]  # after --kernel filtering
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


def _pick(co: ObjectInfo, kernels: Sequence[str], found: set[str]) -> list[KernelInfo]:
    if not kernels:
        return list(co.kernels)
    picked: list[KernelInfo] = []
    for want in kernels:
        try:
            k = co.kernel(want)  # type: ignore[attr-defined]
        except CodeObjectError:
            continue
        found.add(want)
        if k not in picked:
            picked.append(k)
    return picked


def inspect_sources(
    paths: Iterable[str | os.PathLike[str] | bytes],
    *,
    arch: str | None = None,
    kernels: Sequence[str] = (),
    block: int | None = None,
) -> list[Inspected]:
    """Load and read every code object in ``paths``; keep the kernels named in ``kernels`` (all if
    empty); estimate occupancy for ``block`` threads (default: each kernel's max workgroup size).
    Names are demangled in one call for the whole run."""
    read: list[tuple[str | os.PathLike[str] | bytes, LoadedCodeObject, ObjectInfo]] = []
    for p in paths:
        read += [(p, loaded, loaded.read()) for loaded in load_code_objects(p, arch=arch)]
    found: set[str] = set()
    picks = [_pick(co, kernels, found) for _, _, co in read]
    missing = [k for k in kernels if k not in found]
    if missing:
        all_names = [k.name for _, _, co in read for k in co.kernels]
        raise CodeObjectError(
            f"no kernel named {missing[0]!r}; available: {', '.join(repr(n) for n in all_names) or 'none'}"
        )
    every = tuple(k.name for picked in picks for k in picked)
    dem = dict(zip(every, demangle_many(every)))
    out: list[Inspected] = []
    for (p, loaded, co), picked in zip(read, picks):
        tgt = targets.TARGETS.get(arch.split(":", 1)[0].lower()) if arch else co.target()
        occ = {k.name: targets.occupancy(k, tgt, block) for k in picked} if tgt is not None else {}
        sub = _submission_info(p, co.sha256) if loaded.container == "python" else None
        out.append(Inspected(loaded, co, tuple(picked), tgt, occ, {k.name: dem[k.name] for k in picked}, sub))
    return out


# --------------------------------------------------------------------------- JSON


def _occupancy(o: targets.Occupancy) -> dict[str, Any]:
    return {
        "target": o.target, "block_size": o.block_size, "waves_per_workgroup": o.waves_per_workgroup,
        "waves_per_simd": o.waves_per_simd, "waves_per_cu": o.waves_per_cu,
        "workgroups_per_cu": o.workgroups_per_cu, "limited_by": list(o.limited_by),
        "limits": {lim.resource: {"waves_per_simd": lim.waves_per_simd, "detail": lim.detail} for lim in o.limits},
        "launchable": o.launchable, "problems": list(o.problems),
    }


def _kernel_findings(k: KernelInfo, occ: targets.Occupancy | None) -> list[Finding]:
    fs = list(k.findings)
    if occ is not None and not occ.launchable:
        have = {f.message for f in fs}
        for p in occ.problems:
            if p not in have:
                fs.append(Finding("error", "not-launchable", f"on {occ.target} with a block of {occ.block_size}: {p}",
                                  k.name))
    return fs


def kernel_to_json(k: KernelInfo, occ: targets.Occupancy | None = None, demangled: str | None = None) -> dict[str, Any]:
    d = k.to_json(demangled if demangled is not None else k.demangled_name)
    d["occupancy"] = _occupancy(occ) if occ else None
    d["findings"] = [f.to_json() for f in _kernel_findings(k, occ)]
    return d


def code_object_to_json(item: Inspected) -> dict[str, Any]:
    co, ld = item.code_object, item.loaded
    return {
        "source": ld.provenance, "path": ld.path, "container": ld.container, "bundle_entry": ld.bundle_entry,
        "python_line": ld.python_line, "encoding": ld.encoding,
        **co.header_json(),
        "occupancy_target": item.target.name if item.target else None,
        "kernels": [kernel_to_json(k, item.occupancy.get(k.name), item.demangled.get(k.name)) for k in item.kernels],
        "findings": [f.to_json() for f in co.findings if f.kernel is None],
        "submission": item.submission.to_json() if item.submission else None,
    }


def to_json(items: Sequence[Inspected]) -> dict[str, Any]:
    return {"format_version": JSON_FORMAT_VERSION, "code_objects": [code_object_to_json(i) for i in items]}


# --------------------------------------------------------------------------- text


def _occupancy_lines(item: Inspected, k: KernelInfo, occ: targets.Occupancy | None) -> list[str]:
    if occ is None:
        note = item.code_object.occupancy_note() if item.target is None else None
        return textfmt.wrap(note) if note else []
    head = f"occupancy on {occ.target}, block {occ.block_size}: "
    if not occ.launchable:
        return textfmt.wrap(head + "cannot launch")
    per = ", ".join(f"{lim.resource} {lim.waves_per_simd}" for lim in occ.limits if lim.resource != "hardware")
    return textfmt.wrap(head + f"{occ.waves_per_simd} waves/SIMD, {occ.workgroups_per_cu} workgroups/CU, "
                               f"limited by {', '.join(occ.limited_by)} ({per})")


def _kernel_text(item: Inspected, k: KernelInfo) -> list[str]:
    dem = item.demangled.get(k.name, k.name)
    lines = textfmt.wrap(f"kernel {dem}", "", "    ")
    if dem != k.name:
        lines += textfmt.wrap(f"raw name {k.name}")
    lines += k.text_lines()
    occ = item.occupancy.get(k.name)
    lines += _occupancy_lines(item, k, occ)
    for f in _kernel_findings(k, occ):
        lines += textfmt.wrap(f"{f.severity}: {f.message}")
    return lines


def render_text(items: Sequence[Inspected]) -> str:
    out: list[str] = []
    for n, item in enumerate(items):
        co, ld = item.code_object, item.loaded
        if n:
            out.append("")
        out += textfmt.wrap(f"{ld.provenance}", "", "    ")
        if item.submission:
            out += textfmt.wrap(item.submission.text(), "  ", "      ")
        out += co.header_lines()
        for f in co.findings:
            if f.kernel is None:
                out += textfmt.wrap(f"{f.severity}: {f.message}")
        for k in item.kernels:
            out.append("")
            out += _kernel_text(item, k)
    return "\n".join(out)

"""What inspect learns from around a code object: a ``.py`` submission's own directives and
provenance line, and the dynamic LDS a kernel is launched with (``--lds``, the provenance's
``lds`` field, or a Triton ``.json`` sidecar's ``shared``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from submitgen.errors import ContainerError
from submitgen.inspection.launchtable import Launch, read_launch_table
from submitgen.lint import read_header
from submitgen.readers.containers import read_input
from submitgen.readers.pycoding import decode_python
from submitgen.render import provenance
from submitgen.render.provenance import field_items, parse_lds

MAX_SIDECAR_BYTES = 1 << 20


@dataclass(frozen=True)
class DynamicLds:
    bytes: int
    source: str  # "--lds", "provenance", "sidecar k.json"


@dataclass(frozen=True)
class SubmissionInfo:
    """What a .py submission says of itself: its directives and submitgen's provenance line."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    provenance: Mapping[str, str] | None  # None: not built by submitgen (or the line was removed)
    matches_provenance: bool | None  # the embedded object's sha256 is one the provenance records
    object_index: int | None = None  # its position in the provenance's "co" (None: not recorded)
    launches: tuple[Launch, ...] = ()  # the launch names its kernels serve (the file's _SG_KERNEL_IMAGE)

    def launch_names(self, symbol: str) -> tuple[str, ...]:
        """The names the plan launches kernel ``symbol`` of this object by (() if not recorded)."""
        return tuple(la.name for la in self.launches if la.symbol == symbol)

    def arg_names(self, symbol: str) -> tuple[str, ...]:
        """A Triton specialization's argument names for kernel ``symbol`` (() if not recorded)."""
        return next((la.arg_names for la in self.launches if la.symbol == symbol), ())

    def to_json(self) -> dict[str, Any]:
        return {"leaderboard": self.leaderboard, "gpus": list(self.gpus),
                "provenance": dict(self.provenance) if self.provenance is not None else None,
                "matches_provenance": self.matches_provenance}

    def text(self) -> str:
        gpus = ", ".join(self.gpus) or "no gpu directive"
        where = f"{self.leaderboard or 'no leaderboard directive'} on {gpus}"
        if self.provenance is None:
            return f"submission for {where}; no submitgen provenance line"
        p = self.provenance
        built = (f"built by submitgen {p.get('version', '?')} for {p.get('arch', '?')} (launcher "
                 f"{p.get('launcher', '?')}, {p.get('compress', '?')}), sources sha256 "
                 f"{p.get('sources', '?')[:12]}")
        verdict = ("this code object is the one it records" if self.matches_provenance else
                   "WARNING: this code object's sha256 is not the one it records (edited after the build?)")
        return f"submission for {where}; {built}; {verdict}"

    def dynamic_lds(self) -> dict[str, DynamicLds]:
        """The provenance's ``lds`` field for this code object: dynamic LDS per kernel name."""
        items = field_items(self.provenance or {}, "lds")
        return {name: DynamicLds(n, "provenance") for name, n in parse_lds(items, self.object_index).items()}


def submission_info(path: str | os.PathLike[str] | bytes, sha256: str) -> SubmissionInfo | None:
    if isinstance(path, (bytes, bytearray, memoryview)):
        return None

    try:
        text = decode_python(read_input(path), str(path)).text
    except ContainerError:
        return None
    header = read_header(text)
    prov = provenance.read(text)
    if prov is None:
        return SubmissionInfo(header.leaderboard, tuple(header.gpus), None, None)
    recorded = prov.code_objects
    index = recorded.index(sha256) if sha256 in recorded else None
    table = read_launch_table(text) if index is not None else None
    launches = table.objects.get(index, ()) if table is not None and index is not None else ()
    return SubmissionInfo(header.leaderboard, tuple(header.gpus), prov.fields, sha256 in recorded, index,
                          launches)


def sidecar_lds(path: str | os.PathLike[str] | bytes) -> DynamicLds | None:
    """``shared`` of the Triton ``.json`` beside a bare ``.hsaco``/``.co`` (None without one)."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return None
    side = Path(path).with_suffix(".json")
    if not side.is_file():
        return None
    try:
        doc = json.loads(read_input(side, MAX_SIDECAR_BYTES))
    except (ContainerError, ValueError, RecursionError):
        return None
    shared = doc.get("shared") if isinstance(doc, dict) else None
    if isinstance(shared, int) and not isinstance(shared, bool) and shared >= 0:
        return DynamicLds(shared, f"sidecar {side.name}")
    return None

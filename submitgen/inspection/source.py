"""What inspect and diff read around a code object, statically (``ast``; the file never runs):
a ``.py`` submission's directives, provenance line and launch table (``_SG_KERNEL_IMAGE`` and
``_SG_DEFAULTS``: docs/diff-json.md), and a kernel's dynamic LDS (docs/inspect-json.md)."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from submitgen.errors import ContainerError
from submitgen.lint import read_header
from submitgen.readers.base import KernelInfo
from submitgen.readers.containers import read_input
from submitgen.readers.pycoding import decode_python
from submitgen.render import provenance
from submitgen.render.provenance import field_items, parse_lds

MAX_SIDECAR_BYTES = 1 << 20
# What the two pointers submitgen appends to every Triton launch are called where a user reads them.
TRITON_SCRATCH_NAMES = ("(global scratch)", "(profile scratch)")
K = TypeVar("K", bound=KernelInfo)


@dataclass(frozen=True)
class Launch:
    """One name the plan launches: the kernel (its ``.name``) that serves it in its object."""

    name: str
    symbol: str
    arg_names: tuple[str, ...] = ()  # a Triton specialization's explicit arguments; () if not known
    block: int | None = None  # the block its compiler chose (``_SG_DEFAULTS``' threads)


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


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _defaults(node: ast.AST | None) -> dict[str, tuple[tuple[str, ...], int | None]]:
    """launch name -> (argument names, block threads) from ``_SG_DEFAULTS = {name:
    SgLaunchDefaults(compiler, threads, shared, scratch, names), ...}`` (its fields given by
    position or by keyword)."""
    out: dict[str, tuple[tuple[str, ...], int | None]] = {}
    for key, value in zip(node.keys, node.values) if isinstance(node, ast.Dict) else ():
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Call)):
            continue
        fields = dict(zip(("compiler", "threads", "shared", "scratch", "names"), map(_literal, value.args)))
        fields.update({k.arg: _literal(k.value) for k in value.keywords if k.arg is not None})
        names, scratch, threads = fields.get("names"), fields.get("scratch", ()), fields.get("threads")
        shown: tuple[str, ...] = ()
        if (isinstance(names, tuple) and names and all(isinstance(n, str) for n in names)
                and isinstance(scratch, tuple)):
            shown = tuple(names) + TRITON_SCRATCH_NAMES[:len(scratch)]
        block = threads if isinstance(threads, int) and not isinstance(threads, bool) else None
        out[key.value] = (shown, block)
    return out


def read_launch_table(text: str) -> dict[int, tuple[Launch, ...]] | None:
    """Launch names per embedded object (its position in the provenance's ``co``); None when the
    text has no ``_SG_KERNEL_IMAGE`` literal mapping launch names to ``(object index, symbol)``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    assigned = {s.targets[0].id: s.value for s in tree.body if isinstance(s, ast.Assign)
                and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}  # the last of each
    image = _literal(assigned["_SG_KERNEL_IMAGE"]) if "_SG_KERNEL_IMAGE" in assigned else None
    if not isinstance(image, dict) or not image:
        return None
    defaults = _defaults(assigned.get("_SG_DEFAULTS"))
    objects: dict[int, list[Launch]] = {}
    for name, where in image.items():
        if not (isinstance(name, str) and isinstance(where, tuple) and len(where) == 2
                and isinstance(where[0], int) and isinstance(where[1], str)):
            return None
        objects.setdefault(where[0], []).append(Launch(name, where[1], *defaults.get(name, ((), None))))
    return {i: tuple(v) for i, v in objects.items()}


def submission_infos(path: str | os.PathLike[str] | bytes,
                     shas: Sequence[str]) -> list[SubmissionInfo | None]:
    """What the ``.py`` submission ``path`` says of each of its objects (by sha256, in load order;
    identical objects take the positions the provenance records for them in turn)."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return [None] * len(shas)
    try:
        text = decode_python(read_input(path), str(path)).text
    except ContainerError:
        return [None] * len(shas)
    header = read_header(text)
    prov = provenance.read(text)
    if prov is None:
        return [SubmissionInfo(header.leaderboard, tuple(header.gpus), None, None)] * len(shas)
    table = read_launch_table(text) or {}
    out: list[SubmissionInfo | None] = []
    taken: list[int] = []
    for sha in shas:
        spots = [i for i, r in enumerate(prov.code_objects) if r == sha]
        index = next((i for i in spots if i not in taken), spots[0] if spots else None)
        taken += [index] if index is not None else []
        out.append(SubmissionInfo(header.leaderboard, tuple(header.gpus), prov.fields, bool(spots), index,
                                  table.get(index, ()) if index is not None else ()))
    return out


def with_arg_names(kernel: K, names: Sequence[str]) -> K:
    """``kernel`` with its explicit arguments named ``names`` (a Triton signature's, which the
    metadata leaves unnamed), when there is one name per argument; else ``kernel`` itself."""
    if not names or len(names) != len(kernel.explicit_args) or not dataclasses.is_dataclass(kernel):
        return kernel
    it = iter(names)
    model: Any = kernel  # a reader's frozen dataclass, which replace() copies
    return dataclasses.replace(model, args=tuple(a if a.hidden else dataclasses.replace(a, name=next(it))
                                                 for a in model.args))  # type: ignore[no-any-return]


def sidecar_lds(path: str | os.PathLike[str] | bytes) -> DynamicLds | None:
    """``shared`` of the Triton ``.json`` beside a bare ``.hsaco``/``.co`` (None without one)."""
    side = None if isinstance(path, (bytes, bytearray, memoryview)) else Path(path).with_suffix(".json")
    if side is None or not side.is_file():
        return None
    try:
        doc = json.loads(read_input(side, MAX_SIDECAR_BYTES))
    except (ContainerError, ValueError, RecursionError):
        return None
    shared = doc.get("shared") if isinstance(doc, dict) else None
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        return None
    return DynamicLds(shared, f"sidecar {side.name}")

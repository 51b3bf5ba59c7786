"""The ``NT_AMDGPU_METADATA`` note: msgpack -> frozen ``Metadata``, ``KernelMeta`` and ``ArgMeta``.

Keys and their types: LLVM AMDGPUUsage, "Code Object V3 to V6 Metadata" (docs/readers.md). A
key of the wrong type, or a required key that is missing, is a ``CodeObjectError`` naming the
kernel, the key, the expected and the actual value; keys submitgen does not model are kept in
``unknown`` (frozen)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import msgpack  # type: ignore[import-untyped]

from submitgen.errors import CodeObjectError

NT_AMDGPU_METADATA = 32
# Bounds from what real inputs need: over the 2,613 objects of the amd-aiter wheel the largest note
# is 11,232 bytes and the most arguments a kernel has is 158 (docs/readers.md, "Bounds").
MAX_NOTE_SIZE = 1024 * 1024
MAX_ARGS = 1024


def _no_unknown() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ArgMeta:
    """One entry of a kernel's ``.args`` (metadata names without the dot)."""

    index: int
    offset: int
    size: int
    value_kind: str
    name: str | None = None
    type_name: str | None = None
    address_space: str | None = None
    access: str | None = None
    actual_access: str | None = None
    pointee_align: int | None = None
    is_const: bool | None = None
    is_restrict: bool | None = None
    is_volatile: bool | None = None
    is_pipe: bool | None = None
    value_type: str | None = None
    unknown: Mapping[str, Any] = field(default_factory=_no_unknown, hash=False)

    @property
    def hidden(self) -> bool:
        return self.value_kind.startswith("hidden_")

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class KernelMeta:
    """One entry of ``amdhsa.kernels``, typed."""

    name: str  # metadata .name: what hipModuleGetFunction takes
    symbol: str  # metadata .symbol: NAME.kd
    args: tuple[ArgMeta, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    agpr_count: int | None  # None: the metadata does not say (optional key)
    max_flat_workgroup_size: int
    sgpr_spill_count: int | None = None  # None: absent, not zero
    vgpr_spill_count: int | None = None
    uniform_work_group_size: bool | None = None
    uses_dynamic_stack: bool | None = None
    workgroup_processor_mode: bool | None = None
    language: str | None = None
    language_version: tuple[int, ...] | None = None
    kind: str | None = None
    reqd_workgroup_size: tuple[int, ...] | None = None
    workgroup_size_hint: tuple[int, ...] | None = None
    vec_type_hint: str | None = None
    device_enqueue_symbol: str | None = None
    max_num_workgroups: tuple[int, int, int] | None = None
    cluster_dims: tuple[int, ...] | None = None
    unknown: Mapping[str, Any] = field(default_factory=_no_unknown, hash=False)

    @cached_property
    def explicit_args(self) -> tuple[ArgMeta, ...]:
        return tuple(a for a in self.args if not a.hidden)

    @cached_property
    def hidden_args(self) -> tuple[ArgMeta, ...]:
        return tuple(a for a in self.args if a.hidden)

    @cached_property
    def explicit_args_size(self) -> int:
        """Bytes up to the end of the last explicit argument (what ``extra``/kernelParams carry)."""
        return max((a.end for a in self.explicit_args), default=0)


@dataclass(frozen=True)
class Metadata:
    version: tuple[int, ...]  # amdhsa.version
    target: str | None  # amdhsa.target
    printf: tuple[str, ...] = ()
    unknown: Mapping[str, Any] = field(default_factory=_no_unknown, hash=False)


class _Map:
    """Typed reads from one msgpack map, naming the place on error; remembers keys used."""

    def __init__(self, m: Any, where: str, label: str):
        if not isinstance(m, dict):
            raise CodeObjectError(f"{label}: metadata {where}: expected a map, got {type(m).__name__}")
        self.m, self.where, self.label = m, where, label
        self.used: set[str] = set()

    def _get(self, key: str, required: bool) -> Any:
        self.used.add(key)
        if key not in self.m:
            if required:
                raise CodeObjectError(
                    f"{self.label}: metadata {self.where}: required key '{key}' is missing"
                )
            return None
        return self.m[key]

    def _bad(self, key: str, expected: str, v: Any) -> CodeObjectError:
        shown = repr(v)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return CodeObjectError(
            f"{self.label}: metadata {self.where} '{key}': expected {expected}, got {type(v).__name__} "
            f"{shown}"
        )

    def _typed(self, key: str, required: bool, kind: type, expected: str) -> Any:
        v = self._get(key, required)
        if v is not None and (not isinstance(v, kind) or (kind is int and isinstance(v, bool))):
            raise self._bad(key, expected, v)
        return v

    def int(self, key: str, required: bool = False, default: int | None = None) -> int | None:
        v = self._typed(key, required, int, "an integer")
        if v is None:
            return default
        if v < 0:
            raise self._bad(key, "a non-negative integer", v)
        return builtins.int(v)

    def str(self, key: str, required: bool = False) -> builtins.str | None:
        v = self._typed(key, required, builtins.str, "a string")
        return None if v is None else builtins.str(v)

    def list(self, key: builtins.str, required: bool = False) -> builtins.list[Any] | None:
        v = self._typed(key, required, builtins.list, "a list")
        return None if v is None else builtins.list(v)

    def bool(self, key: builtins.str) -> builtins.bool | None:
        v = self._get(key, False)
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise self._bad(key, "a boolean", v)

    def ints(self, key: builtins.str, length: builtins.int | None = None) -> tuple[builtins.int, ...] | None:
        v = self._get(key, False)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v) \
                or (length is not None and len(v) != length):
            raise self._bad(key, f"a list of {length or 'some'} integers", v)
        return tuple(v)

    def unknown(self) -> Mapping[builtins.str, Any]:
        return MappingProxyType({k: _freeze(v) for k, v in self.m.items() if k not in self.used})


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return MappingProxyType({k: _freeze(x) for k, x in v.items()})
    return v


def decode_metadata_note(desc: bytes, label: str = "<bytes>") -> Any:
    if len(desc) > MAX_NOTE_SIZE:
        raise CodeObjectError(f"{label}: NT_AMDGPU_METADATA note is {len(desc)} bytes, more than the "
                              f"{MAX_NOTE_SIZE}-byte bound")
    try:
        return msgpack.unpackb(desc, raw=False, strict_map_key=True)
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError,
            UnicodeDecodeError) as e:
        detail = f"{type(e).__name__}: {str(e)[:80]}" if str(e) else type(e).__name__
        raise CodeObjectError(
            f"{label}: NT_AMDGPU_METADATA note: expected a msgpack map, got undecodable bytes ({detail})"
        ) from None


def _each(get: Callable[..., Any], *names: str, **kw: Any) -> dict[str, Any]:
    """``{name: get("." + name, **kw)}`` for each of ``names``, read in order."""
    return {n: get(f".{n}", **kw) for n in names}


def _parse_arg(raw: Any, index: int, kname: str, label: str) -> ArgMeta:
    m = _Map(raw, f"kernel {kname!r} arg {index}", label)
    return ArgMeta(
        index=index,
        **_each(m.int, "offset", "size", required=True),
        **_each(m.str, "value_kind", required=True),
        **_each(m.str, "name", "type_name", "address_space", "access", "actual_access"),
        pointee_align=m.int(".pointee_align"),
        **_each(m.bool, "is_const", "is_restrict", "is_volatile", "is_pipe"),
        value_type=m.str(".value_type"),
        unknown=m.unknown(),
    )


def _parse_kernel_meta(raw: Any, index: int, label: str) -> KernelMeta:
    m = _Map(raw, f"kernel {index}", label)
    name = m.str(".name", True) or ""  # required: a missing name raised
    m.where = f"kernel {name!r}"
    args_raw = m.list(".args") or []
    if len(args_raw) > MAX_ARGS:
        raise CodeObjectError(f"{label}: metadata kernel {name!r} '.args': {len(args_raw)} arguments, "
                              f"more than the bound of {MAX_ARGS}")
    mnw = [m.int(f".max_num_workgroups_{d}") for d in "xyz"]
    return KernelMeta(
        name=name,
        **_each(m.str, "symbol", required=True),
        args=tuple(_parse_arg(a, i, name, label) for i, a in enumerate(args_raw)),
        **_each(m.int, "kernarg_segment_size", "kernarg_segment_align", "group_segment_fixed_size",
                "private_segment_fixed_size", "wavefront_size", "sgpr_count", "vgpr_count", required=True),
        agpr_count=m.int(".agpr_count"),
        **_each(m.int, "max_flat_workgroup_size", required=True),
        **_each(m.int, "sgpr_spill_count", "vgpr_spill_count"),
        **_each(m.bool, "uniform_work_group_size", "uses_dynamic_stack", "workgroup_processor_mode"),
        language=m.str(".language"),
        language_version=m.ints(".language_version"),
        kind=m.str(".kind"),
        reqd_workgroup_size=m.ints(".reqd_workgroup_size", 3),
        workgroup_size_hint=m.ints(".workgroup_size_hint", 3),
        vec_type_hint=m.str(".vec_type_hint"),
        device_enqueue_symbol=m.str(".device_enqueue_symbol"),
        max_num_workgroups=(mnw[0] or 0, mnw[1] or 0, mnw[2] or 0) if mnw != [None, None, None] else None,
        cluster_dims=m.ints(".cluster_dims", 3),
        unknown=m.unknown(),
    )


def parse_metadata(doc: Any, label: str = "<bytes>") -> tuple[Metadata, tuple[KernelMeta, ...]]:
    """``doc``: the decoded note."""
    m = _Map(doc, "root", label)
    version = m.ints("amdhsa.version", None)
    if version is None:
        raise CodeObjectError(f"{label}: metadata: required key 'amdhsa.version' is missing")
    if len(version) != 2:
        raise CodeObjectError(
            f"{label}: metadata 'amdhsa.version': expected [major, minor], got {list(version)}"
        )
    target = m.str("amdhsa.target")
    printf = m.list("amdhsa.printf") or []
    if not all(isinstance(p, str) for p in printf):
        raise CodeObjectError(f"{label}: metadata 'amdhsa.printf': expected a list of strings")
    kernels_raw = m.list("amdhsa.kernels") or []
    kernels = tuple(_parse_kernel_meta(k, i, label) for i, k in enumerate(kernels_raw))
    return Metadata(version=version, target=target, printf=tuple(printf), unknown=m.unknown()), kernels

"""The ``.nv.info`` sections of an NVIDIA cubin: records, and the attributes the cubin reader uses.
Their layout (not documented by NVIDIA; read off nvcc 13.0 cubins): docs/readers.md, "CUDA cubins"."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from submitgen.errors import CodeObjectError

SHT_CUDA_INFO = 0x70000000
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_MAX_THREADS = 0x05
EIATTR_PARAM_CBANK = 0x0A
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_REGCOUNT = 0x2F
EIATTR_CTA_PER_CLUSTER = 0x3D
EIATTR_NUM_BARRIERS = 0x4C
EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET = 0x09  # .nv.compat: nonzero for an sm_XXa ("a") cubin
KPARAM_SIZE_SHIFT = 18


@dataclass(frozen=True)
class NvInfoAttr:
    fmt: int
    attr: int
    value: int | bytes  # u16 for NVAL/BVAL/HVAL, payload bytes for SVAL


@dataclass(frozen=True)
class RawParam:
    ordinal: int
    offset: int
    flags: int

    @property
    def size(self) -> int:
        return self.flags >> KPARAM_SIZE_SHIFT


@dataclass(frozen=True)
class KernelAttrs:
    """What one ``.nv.info.NAME`` section says (None where it says nothing)."""

    params: tuple[RawParam, ...]  # in file order, duplicates included
    param_size: int | None
    cbank: tuple[int, int] | None  # (offset, size)
    max_threads: tuple[int, int, int] | None
    reqntid: tuple[int, int, int] | None
    cluster: tuple[int, int, int] | None
    maxreg: int | None
    barriers: int
    attributes: tuple[int, ...]


def parse_nv_info(raw: bytes, where: str, label: str = "<bytes>") -> tuple[NvInfoAttr, ...]:
    """The records of one ``.nv.info*`` section, bounds-checked."""
    out: list[NvInfoAttr] = []
    pos, n = 0, len(raw)
    while pos < n:
        if pos + 4 > n:
            raise CodeObjectError(f"{label}: {where} at byte {pos}: expected a 4-byte record header, "
                                  f"{n - pos} bytes left")
        fmt, attr, half = raw[pos], raw[pos + 1], struct.unpack_from("<H", raw, pos + 2)[0]
        if fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            out.append(NvInfoAttr(fmt, attr, half))
            pos += 4
        elif fmt == EIFMT_SVAL:
            if pos + 4 + half > n:
                raise CodeObjectError(
                    f"{label}: {where} attribute 0x{attr:02x} at byte {pos}: payload of {half} "
                    f"bytes runs past the section end ({n} bytes)"
                )
            out.append(NvInfoAttr(fmt, attr, raw[pos + 4:pos + 4 + half]))
            pos += 4 + half
        else:
            raise CodeObjectError(f"{label}: {where} at byte {pos}: record format: expected 1..4, got {fmt}")
    return tuple(out)


def payload(a: NvInfoAttr, size: int, where: str, label: str) -> bytes:
    if not isinstance(a.value, bytes) or len(a.value) < size:
        got = f"{len(a.value)} bytes" if isinstance(a.value, bytes) else f"format {a.fmt}"
        raise CodeObjectError(
            f"{label}: {where} attribute 0x{a.attr:02x}: expected a payload of {size} bytes, got {got}"
        )
    return a.value


def _half(a: NvInfoAttr, where: str, label: str) -> int:
    if isinstance(a.value, bytes):
        raise CodeObjectError(
            f"{label}: {where} attribute 0x{a.attr:02x}: expected a 16-bit value, got a payload"
        )
    return a.value


def _dims(a: NvInfoAttr, where: str, label: str) -> tuple[int, int, int]:
    x, y, z = struct.unpack_from("<III", payload(a, 12, where, label))
    return int(x), int(y), int(z)


_DIMS = {EIATTR_MAX_THREADS: "max_threads", EIATTR_REQNTID: "reqntid", EIATTR_CTA_PER_CLUSTER: "cluster"}
_HALVES = {
    EIATTR_CBANK_PARAM_SIZE: "param_size",
    EIATTR_MAXREG_COUNT: "maxreg",
    EIATTR_NUM_BARRIERS: "barriers",
}


def kernel_attrs(raw: bytes, where: str, label: str) -> KernelAttrs:
    """Decode the attributes of one ``.nv.info.NAME`` section."""
    attrs = parse_nv_info(raw, where, label)
    got: dict[str, object] = {"param_size": None, "cbank": None, "max_threads": None, "reqntid": None,
                              "cluster": None, "maxreg": None, "barriers": 0}
    params: list[RawParam] = []
    for a in attrs:
        if a.attr == EIATTR_KPARAM_INFO:
            _idx, ordinal, offset, flags = struct.unpack_from("<IHHI", payload(a, 12, where, label))
            params.append(RawParam(ordinal, offset, flags))
        elif a.attr == EIATTR_PARAM_CBANK:
            _sym, off, size = struct.unpack_from("<IHH", payload(a, 8, where, label))
            got["cbank"] = (off, size)
        elif a.attr in _DIMS:
            got[_DIMS[a.attr]] = _dims(a, where, label)
        elif a.attr in _HALVES:
            got[_HALVES[a.attr]] = _half(a, where, label)
    return KernelAttrs(params=tuple(params), attributes=tuple(a.attr for a in attrs), **got)  # type: ignore[arg-type]


def function_table(raw: bytes, label: str, sym_name: Callable[[int, str], str]) -> dict[int, dict[str, int]]:
    """Whole-object ``.nv.info``: attribute -> {function name: value} for REGCOUNT, FRAME_SIZE and
    MIN_STACK_SIZE (``sym_name(index, where)`` names a ``.symtab`` entry)."""
    out: dict[int, dict[str, int]] = {EIATTR_REGCOUNT: {}, EIATTR_FRAME_SIZE: {}, EIATTR_MIN_STACK_SIZE: {}}
    for a in parse_nv_info(raw, ".nv.info", label):
        if a.attr in out:
            sym, val = struct.unpack_from("<II", payload(a, 8, ".nv.info", label))
            out[a.attr][sym_name(sym, f".nv.info attribute 0x{a.attr:02x}")] = val
    return out


def accelerator_target(raw: bytes, label: str) -> bool:
    """Whether a ``.nv.compat`` section marks the cubin architecture-specific (``sm_90a``)."""
    return any(a.attr == EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET and a.value not in (0, b"")
               for a in parse_nv_info(raw, ".nv.compat", label))

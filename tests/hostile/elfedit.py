"""Edits of a linked code object for hostile-input tests: rewrite its metadata note (appended at
the end of the file, the note section pointed at it), or patch ELF header fields."""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from io import BytesIO
from typing import Any

import msgpack
from elftools.elf.elffile import ELFFile


def _note(desc: bytes) -> bytes:
    name = b"AMDGPU\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)  # noqa: E731
    return struct.pack("<III", len(name), len(desc), 32) + pad(name) + pad(desc)


def _metadata_note(data: bytes) -> tuple[ELFFile, int, bytes]:
    """The ELF, the index of its AMDGPU note section, and that note's descriptor (msgpack)."""
    elf = ELFFile(BytesIO(data))
    index, sec = next((i, s) for i, s in enumerate(elf.iter_sections()) if s["sh_type"] == "SHT_NOTE"
                      and b"AMDGPU" in s.data())
    raw = sec.data()
    namesz, descsz, _ = struct.unpack_from("<III", raw, 0)
    start = 12 + ((namesz + 3) & ~3)
    return elf, index, raw[start:start + descsz]


def with_metadata(data: bytes, edit: Callable[[dict[str, Any]], None], *, packer: Any = None) -> bytes:
    """``data`` with its NT_AMDGPU_METADATA map changed by ``edit`` (in place)."""
    doc = msgpack.unpackb(_metadata_note(data)[2], raw=False)
    edit(doc)
    return with_desc(data, (packer or msgpack.Packer()).pack(doc))


@functools.lru_cache(maxsize=64)
def _note_header(data: bytes) -> int:
    """Where the section header of ``data``'s metadata note section is."""
    elf, index, _ = _metadata_note(data)
    return elf["e_shoff"] + index * elf["e_shentsize"]


def with_desc(data: bytes, desc: bytes) -> bytes:
    """``data`` with the descriptor of its NT_AMDGPU_METADATA note replaced by ``desc`` (any bytes):
    the new note is appended and the note section pointed at it."""
    shdr = _note_header(data)
    out = bytearray(data)
    out += b"\0" * (-len(out) % 8)
    offset = len(out)
    note = _note(desc)
    out += note
    struct.pack_into("<QQ", out, shdr + 24, offset, len(note))  # sh_offset, sh_size
    return bytes(out)


def kernel_edit(name: str, **changes: Any) -> Callable[[dict[str, Any]], None]:
    """An ``edit`` setting metadata keys (``sgpr_count=200`` -> ``.sgpr_count``) of kernel ``name``."""
    def edit(doc: dict[str, Any]) -> None:
        k = next(k for k in doc["amdhsa.kernels"] if k[".name"] == name)
        for key, value in changes.items():
            k["." + key] = value
    return edit


def patch_header(data: bytes, fmt: str, offset: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


E_PHOFF, E_PHNUM = 32, 56

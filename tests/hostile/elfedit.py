"""Edits of a linked code object for hostile-input tests: rewrite its metadata note (appended at
the end of the file, the note section and the PT_NOTE segment pointed at it; or only one of them,
for two copies that disagree), or patch ELF header fields."""

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


def with_metadata(data: bytes, edit: Callable[[dict[str, Any]], None], *, packer: Any = None,
                  only: str | None = None) -> bytes:
    """``data`` with its NT_AMDGPU_METADATA map changed by ``edit`` (in place); ``only``
    ("section" or "segment") changes that copy alone."""
    doc = msgpack.unpackb(_metadata_note(data)[2], raw=False)
    edit(doc)
    return with_desc(data, (packer or msgpack.Packer()).pack(doc), only=only)


@functools.lru_cache(maxsize=64)
def _note_headers(data: bytes) -> tuple[int, int | None]:
    """Where the section header of ``data``'s metadata note section is, and the program header of
    its PT_NOTE segment (None without one)."""
    elf, index, _ = _metadata_note(data)
    phdr = next((elf["e_phoff"] + i * elf["e_phentsize"] for i, seg in enumerate(elf.iter_segments())
                 if seg["p_type"] == "PT_NOTE"), None)
    return elf["e_shoff"] + index * elf["e_shentsize"], phdr


def with_desc(data: bytes, desc: bytes, *, only: str | None = None) -> bytes:
    """``data`` with the descriptor of its NT_AMDGPU_METADATA note replaced by ``desc`` (any bytes):
    the new note is appended and the note section and the PT_NOTE segment (what the loader reads)
    pointed at it; ``only="section"`` or ``only="segment"`` points that one alone."""
    shdr, phdr = _note_headers(data)
    out = bytearray(data)
    out += b"\0" * (-len(out) % 8)
    offset = len(out)
    note = _note(desc)
    out += note
    if only in (None, "section"):
        struct.pack_into("<QQ", out, shdr + 24, offset, len(note))  # sh_offset, sh_size
    if only in (None, "segment") and phdr is not None:
        struct.pack_into("<Q", out, phdr + 8, offset)  # p_offset
        struct.pack_into("<QQ", out, phdr + 32, len(note), len(note))  # p_filesz, p_memsz
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

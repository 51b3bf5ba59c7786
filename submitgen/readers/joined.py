"""The joined-image format: several code objects back to back in one embedded text (the renderer,
``render/embed.py``, joins them: each ELF image carries its own extent, so no index is needed)
and the readers split them again (``readers/containers.py``)."""

from __future__ import annotations

import struct

_ELF_HEAD = struct.Struct("<4sB")
_ELF_TABLES = struct.Struct("<QQ")  # e_phoff, e_shoff at byte 0x20
_ELF_COUNTS = struct.Struct("<HHHH")  # e_phentsize, e_phnum, e_shentsize, e_shnum at byte 0x36
_SECTION = struct.Struct("<IIQQQQ")  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
_SHT_NOBITS = 8


def elf_extent(data: bytes, start: int = 0) -> int | None:
    """How many bytes from ``start`` the ELF64 image there covers: its program and section header
    tables and the bytes of every section (how a loader given only a pointer sizes it). None when
    no 64-bit ELF header starts there."""
    try:
        magic, elf_class = _ELF_HEAD.unpack_from(data, start)
        if magic != b"\x7fELF" or elf_class != 2:
            return None
        phoff, shoff = _ELF_TABLES.unpack_from(data, start + 0x20)
        phentsize, phnum, shentsize, shnum = _ELF_COUNTS.unpack_from(data, start + 0x36)
        end = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
        if shentsize == 64:
            for i in range(shnum):
                _, kind, _, _, offset, size = _SECTION.unpack_from(data, start + shoff + 64 * i)
                if kind != _SHT_NOBITS:
                    end = max(end, offset + size)
    except (struct.error, OverflowError):  # a table or section past the end (or past any size)
        return None
    return int(end)


def split_joined(data: bytes) -> list[bytes]:
    """The code objects of a text that holds several back to back (``embed_images``): each ELF
    image ends where its extent says and the next one starts with the ELF magic; anything else
    stays with the image before it."""
    images = []
    start = 0
    while True:
        extent = elf_extent(data, start)
        end = start + extent if extent else len(data)
        if not start < end < len(data) or data[end:end + 4] != b"\x7fELF":
            images.append(data[start:])
            return images
        images.append(data[start:end])
        start = end

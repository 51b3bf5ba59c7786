"""Generators of bad inputs from a good code object (``good``: the HIP many_args object, gfx950 v6)
and a good bundle. Each returns (file name, bytes). tests/test_inspect_cli.py writes them out, runs
``submitgen inspect`` on each and compares the one error line with expected.txt."""

from __future__ import annotations

import base64
import struct
import zlib
from io import BytesIO

from elftools.elf.elffile import ELFFile


def _section(data: bytes, name: str) -> tuple[int, int]:
    sec = ELFFile(BytesIO(data)).get_section_by_name(name)
    return sec["sh_offset"], sec["sh_size"]


def truncated_header(good: bytes, bundle: bytes):
    return "truncated_header.co", good[:40]


def truncated_sections(good: bytes, bundle: bytes):
    return "truncated_sections.co", good[: len(good) - 100]


def wrong_machine(good: bytes, bundle: bytes):
    d = bytearray(good)
    struct.pack_into("<H", d, 18, 62)  # EM_X86_64
    return "wrong_machine.co", bytes(d)


def code_object_v3(good: bytes, bundle: bytes):
    d = bytearray(good)
    d[8] = 1
    return "v3.co", bytes(d)


def broken_note(good: bytes, bundle: bytes):
    d = bytearray(good)
    off, _ = _section(good, ".note")
    struct.pack_into("<I", d, off + 4, 0x7FFFFFF0)  # descsz far past the section
    return "broken_note.co", bytes(d)


def broken_msgpack(good: bytes, bundle: bytes):
    d = bytearray(good)
    off, _ = _section(good, ".note")
    namesz = struct.unpack_from("<I", d, off)[0]
    d[off + 12 + ((namesz + 3) & ~3)] = 0xC1  # 0xc1 is never used in msgpack
    return "broken_msgpack.co", bytes(d)


def kernel_without_kd(good: bytes, bundle: bytes):
    d = bytearray(good)
    for name in (".dynstr", ".strtab"):
        off, size = _section(good, name)
        region = d[off:off + size].replace(b"many_args.kd\0", b"many_args.kx\0")
        d[off:off + size] = region
    return "no_kd.co", bytes(d)


def bundle_without_arch(good: bytes, bundle: bytes):
    return "gfx942_only.hipfb", bundle


def decompression_bomb(good: bytes, bundle: bytes):
    blob = base64.b64encode(zlib.compress(b"\0" * (65 * 1024 * 1024), 9)).decode()
    return "bomb.py", f'# a decompression bomb\nBLOB = "{blob}"\n'.encode()


GENERATORS = [truncated_header, truncated_sections, wrong_machine, code_object_v3, broken_note, broken_msgpack,
              kernel_without_kd, bundle_without_arch, decompression_bomb]

"""The costs `inspect` cut for speed (issue 26 item 16) keep what it reads: each object's ELF image
is parsed once per run (the instruction mix's code ranges reuse the reader's), and the section
headers, their names and the symbols read by ``struct`` are pyelftools' own values, field for
field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from submitgen.readers import elf

REPO = Path(__file__).resolve().parents[2]
CORPUS = sorted(p for p in (REPO / "tests" / "corpus").rglob("*") if p.suffix in (".co", ".hsaco"))


def test_each_object_is_parsed_once_with_the_instruction_mix(monkeypatch):
    """Before: the reader parsed each object, then ``disasm.code_ranges`` parsed it again."""
    if shutil.which("llvm-objdump-22") is None:
        pytest.skip("needs llvm-objdump-22 for the instruction mix")
    from submitgen.inspection.report import inspect_sources

    parsed: list[int] = []
    real = elf.ElfImage.__init__

    def counting(self, data, *args, **kwargs):
        parsed.append(id(data))
        real(self, data, *args, **kwargs)

    monkeypatch.setattr(elf.ElfImage, "__init__", counting)
    objects = CORPUS[:6]
    items = inspect_sources([str(p) for p in objects], disasm=True)
    assert all(item.mix for item in items)  # the mix was made for every object
    assert len(parsed) == len(objects)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_struct_reads_what_pyelftools_reads(path):
    data = path.read_bytes()
    fast = elf.ElfImage(data, str(path))
    slow = elf._ElfFile(data)
    slow._sh_types = None  # pyelftools' own parser for every header
    assert fast.elf._sh_types is not None
    for n in range(fast.elf.num_sections()):
        header = fast.elf._get_section_header(n)
        assert dict(header) == dict(slow._get_section_header(n))
        assert fast.elf._get_section_name(header) == slow._get_section_name(header)
    # the image's sections (by struct, no pyelftools object made) against pyelftools' own
    library = list(elf._ElfFile(data).iter_sections())
    assert len(fast.sections) == len(library)
    for ours, theirs in zip(fast.sections, library):
        assert ours._library is None  # not made until asked for
        assert dict(ours.header) == dict(theirs.header) and ours.name == theirs.name
        assert ours.data() == theirs.data()
        assert ours.is_symbol_table == isinstance(theirs, elf.SymbolTableSection)
    assert fast.symbol_table(".symtab") is not None or fast.symbol_table(".dynsym") is not None
    for order in ((".symtab", ".dynsym"), (".dynsym", ".symtab")):
        by_library = elf.ElfImage(data, str(path))
        by_library._fast_symbols = lambda sec: None  # type: ignore[method-assign]
        assert fast.symbols(order) == by_library.symbols(order) != {}


def _typed(v):
    """A parsed header as nested (key, value, type) lists: equal only with the same keys, in the
    same order, with values of the same types."""
    if isinstance(v, dict):
        return [(k, _typed(x), type(x).__name__) for k, x in v.items()]
    if isinstance(v, list):
        return [_typed(x) for x in v]
    return v, type(v).__name__


def _library_header(data: bytes):
    from io import BytesIO

    from elftools.elf.elffile import ELFFile

    return ELFFile(BytesIO(data)).header


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_the_elf_header_by_struct_is_pyelftools_header(path):
    data = path.read_bytes()
    fast = elf._ehdr_fields(data, elf._basic_structs(True, 64))
    assert fast is not None
    assert _typed(fast) == _typed(_library_header(data))
    assert _typed(elf._ElfFile(data).header) == _typed(_library_header(data))


def _patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    import struct

    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


@pytest.mark.parametrize("at, fmt, value", [
    (6, "<B", 0), (6, "<B", 0xEE),  # EI_VERSION: none, one with no name
    (7, "<B", 0), (7, "<B", 0xFE),  # EI_OSABI: System V, one with no name
    (8, "<B", 0xFF),  # EI_ABIVERSION
    (9, "<B", 0x5A),  # the padding: not checked by either
    (16, "<H", 0xFE00), (18, "<H", 0x3), (18, "<H", 0xBEEF),  # e_type, e_machine (EM_386, none)
    (20, "<I", 7), (60, "<H", 0xFFFF),  # e_version, e_shstrndx
], ids=lambda v: str(v))
def test_unusual_header_values_read_as_pyelftools_reads_them(at, fmt, value):
    data = _patched(CORPUS[0].read_bytes(), at, fmt, value)
    fast = elf._ehdr_fields(data, elf._basic_structs(True, 64))
    assert _typed(fast) == _typed(_library_header(data))


def test_headers_the_struct_read_does_not_take_go_to_pyelftools():
    data = CORPUS[0].read_bytes()
    structs = elf._basic_structs(True, 64)
    assert elf._ehdr_fields(data[:63], structs) is None  # shorter than the header
    assert elf._ehdr_fields(data[:4] + b"\x01" + data[5:], structs) is None  # ELF32
    assert elf._ehdr_fields(data[:5] + b"\x02" + data[6:], structs) is None  # big-endian

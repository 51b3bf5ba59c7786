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

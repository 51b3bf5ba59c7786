"""`inspect` parses each object's ELF image once per run (the instruction mix's code ranges reuse
the reader's)."""

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

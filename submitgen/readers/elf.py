"""ELF64 little-endian images, through pyelftools, as the AMD code object and NVIDIA cubin readers
need them; the one place that turns pyelftools' and ``struct``'s exceptions into ``CodeObjectError``.

Read by hand, for their messages (each field's expected and actual value; the byte where a note
runs past its section), not for speed: the ELF header's checks (``read_header``) and note records
(``_iter_notes``). pyelftools costs about 2 ms of CPU an object (``benchmarks/bench_elf_reader.py``)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from submitgen.errors import CodeObjectError

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3
ELF_TYPE_NAMES = {ET_REL: "ET_REL", ET_EXEC: "ET_EXEC", ET_DYN: "ET_DYN"}
SHDR_SIZE = 64
PHDR_SIZE = 56
_EHDR = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")
EHDR_SIZE = _EHDR.size

# What pyelftools and struct raise on malformed input; nothing else is translated.
LIBRARY_ERRORS = (ELFError, ELFParseError, struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError,
                  AttributeError, TypeError, OverflowError, AssertionError, RecursionError)


@dataclass(frozen=True)
class Elf64Header:
    """The fields of ``Elf64_Ehdr`` the readers use (magic, class, byte order already checked)."""

    osabi: int
    abi_version: int
    e_type: int
    e_machine: int
    e_phoff: int
    e_shoff: int
    e_flags: int
    e_phentsize: int
    e_phnum: int
    e_shentsize: int
    e_shnum: int
    e_shstrndx: int


@dataclass(frozen=True)
class Symbol:
    name: str
    type: str  # "STT_FUNC", "STT_OBJECT", ...
    value: int
    size: int
    shndx: Any  # section index, or "SHN_UNDEF" / "SHN_ABS" ...


def e_machine(data: bytes) -> int | None:
    """``e_machine`` of something that starts like an ELF file, else None."""
    if len(data) < 20 or data[:4] != ELF_MAGIC:
        return None
    return int(struct.unpack_from("<H", data, 18)[0])


def read_header(data: bytes, label: str, machine: int, machine_name: str) -> Elf64Header:
    """Check magic, length, class, byte order, ``e_machine`` and the section header table."""
    if len(data) < 4 or data[:4] != ELF_MAGIC:
        raise CodeObjectError(
            f"{label}: not an ELF file: expected magic 7f454c46, got {data[:4].hex() or 'empty'}"
        )
    if len(data) < EHDR_SIZE:
        raise CodeObjectError(
            f"{label}: truncated ELF: expected at least {EHDR_SIZE} header bytes, got {len(data)}"
        )
    f = _EHDR.unpack_from(data)
    if f[1] != ELFCLASS64:
        raise CodeObjectError(f"{label}: ELF class: expected ELFCLASS64 (2), got {f[1]}")
    if f[2] != ELFDATA2LSB:
        raise CodeObjectError(f"{label}: ELF data encoding: expected little-endian (1), got {f[2]}")
    if f[8] != machine:
        raise CodeObjectError(f"{label}: ELF machine: expected {machine_name} ({machine}), got {f[8]}")
    h = Elf64Header(osabi=f[4], abi_version=f[5], e_type=f[7], e_machine=f[8], e_phoff=f[11], e_shoff=f[12],
                    e_flags=f[13], e_phentsize=f[15], e_phnum=f[16], e_shentsize=f[17], e_shnum=f[18],
                    e_shstrndx=f[19])
    return h


def check_section_table(h: Elf64Header, size: int, label: str) -> None:
    """The section header table exists, fits the file and names its string table (loaders size
    a bare ELF image from it)."""
    if h.e_shentsize != SHDR_SIZE or h.e_shnum == 0:
        raise CodeObjectError(
            f"{label}: section header table: expected 64-byte entries and at least one, "
            f"got e_shentsize {h.e_shentsize}, e_shnum {h.e_shnum}"
        )
    end = h.e_shoff + h.e_shentsize * h.e_shnum
    if end > size:
        raise CodeObjectError(
            f"{label}: truncated ELF: section header table ends at byte {end}, file has {size} bytes"
        )
    if h.e_shstrndx >= h.e_shnum:
        raise CodeObjectError(f"{label}: e_shstrndx: expected below e_shnum {h.e_shnum}, got {h.e_shstrndx}")


def program_header_problem(h: Elf64Header, size: int) -> str | None:
    """Why a loader that maps segments could not map this image, or None."""
    if h.e_phnum == 0:
        return "no program headers (e_phnum is 0): a loader has no segment to map"
    if h.e_phentsize != PHDR_SIZE:
        return f"program header entries: expected {PHDR_SIZE} bytes, got e_phentsize {h.e_phentsize}"
    end = h.e_phoff + h.e_phentsize * h.e_phnum
    if end > size:
        return f"program header table ends at byte {end}, past the end of the file ({size} bytes)"
    return None


@contextmanager
def library_errors(label: str) -> Iterator[None]:
    """Turn what pyelftools/struct raise on malformed input into one ``CodeObjectError``."""
    try:
        yield
    except CodeObjectError:
        raise
    except LIBRARY_ERRORS as e:
        raise CodeObjectError(f"{label}: malformed ELF: {type(e).__name__}: {str(e)[:120]}") from None


class ElfImage:
    """An ELF file's sections (pyelftools' own: ``sec["sh_type"]``, ``sec.name``, ``sec.data()``),
    notes and symbols, with every section checked to lie in the file."""

    def __init__(self, data: bytes, label: str, no_file_bytes: tuple[Any, ...] = ("SHT_NOBITS",)):
        self.data, self.label = data, label
        self.elf = ELFFile(BytesIO(data))
        self.sections = list(self.elf.iter_sections())
        self._no_file_bytes = no_file_bytes
        for sec in self.sections:
            end = sec["sh_offset"] + sec["sh_size"]
            if sec["sh_type"] not in no_file_bytes and end > len(data):
                raise CodeObjectError(f"{label}: truncated ELF: section {sec.name or '#?'!r} ends at byte "
                                      f"{end}, file has {len(data)} bytes")

    def section(self, name: str) -> Any:
        return next((s for s in self.sections if s.name == name), None)

    def notes(self) -> Iterator[tuple[str, int, bytes]]:
        """(owner, type, descriptor) of every note of every ``SHT_NOTE`` section, bounds-checked."""
        for sec in self.sections:
            if sec["sh_type"] == "SHT_NOTE":
                yield from _iter_notes(sec.data(), sec.name, self.label)

    def segment_notes(self) -> tuple[list[tuple[str, int, bytes]], str | None]:
        """(owner, type, descriptor) of every note of every ``PT_NOTE`` segment (what a loader
        reads), and why a segment could not be read (None when all could). Call it only when the
        program header table itself is sound (``program_header_problem``)."""
        out: list[tuple[str, int, bytes]] = []
        for i in range(self.elf["e_phnum"]):
            seg = self.elf.get_segment(i)
            if seg["p_type"] != "PT_NOTE":
                continue
            start, size = seg["p_offset"], seg["p_filesz"]
            if start + size > len(self.data):
                return out, (f"PT_NOTE segment {i} (bytes {start}..{start + size}) runs past the end of "
                             f"the file ({len(self.data)} bytes)")
            out += _iter_notes(self.data[start:start + size], f"PT_NOTE segment {i}", self.label)
        return out, None

    def symbol_table(self, name: str) -> SymbolTableSection | None:
        """pyelftools' symbol table section named ``name``, or None."""
        sec = self.section(name)
        return sec if isinstance(sec, SymbolTableSection) else None

    def symbols(self, order: tuple[str, ...]) -> dict[str, Symbol]:
        """Named symbols of the first table in ``order`` that has any (first definition wins)."""
        out: dict[str, Symbol] = {}
        for secname in order:
            table = self.symbol_table(secname)
            for sym in table.iter_symbols() if table is not None else ():
                if sym.name and sym.name not in out:
                    e = sym.entry
                    out[sym.name] = Symbol(
                        sym.name, e["st_info"]["type"], e["st_value"], e["st_size"], e["st_shndx"]
                    )
            if out:
                break
        return out

    def read_at(self, sym: Symbol, size: int, *, relocatable: bool) -> bytes | None:
        """``size`` bytes at a symbol's value: section-relative when ``relocatable``, else a
        virtual address inside a loaded section. None when no section holds them."""
        off = self._file_offset(sym, size, relocatable)
        if off is None:
            return None
        chunk = self.data[off:off + size]
        return chunk if len(chunk) == size else None

    def _file_offset(self, sym: Symbol, size: int, relocatable: bool) -> int | None:
        if relocatable:
            if not isinstance(sym.shndx, int) or sym.shndx >= len(self.sections):
                return None
            sec = self.sections[sym.shndx]
            if sec["sh_type"] in self._no_file_bytes or sym.value + size > sec["sh_size"]:
                return None
            return int(sec["sh_offset"]) + sym.value
        for sec in self.sections:
            if sec["sh_type"] in self._no_file_bytes or not sec["sh_addr"]:
                continue
            if sec["sh_addr"] <= sym.value and sym.value + size <= sec["sh_addr"] + sec["sh_size"]:
                return int(sec["sh_offset"]) + sym.value - int(sec["sh_addr"])
        return None


def _iter_notes(raw: bytes, secname: str, label: str) -> Iterator[tuple[str, int, bytes]]:
    pos, n = 0, len(raw)
    while pos + 12 <= n:
        namesz, descsz, ntype = struct.unpack_from("<III", raw, pos)
        desc_start = pos + 12 + ((namesz + 3) & ~3)
        desc_end = desc_start + descsz
        if desc_end > n:
            raise CodeObjectError(
                f"{label}: note in {secname!r} at byte {pos}: descriptor of {descsz} bytes "
                f"runs past the section end ({n} bytes)"
            )
        name = raw[pos + 12:pos + 12 + namesz].rstrip(b"\0").decode("latin-1")
        yield name, ntype, raw[desc_start:desc_end]
        pos = (desc_end + 3) & ~3
    if 0 < n - pos < 12 and any(raw[pos:]):
        raise CodeObjectError(
            f"{label}: note section {secname!r}: {n - pos} stray bytes after the last note"
        )

"""ELF64 little-endian images, as the AMD code object and NVIDIA cubin readers need them.

This is the one place that checks the ELF header, the section and program header tables and
note records, reads symbols, and turns pyelftools' and ``struct``'s exceptions into
``CodeObjectError`` (one line: the label, the thing, the expected and the actual value). The
ELF layout (header fields, ``SHT_NOTE`` records, symbol tables) is the System V gABI's; see
docs/readers.md."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from io import BytesIO
from typing import Any

from elftools.common.exceptions import ELFError, ELFParseError
from elftools.construct.lib.container import Container, ListContainer
from elftools.elf import enums
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection
from elftools.elf.structs import ELFStructs

from submitgen.errors import CodeObjectError

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3
ELF_TYPE_NAMES = {ET_REL: "ET_REL", ET_EXEC: "ET_EXEC", ET_DYN: "ET_DYN"}
SHDR_SIZE = 64
PHDR_SIZE = 56
_EHDR = struct.Struct("<4sBBBBB7sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQ")  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz (of 56 bytes)
PT_NOTE = 4
EHDR_SIZE = _EHDR.size
# Elf64_Shdr and Elf64_Sym by struct, with pyelftools' own names for the enumerated fields: its
# construct parsers cost ~0.3 ms a section header and ~0.1 ms a symbol, a third of reading a
# corpus object (the values are the same: tests/hostile/test_inspect_speed.py compares them on the corpus)
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SHDR_FIELDS = ("sh_name", "sh_type", "sh_flags", "sh_addr", "sh_offset", "sh_size", "sh_link", "sh_info",
                "sh_addralign", "sh_entsize")
_SYM = struct.Struct("<IBBHQQ")  # st_name, st_info, st_other, st_shndx, st_value, st_size
_STT = {v: k for k, v in enums.ENUM_ST_INFO_TYPE.items()}
_SHN = {v: k for k, v in enums.ENUM_ST_SHNDX.items()}

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


@lru_cache(maxsize=4)
def _basic_structs(little_endian: bool, elfclass: int) -> ELFStructs:
    structs = ELFStructs(little_endian=little_endian, elfclass=elfclass)
    structs.create_basic_structs()
    return structs


@lru_cache(maxsize=32)
def _structs(little_endian: bool, elfclass: int, e_type: str, e_machine: str, osabi: str) -> ELFStructs:
    """pyelftools' parsers for one kind of ELF file. ``ELFFile`` builds them afresh for every file
    (5 ms, a fifth of reading a corpus object); they depend only on these five values and parsing
    does not change them, so files of one kind share them."""
    structs = ELFStructs(little_endian=little_endian, elfclass=elfclass)
    structs.create_basic_structs()
    structs.create_advanced_structs(e_type, e_machine, osabi)
    return structs


@lru_cache(maxsize=4)
def _ehdr_names(structs: ELFStructs) -> tuple[dict[int, str], ...]:
    """pyelftools' names for Elf_Ehdr's enumerated fields, value -> name: EI_VERSION, EI_OSABI,
    e_type, e_machine, e_version (each passes a value it has no name for through unchanged)."""
    ehdr: Any = structs.Elf_Ehdr  # construct's Struct: its fields are .subcons
    ident = {c.name: c for c in ehdr.subcons[0].subcons}
    top = {c.name: c for c in ehdr.subcons}
    adapters = (ident["EI_VERSION"], ident["EI_OSABI"], top["e_type"], top["e_machine"], top["e_version"])
    return tuple(dict(a.decoding) for a in adapters)


def _ehdr_fields(data: bytes, structs: ELFStructs) -> Container | None:
    """The ELF header as pyelftools' parser gives it (a ``Container``, the same keys in the same
    order, the same names for enumerated values), by one ``struct`` read: its construct parser
    was a tenth of reading a corpus object. None where the file is not ELF64 little-endian or is
    shorter than the header (pyelftools' parser then, with its own errors)."""
    if len(data) < _EHDR.size or data[4] != ELFCLASS64 or data[5] != ELFDATA2LSB:
        return None
    (magic, _cls, _data, ei_version, osabi, abi_version, _pad, e_type, e_machine, e_version, *rest) = \
        _EHDR.unpack_from(data)
    versions, osabis, types, machines, e_versions = _ehdr_names(structs)
    ident = Container(EI_MAG=ListContainer(magic), EI_CLASS="ELFCLASS64", EI_DATA="ELFDATA2LSB",
                      EI_VERSION=versions.get(ei_version, ei_version), EI_OSABI=osabis.get(osabi, osabi),
                      EI_ABIVERSION=abi_version)
    return Container(e_ident=ident, e_type=types.get(e_type, e_type),
                     e_machine=machines.get(e_machine, e_machine),
                     e_version=e_versions.get(e_version, e_version), **dict(zip(_EHDR_REST, rest)))


_EHDR_REST = ("e_entry", "e_phoff", "e_shoff", "e_flags", "e_ehsize", "e_phentsize", "e_phnum", "e_shentsize",
              "e_shnum", "e_shstrndx")


class _ElfFile(ELFFile):
    """``ELFFile`` with its parsers shared among files of one kind (``_structs``); the rest of
    its construction is ``ELFFile.__init__``'s, step for step."""

    def __init__(self, data: bytes) -> None:
        self.stream = BytesIO(data)
        self.stream_len = len(data)
        self._identify_file()
        self.structs = _basic_structs(self.little_endian, self.elfclass)
        self.header = _ehdr_fields(data, self.structs) or self._parse_elf_header()
        self.structs = _structs(self.little_endian, self.elfclass, self["e_type"], self["e_machine"],
                                self["e_ident"]["EI_OSABI"])
        self.e_ident_raw = data[:16]
        self.stream_loader = None
        self._data = data
        self._headers: dict[int, Any] = {}
        self._sh_types = _sh_type_names(self.structs) if self.elfclass == 64 and self.little_endian \
            and self["e_shentsize"] == _SHDR.size else None
        self._shoff: int = self["e_shoff"]
        self._names_at: int | None | bool = False  # the name table's offset (None: none; False: not read)

    def header_fields(self, n: int) -> dict[str, Any] | None:
        """Section header ``n`` by struct, as a dict of pyelftools' field names and values; None
        where the file is not plain ELF64 little-endian or the header does not lie whole in it
        (pyelftools' parser then, which raises its own error)."""
        pos = self._shoff + n * _SHDR.size
        if self._sh_types is None or pos + _SHDR.size > self.stream_len:
            return None
        values = _SHDR.unpack_from(self._data, pos)
        fields = dict(zip(_SHDR_FIELDS, values))
        fields["sh_type"] = self._sh_types.get(values[1], values[1])
        return fields

    def _get_section_header(self, n: int) -> Any:
        """Each section header parsed once (pyelftools parses a symbol or string table's header
        again for every section that links to it), by struct where it can be (``header_fields``),
        else by pyelftools' parser."""
        h = self._headers.get(n)
        if h is None:
            fields = self.header_fields(n)
            h = Container(**fields) if fields is not None else super()._get_section_header(n)
            self._headers[n] = h
        return h

    def _get_section_name(self, section_header: Any) -> str:
        """The name from the section name table's bytes, as pyelftools reads it (to the next NUL
        of the file, UTF-8 with replacement), without its stream parser; pyelftools' own path
        where the table's header or the name is unusual (it raises its own error)."""
        if self._sh_types is not None:
            at = self._names_at
            if at is False:  # the table's header, read once (its header is parsed once anyway)
                strtab = self._get_section_header(self["e_shstrndx"]) if 0 < self["e_shstrndx"] < \
                    self["e_shnum"] else None
                at = self._names_at = strtab["sh_offset"] if strtab is not None and \
                    isinstance(strtab["sh_offset"], int) else None
            if at is not None:
                start = at + section_header["sh_name"]
                end = self._data.find(b"\0", start) if start < self.stream_len else -1
                if end >= 0:
                    return self._data[start:end].decode("utf-8", errors="replace")
        return super()._get_section_name(section_header)


@lru_cache(maxsize=16)
def _sh_type_names(structs: ELFStructs) -> dict[int, str]:
    """sh_type value -> pyelftools' name, for the machine ``structs`` were made for."""
    field = next(f for f in structs.Elf_Shdr.subcons if f.name == "sh_type")
    decoding: dict[int, str] = field.decoding  # type: ignore[attr-defined]  # an Enum construct's table
    return dict(decoding)


SHF_COMPRESSED = 0x800
_SYMBOL_TABLE_TYPES = frozenset(("SHT_SYMTAB", "SHT_DYNSYM", "SHT_SUNW_LDYNSYM"))  # pyelftools' own


class Section:
    """One section as the readers use it: its header's fields by pyelftools' names and values
    (``sec["sh_type"]``), its name and its bytes. pyelftools' own section object (a symbol
    table's, a compressed or ``SHT_NOBITS`` section's bytes) is made only when one is asked for:
    making every section's (string tables, hash tables, notes...) was a third of reading a corpus
    object, for sections nothing reads."""

    __slots__ = ("header", "name", "index", "_image", "_library")

    def __init__(self, header: Any, name: str, index: int, image: ElfImage, library: Any = None):
        self.header, self.name, self.index, self._image, self._library = header, name, index, image, library

    def __getitem__(self, key: str) -> Any:
        return self.header[key]

    def data(self) -> bytes:
        """The section's bytes, as pyelftools' ``Section.data()`` gives them."""
        h = self.header
        if h["sh_type"] == "SHT_NOBITS" or h["sh_flags"] & SHF_COMPRESSED:
            return bytes(self.library().data())
        start = h["sh_offset"]
        return self._image.data[start:start + h["sh_size"]]

    def library(self) -> Any:
        """pyelftools' object for this section (made once)."""
        if self._library is None:
            self._library = self._image.elf.get_section(self.index)
        return self._library

    @property
    def is_symbol_table(self) -> bool:
        return self.header["sh_type"] in _SYMBOL_TABLE_TYPES

    def symbol_table(self) -> SymbolTableSection | None:
        """pyelftools' symbol table for this section, or None when it is not one."""
        table = self.library() if self.is_symbol_table else None
        return table if isinstance(table, SymbolTableSection) else None


class ElfImage:
    """An ELF file's sections, notes and symbols, with every section checked to lie in the file."""

    def __init__(self, data: bytes, label: str, no_file_bytes: tuple[Any, ...] = ("SHT_NOBITS",)):
        self.data, self.label = data, label
        self.elf = _ElfFile(data)
        self._symbols: dict[tuple[str, ...], dict[str, Symbol]] = {}
        self.sections = self._read_sections()
        self._no_file_bytes = no_file_bytes
        for sec in self.sections:
            end = sec["sh_offset"] + sec["sh_size"]
            if sec["sh_type"] not in no_file_bytes and end > len(data):
                raise CodeObjectError(f"{label}: truncated ELF: section {sec.name or '#?'!r} ends at byte "
                                      f"{end}, file has {len(data)} bytes")

    def _read_sections(self) -> list[Section]:
        """Every section, its header by struct where it can be (``_ElfFile.header_fields``: the
        values pyelftools gives, tests/hostile/test_inspect_speed.py); pyelftools' own sections
        for a file that is not plain ELF64 little-endian, and pyelftools' parser (its errors) for
        a header that does not lie whole in the file."""
        elf = self.elf
        if elf._sh_types is None:
            return [Section(s.header, s.name, i, self, s) for i, s in enumerate(elf.iter_sections())]
        out = []
        for i in range(elf.num_sections()):
            header = elf.header_fields(i) or elf._get_section_header(i)
            out.append(Section(header, elf._get_section_name(header), i, self))
        return out

    def section(self, name: str) -> Section | None:
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
        phoff = self.elf["e_phoff"]
        for i in range(self.elf["e_phnum"]):  # Elf64_Phdr by struct: pyelftools' segments cost 4 ms
            p_type, _flags, start, _va, _pa, size = _PHDR.unpack_from(self.data, phoff + i * PHDR_SIZE)
            if p_type != PT_NOTE:
                continue
            if start + size > len(self.data):
                return out, (f"PT_NOTE segment {i} (bytes {start}..{start + size}) runs past the end of "
                             f"the file ({len(self.data)} bytes)")
            out += _iter_notes(self.data[start:start + size], f"PT_NOTE segment {i}", self.label)
        return out, None

    def symbol_table(self, name: str) -> SymbolTableSection | None:
        """pyelftools' symbol table section named ``name``, or None."""
        sec = self.section(name)
        return sec.symbol_table() if sec is not None else None

    def symbols(self, order: tuple[str, ...]) -> dict[str, Symbol]:
        """Named symbols of the first table in ``order`` that has any (first definition wins);
        read once per image and order."""
        if order in self._symbols:
            return self._symbols[order]
        out: dict[str, Symbol] = {}
        for secname in order:
            sec = self.section(secname)
            if sec is None or not sec.is_symbol_table:
                continue
            fast = self._fast_symbols(sec)
            table = None if fast else sec.symbol_table()
            for sym in fast or (table.iter_symbols() if table is not None else ()):
                if isinstance(sym, Symbol):
                    if sym.name not in out:
                        out[sym.name] = sym
                elif sym.name and sym.name not in out:
                    e = sym.entry
                    out[sym.name] = Symbol(
                        sym.name, e["st_info"]["type"], e["st_value"], e["st_size"], e["st_shndx"]
                    )
            if out:
                break
        self._symbols[order] = out
        return out

    def _fast_symbols(self, sec: Section) -> list[Symbol] | None:
        """The named symbols of ``sec`` by struct, as pyelftools reads them (names from the linked
        string table, decoded as UTF-8 with replacement); None where anything is unusual (an entry
        size other than 24, a name without its NUL in the file...): pyelftools' path then."""
        link, count = sec["sh_link"], sec["sh_size"] // _SYM.size if sec["sh_entsize"] == _SYM.size else -1
        if count < 0 or self.elf._sh_types is None or not 0 < link < len(self.sections):
            return None
        strtab = self.sections[link]["sh_offset"]
        raw, data = sec.data(), self.data
        out = []
        for st_name, info, _other, shndx, value, size in _SYM.iter_unpack(raw[:count * _SYM.size]):
            if not st_name:
                continue
            start = strtab + st_name
            end = data.find(b"\0", start)
            if end < 0:
                return None
            if end == start:
                continue
            name = data[start:end].decode("utf-8", errors="replace")
            out.append(Symbol(name, _STT.get(info & 0xF, info & 0xF), value, size, _SHN.get(shndx, shndx)))
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


_shared: dict[int, ElfImage] | None = None


@contextmanager
def shared_images() -> Iterator[None]:
    """While the block runs, :func:`image_of` gives the image already parsed from the same bytes
    object (``inspect`` reads an object, then finds its kernels' code ranges for the instruction
    mix: one parse, not two); outside it, a fresh parse each time."""
    global _shared
    outer = _shared
    _shared = {} if outer is None else outer
    try:
        yield
    finally:
        _shared = outer


def image_of(data: bytes, label: str) -> ElfImage:
    """``ElfImage(data, label)``, parsed once per bytes object inside :func:`shared_images`."""
    if _shared is None:
        return ElfImage(data, label)
    img = _shared.get(id(data))
    if img is None or img.data is not data:
        img = _shared[id(data)] = ElfImage(data, label)
    return img


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

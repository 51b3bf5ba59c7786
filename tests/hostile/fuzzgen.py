"""Structured hostile inputs for the fuzz test (test_fuzz.py), generated from real code objects.

Each category is a function ``(seeds, n) -> Case``: the n-th case of that category, from a
``random.Random`` seeded with the category's name and n, so any case can be made again alone
(``make(category, n, seeds)``). Categories:

``meta``      the NT_AMDGPU_METADATA map: values of the wrong type, huge, negative, NaN/inf, bytes
              keys, Timestamps and ext types, deep nesting, missing and extra keys, lying argument
              offsets/sizes/kinds, absurd kernarg sizes, duplicate kernels; undecodable msgpack
``elf``       ELF header, section, program header, symbol, note and kernel descriptor fields out
              of range, overlapping tables and sections, truncations; a hostile Triton sidecar
``bundle``    clang offload bundles that lie: entry offsets/sizes past the end, huge counts and id
              lengths, duplicate triples, odd ids, nested and compressed (CCOB) bundles
``pyliteral`` Python files whose embedded blob literal is malformed, huge, nested, not base64, under
              the wrong codec header, or beside a sha256 that does not match; odd file encodings
              and provenance lines
``bomb``      decompression bombs of every codec a reader accepts: zlib, gzip, xz, lzma-alone and
              bz2 literals, and a compressed offload bundle (CCOB, zlib)
``storage``   launch plans (build --co) whose output or workspace has no storage behind it: stride 0,
              an expand of one element, a hard-coded meta or cpu device, a set_ onto an input's
              storage, an output no launch receives, a column-major output; each must be refused
``bounds``    sizes at and just past every bound of the readers: the kernarg segment (metadata),
              the metadata note, a kernel's argument count, a .py's size and its blobs' decoded
              total; at the bound the command reads it, past it the command refuses it
"""

from __future__ import annotations

import base64
import bz2
import copy
import functools
import gzip
import lzma
import math
import random
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

import msgpack
from elfedit import with_desc
from elftools.elf.elffile import ELFFile

from submitgen.readers.pysource import MAX_DECODED_SIZE

INSPECT, INSPECT_JSON, DIFF, LINT, BUILD = "inspect", "inspect --json", "diff", "lint", "build --co"
COMMANDS = (INSPECT, INSPECT_JSON, DIFF, LINT, BUILD)


@dataclass(frozen=True)
class Case:
    category: str
    n: int
    what: str  # the mutations applied, for a failure report
    data: bytes  # the hostile file
    suffix: str  # ".co", ".py", ...
    command: str  # one of COMMANDS
    options: tuple[str, ...] = ()  # extra CLI options (--arch ...)
    sidecar: bytes | None = None  # a Triton .json written beside the file
    plan: tuple[str, str] | None = None  # build: (old, new), one edit of the project's launch.py
    expect: int | None = None  # the exit status the case must end with (None: 0 or 1)

    @property
    def name(self) -> str:
        return f"{self.category}#{self.n}"


@dataclass(frozen=True)
class Seeds:
    """Real inputs the cases start from: code objects compiled by the tests (``objects``: name ->
    bytes, all gfx950/gfx942), the object the build test's project launches (``build_co``) and a
    submission built from that project (``submission``)."""

    objects: dict[str, bytes]
    build_co: bytes
    submission: str

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.objects))


# --------------------------------------------------------------------------- hostile values

_TS = (msgpack.Timestamp(0, 0), msgpack.Timestamp(2**34 - 1, 999_999_999), msgpack.Timestamp(-(2**40), 1))


def _nested(rng: random.Random) -> Any:
    v: Any = rng.choice((0, "x", None))
    for _ in range(rng.randint(2, 400)):
        v = [v] if rng.random() < 0.7 else {"k": v}
    return v


def hostile_value(rng: random.Random) -> Any:
    pick = rng.randrange(12)
    if pick == 0:
        return rng.choice((None, True, False))
    if pick == 1:
        return rng.choice((0, 1, -1, 2, 3, 7, 255, 256, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**32))
    if pick == 2:
        return rng.choice((-(2**63), 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**32)))
    if pick == 3:
        return rng.choice((math.nan, math.inf, -math.inf, 1.5, -0.0, 1e308, 5e-324, 256.9, 1e300))
    if pick == 4:
        return rng.choice(
            (
                "",
                "0",
                "256",
                "x" * rng.choice((1, 300, 70_000)),
                "\u00e9\u2603",
                "\0",
                "a\nb",
                'x"+str(1)+"',
                "by_value",
                "global_buffer",
                "hidden_none",
                "\t",
                "\\",
            )
        )
    if pick == 5:
        return rng.choice((b"", b"\xff\xfe", b"\0" * 9, bytes(range(256))))
    if pick == 6:
        return rng.choice(([], [1], [None] * 3, [1, 2, 3, 4], [2**64 - 1] * 3, ["a", "b"], [1.5, math.nan]))
    if pick == 7:
        return _nested(rng)
    if pick == 8:
        return rng.choice(({}, {"a": 1}, {b"\xff": 1}, {"": None}, {b"k": {b"k": b"v"}}))
    if pick == 9:
        return rng.choice(_TS)
    if pick == 10:
        return rng.choice(
            (msgpack.ExtType(5, b"x"), msgpack.ExtType(0, b"\xff" * 300), msgpack.ExtType(127, b""))
        )
    return list(range(rng.choice((100, 5000))))


# --------------------------------------------------------------------------- meta

_KERNEL_KEYS = (
    ".name",
    ".symbol",
    ".args",
    ".kernarg_segment_size",
    ".kernarg_segment_align",
    ".group_segment_fixed_size",
    ".private_segment_fixed_size",
    ".wavefront_size",
    ".sgpr_count",
    ".vgpr_count",
    ".agpr_count",
    ".max_flat_workgroup_size",
    ".sgpr_spill_count",
    ".vgpr_spill_count",
    ".uniform_work_group_size",
    ".uses_dynamic_stack",
    ".workgroup_processor_mode",
    ".language",
    ".language_version",
    ".kind",
    ".reqd_workgroup_size",
    ".workgroup_size_hint",
    ".vec_type_hint",
    ".device_enqueue_symbol",
    ".max_num_workgroups",
    ".cluster_dims",
    ".uses_cu_stores",
    ".extra",
)
_ARG_KEYS = (
    ".offset",
    ".size",
    ".value_kind",
    ".name",
    ".type_name",
    ".address_space",
    ".access",
    ".actual_access",
    ".pointee_align",
    ".is_const",
    ".is_restrict",
    ".is_volatile",
    ".is_pipe",
    ".value_type",
    ".extra",
)
_KINDS = (
    "global_buffer",
    "by_value",
    "dynamic_shared_pointer",
    "image",
    "sampler",
    "pipe",
    "queue",
    "hidden_global_offset_x",
    "hidden_none",
    "hidden_printf_buffer",
    "hidden_hostcall_buffer",
    "hidden_block_count_x",
    "hidden_dynamic_lds_size",
    "",
    "GLOBAL_BUFFER",
    "by_value\0",
    "x" * 300,
)
_NAMES = (
    'q"uote',
    "back\\slash",
    "new\nline",
    "tab\tbed",
    "sp ace",
    "\u00e9\u00e8\u2603",
    "\0nul",
    "",
    "_Z3fooi",
    "_ZN",
    "x" * 5000,
    "mm_tile",
    "mm_reduce",
    "many_args",
    "k.kd",
)


@functools.lru_cache(maxsize=32)
def _meta_doc(data: bytes) -> Any:
    elf = ELFFile(BytesIO(data))
    raw = next(s for s in elf.iter_sections() if s["sh_type"] == "SHT_NOTE" and b"AMDGPU" in s.data()).data()
    namesz, descsz, _ = struct.unpack_from("<III", raw, 0)
    start = 12 + ((namesz + 3) & ~3)
    return msgpack.unpackb(raw[start : start + descsz], raw=False)


def _kernel(doc: Any, rng: random.Random) -> dict | None:
    ks = doc.get("amdhsa.kernels") if isinstance(doc, dict) else None
    ks = [k for k in ks if isinstance(k, dict)] if isinstance(ks, list) else []
    return rng.choice(ks) if ks else None


def _arg(doc: Any, rng: random.Random) -> tuple[dict | None, dict | None]:
    k = _kernel(doc, rng)
    args = (
        [a for a in k.get(".args", ()) if isinstance(a, dict)]
        if k and isinstance(k.get(".args"), list)
        else []
    )
    return k, (rng.choice(args) if args else None)


def _lie_layout(doc: Any, rng: random.Random) -> str:
    k, a = _arg(doc, rng)
    if a is None:
        return "no arg"
    size = k.get(".kernarg_segment_size", 0) if isinstance(k.get(".kernarg_segment_size"), int) else 0
    others = [x.get(".offset", 0) for x in k[".args"] if isinstance(x, dict)]
    field = rng.choice((".offset", ".size", ".value_kind"))
    if field == ".offset":
        a[field] = rng.choice(
            (0, 1, 3, size, size - 1, size + 8, 2**31, 2**32, 2**64 - 1, rng.choice(others))
        )
    elif field == ".size":
        a[field] = rng.choice((0, 1, 2, 3, 4, 5, 7, 12, 16, 24, 4096, 2**31, 2**32 + 4, 2**64 - 1))
    else:
        a[field] = rng.choice(_KINDS)
    return f"arg {field}={a[field]!r:.40}"


def _absurd_kernel(doc: Any, rng: random.Random) -> str:
    k = _kernel(doc, rng)
    if k is None:
        return "no kernel"
    key, values = rng.choice(
        (
            (".kernarg_segment_size", (0, 1, 7, 4096, 4097, 2**16, 2**31, 2**32, 2**64 - 1)),
            (".kernarg_segment_align", (0, 1, 3, 7, 48, 2**31, 2**63)),
            (".sgpr_count", (0, 104, 105, 200, 2**31)),
            (".vgpr_count", (0, 257, 513, 2**32 - 1)),
            (".agpr_count", (0, 257, 2**31)),
            (".wavefront_size", (0, 1, 3, 32, 64, 128, 2**31)),
            (".group_segment_fixed_size", (65536, 163840, 163841, 2**32 - 1)),
            (".private_segment_fixed_size", (2**31, 2**32 - 1, 2**64 - 1)),
            (".max_flat_workgroup_size", (0, 1, 1025, 2**31)),
            (".reqd_workgroup_size", ([0, 0, 0], [2**31, 1, 1], [1, 2], [1024, 1024, 1024], [-1, 1, 1])),
            (".workgroup_size_hint", ([0, 0, 0], [2**31, 1, 1], [], [1, 1, 1, 1])),
            (".max_num_workgroups", ([0, 0, 0], [2**32 - 1] * 3, [1])),
            (".cluster_dims", ([0, 0, 0], [2**31] * 3)),
            (".sgpr_spill_count", (2**31, 2**64 - 1)),
            (".vgpr_spill_count", (1, 2**31)),
        )
    )
    k[key] = rng.choice(values)
    return f"{key}={k[key]!r:.40}"


def _names(doc: Any, rng: random.Random) -> str:
    k = _kernel(doc, rng)
    if k is None:
        return "no kernel"
    key = rng.choice((".name", ".symbol", ".name"))
    name = rng.choice(_NAMES)
    k[key] = name + (".kd" if key == ".symbol" and rng.random() < 0.5 else "")
    return f"{key}={k[key]!r:.40}"


def _lists(doc: Any, rng: random.Random) -> str:
    k = _kernel(doc, rng)
    if k is None or not isinstance(doc, dict):
        return "no kernel"
    op = rng.randrange(8)
    ks = doc["amdhsa.kernels"]
    if op == 0:
        ks.append(copy.deepcopy(k))
        return "duplicate kernel"
    if op == 1:
        ks[:] = []
        return "no kernels"
    if op == 2:
        ks[:] = [copy.deepcopy(k) for _ in range(rng.choice((50, 300)))]
        return "many kernels"
    args = k.get(".args")
    if not isinstance(args, list):
        return "args not a list"
    if op == 3:
        args.reverse()
        return "args reversed"
    if op == 4 and args:
        args.append(copy.deepcopy(rng.choice(args)))
        return "duplicate arg"
    if op == 5:
        args[:] = [copy.deepcopy(a) for a in args for _ in range(rng.choice((2, 200)))]
        return "many args"
    if op == 6:
        args.insert(rng.randint(0, len(args)), rng.choice((None, 1, "x", [], {".offset": 0})))
        return "arg not a map"
    ks.insert(rng.randint(0, len(ks)), rng.choice((None, 1, "k", [], {".name": "x"})))
    return "kernel not a map"


def _set_or_drop(doc: Any, rng: random.Random) -> str:
    if not isinstance(doc, dict):
        return "doc not a map"
    where = rng.randrange(4)
    if where == 0:
        target: Any = doc
        key: Any = rng.choice(("amdhsa.version", "amdhsa.target", "amdhsa.kernels", "amdhsa.printf", "x"))
    elif where == 1:
        target, key = _kernel(doc, rng), rng.choice(_KERNEL_KEYS)
    else:
        target, key = _arg(doc, rng)[1], rng.choice(_ARG_KEYS)
    if target is None:
        return "nothing there"
    if rng.random() < 0.3:
        target.pop(key, None)
        return f"drop {key}"
    if rng.random() < 0.1:
        key = rng.choice((b".bytes_key", b"\xff", b"", key.encode()))
    target[key] = hostile_value(rng)
    return f"{key!r}={target[key]!r:.40}"


_META_OPS: tuple[Callable[[Any, random.Random], str], ...] = (
    _set_or_drop,
    _set_or_drop,
    _set_or_drop,
    _lie_layout,
    _lie_layout,
    _absurd_kernel,
    _names,
    _lists,
)


def _raw_desc(doc: Any, rng: random.Random) -> tuple[bytes, str]:
    """Undecodable or odd msgpack: truncated, trailing data, reserved bytes, deep nesting, lying
    container lengths."""
    good = msgpack.packb(doc, use_bin_type=True)
    op = rng.randrange(7)
    if op == 0:
        return good[: rng.randrange(len(good))], "msgpack truncated"
    if op == 5:  # a Timestamp ext (type -1) of a length no Timestamp has
        bad = rng.choice((b"\xc7\x03\xffbad", b"\xd4\xff\x00", b"\xc7\x00\xff"))
        return b"\x82" + msgpack.packb("amdhsa.kernels") + b"\x90" + msgpack.packb("x") + bad, "bad Timestamp"
    if op == 1:
        return good + rng.choice((b"\xc0", b"\x00" * 8, good)), "msgpack trailing data"
    if op == 2:
        d = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] = rng.choice((0xC1, 0xDF, 0xDD, 0xDB, 0xC6, 0xD9, 0xFF))
        return bytes(d), "msgpack reserved/length bytes"
    if op == 3:
        depth = rng.choice((100, 1000, 5000, 100_000))
        return (b"\x81" + msgpack.packb("amdhsa.kernels") + b"\x91" * depth + b"\xc0"), f"nesting {depth}"
    if op == 4:
        return b"\xdf\xff\xff\xff\xff" + good[1:], "map of 2^32-1 entries"
    return msgpack.packb(hostile_value(rng), use_bin_type=True), "not a map"


def meta(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    base = seeds.build_co if command == BUILD else seeds.objects[rng.choice(seeds.names)]
    doc = copy.deepcopy(_meta_doc(base))
    if rng.random() < 0.12:
        desc, what = _raw_desc(doc, rng)
    else:
        what = "; ".join(rng.choice(_META_OPS)(doc, rng) for _ in range(rng.randint(1, 3)))
        packer = msgpack.Packer(
            use_bin_type=rng.random() < 0.8, use_single_float=rng.random() < 0.2, datetime=False
        )
        try:
            desc = packer.pack(doc)
        except (ValueError, OverflowError, TypeError):  # deeper than msgpack packs: pack a shallower one
            desc, what = _raw_desc(_meta_doc(base), rng)
    # one copy in five: only the .note section's or only the PT_NOTE segment's (they then disagree)
    only = rng.choice((None, None, None, "section", "segment"))
    what += f" ({only} only)" if only else ""
    return Case("meta", n, what, with_desc(base, desc, only=only), ".co", command)


# --------------------------------------------------------------------------- elf

_EH = {
    "e_type": (16, "H"),
    "e_machine": (18, "H"),
    "e_version": (20, "I"),
    "e_entry": (24, "Q"),
    "e_phoff": (32, "Q"),
    "e_shoff": (40, "Q"),
    "e_flags": (48, "I"),
    "e_ehsize": (52, "H"),
    "e_phentsize": (54, "H"),
    "e_phnum": (56, "H"),
    "e_shentsize": (58, "H"),
    "e_shnum": (60, "H"),
    "e_shstrndx": (62, "H"),
    "EI_CLASS": (4, "B"),
    "EI_DATA": (5, "B"),
    "EI_VERSION": (6, "B"),
    "EI_OSABI": (7, "B"),
    "EI_ABIVERSION": (8, "B"),
}
_SH = {
    "sh_name": (0, "I"),
    "sh_type": (4, "I"),
    "sh_flags": (8, "Q"),
    "sh_addr": (16, "Q"),
    "sh_offset": (24, "Q"),
    "sh_size": (32, "Q"),
    "sh_link": (40, "I"),
    "sh_info": (44, "I"),
    "sh_addralign": (48, "Q"),
    "sh_entsize": (56, "Q"),
}
_PH = {
    "p_type": (0, "I"),
    "p_flags": (4, "I"),
    "p_offset": (8, "Q"),
    "p_vaddr": (16, "Q"),
    "p_filesz": (32, "Q"),
    "p_memsz": (40, "Q"),
    "p_align": (48, "Q"),
}
_SYM = {
    "st_name": (0, "I"),
    "st_info": (4, "B"),
    "st_other": (5, "B"),
    "st_shndx": (6, "H"),
    "st_value": (8, "Q"),
    "st_size": (16, "Q"),
}
_KD = {
    "group_segment_fixed_size": (0, "I"),
    "private_segment_fixed_size": (4, "I"),
    "kernarg_size": (8, "I"),
    "kernel_code_entry_byte_offset": (16, "q"),
    "compute_pgm_rsrc3": (44, "I"),
    "compute_pgm_rsrc1": (48, "I"),
    "compute_pgm_rsrc2": (52, "I"),
    "kernel_code_properties": (56, "H"),
    "kernarg_preload": (58, "H"),
}


@dataclass(frozen=True)
class _Layout:
    size: int
    shoff: int
    phoff: int
    sections: tuple[tuple[str, int, int, int], ...]  # name, header offset, sh_offset, sh_size
    phdrs: tuple[int, ...]  # header offsets
    symbols: tuple[int, ...]  # file offsets of .dynsym/.symtab entries
    descriptors: tuple[int, ...]  # file offsets of kernel descriptors
    notes: tuple[int, ...]  # file offsets of note headers


@functools.lru_cache(maxsize=32)
def _layout(data: bytes) -> _Layout:
    elf = ELFFile(BytesIO(data))
    shoff, phoff = elf["e_shoff"], elf["e_phoff"]
    secs, syms, kds, notes = [], [], [], []
    for i, s in enumerate(elf.iter_sections()):
        secs.append((s.name, shoff + i * elf["e_shentsize"], s["sh_offset"], s["sh_size"]))
        if s["sh_type"] == "SHT_NOTE":
            notes.append(s["sh_offset"])
        if s["sh_type"] in ("SHT_DYNSYM", "SHT_SYMTAB"):
            syms += [s["sh_offset"] + 24 * j for j in range(1, s.num_symbols())]
            for sym in s.iter_symbols():
                shndx = sym["st_shndx"]
                if sym.name.endswith(".kd") and isinstance(shndx, int) and 0 < shndx < elf.num_sections():
                    home = elf.get_section(shndx)
                    kds.append(home["sh_offset"] + sym["st_value"] - home["sh_addr"])
    phdrs = tuple(phoff + i * elf["e_phentsize"] for i in range(elf["e_phnum"]))
    return _Layout(len(data), shoff, phoff, tuple(secs), phdrs, tuple(syms), tuple(kds), tuple(notes))


def _field_value(rng: random.Random, fmt: str, lay: _Layout) -> int:
    bits = struct.calcsize(fmt) * 8
    top = 2 ** (bits - 1) if fmt.islower() else 2**bits
    near = [lay.size - 1, lay.size, lay.size + 1, lay.shoff, lay.phoff] + [s[2] for s in lay.sections]
    v = rng.choice(
        (
            0,
            1,
            2,
            3,
            64,
            top - 1,
            top // 2,
            rng.randrange(top),
            rng.choice(near),
            rng.choice(near) + rng.choice((-1, 1, 8)),
            len(lay.sections),
            len(lay.sections) + 1,
        )
    )
    return v % top if fmt.isupper() else max(-top, min(top - 1, v))


def _patch(d: bytearray, at: int, fmt: str, value: int) -> None:
    if at >= 0 and at + struct.calcsize(fmt) <= len(d):
        struct.pack_into("<" + fmt, d, at, value)


def _elf_op(d: bytearray, lay: _Layout, rng: random.Random) -> str:
    op = rng.randrange(10)
    if op in (0, 1):
        name, (off, fmt) = rng.choice(sorted(_EH.items()))
        v = _field_value(rng, fmt, lay)
        _patch(d, off, fmt, v)
        return f"{name}={v}"
    if op in (2, 3, 4) and lay.sections:
        sname, hdr, sec_off, sec_size = rng.choice(lay.sections)
        name, (off, fmt) = rng.choice(sorted(_SH.items()))
        if rng.random() < 0.3:  # overlap: point it at another section (or a table)
            other = rng.choice(lay.sections)
            v = other[2] if name != "sh_size" else other[3] + rng.choice((0, 1, lay.size))
            v = rng.choice((v, lay.shoff, lay.phoff, 0))
        else:
            v = _field_value(rng, fmt, lay)
        _patch(d, hdr + off, fmt, v)
        return f"{sname} {name}={v}"
    if op == 5 and lay.phdrs:
        name, (off, fmt) = rng.choice(sorted(_PH.items()))
        v = _field_value(rng, fmt, lay)
        _patch(d, rng.choice(lay.phdrs) + off, fmt, v)
        return f"phdr {name}={v}"
    if op == 6 and lay.symbols:
        name, (off, fmt) = rng.choice(sorted(_SYM.items()))
        v = _field_value(rng, fmt, lay)
        _patch(d, rng.choice(lay.symbols) + off, fmt, v)
        return f"symbol {name}={v}"
    if op == 7 and lay.descriptors:
        name, (off, fmt) = rng.choice(sorted(_KD.items()))
        v = rng.choice((0, 1, 3, 2**15, 2**31, 2**32 - 1, -1, -(2**63), rng.getrandbits(31), 0xFFFF))
        v = v % 2 ** (8 * struct.calcsize(fmt)) if fmt.isupper() else v
        _patch(d, rng.choice(lay.descriptors) + off, fmt, v)
        return f"descriptor {name}={v}"
    if op == 8 and lay.notes:
        name, off = rng.choice((("namesz", 0), ("descsz", 4), ("type", 8)))
        v = rng.choice((0, 1, 3, 2**31, 2**32 - 1, lay.size))
        _patch(d, rng.choice(lay.notes) + off, "I", v)
        return f"note {name}={v}"
    if lay.sections:  # overwrite a section's bytes
        sname, _, sec_off, sec_size = rng.choice(lay.sections)
        fill = rng.choice((b"\0", b"\xff", bytes([rng.randrange(256)])))
        end = min(sec_off + max(sec_size, 1), len(d))
        d[sec_off:end] = fill * (end - sec_off) if sec_off < end else b""
        return f"{sname} bytes={fill!r}"
    return "no-op"


def _truncate(data: bytes, lay: _Layout, rng: random.Random) -> tuple[bytes, str]:
    cuts = [
        0,
        4,
        16,
        63,
        64,
        lay.shoff,
        lay.shoff + 1,
        lay.shoff + 64 * rng.randrange(max(1, len(lay.sections))),
        lay.size - 1,
        rng.randrange(lay.size),
    ] + [s[2] + rng.choice((0, 1, -1, 8)) for s in lay.sections]
    cut = max(0, min(lay.size - 1, rng.choice(cuts)))
    return data[:cut], f"truncated at {cut}"


def elf(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    base = seeds.build_co if command == BUILD else seeds.objects[rng.choice(seeds.names)]
    lay = _layout(base)
    sidecar = None
    if rng.random() < 0.15:
        data, what = _truncate(base, lay, rng)
    else:
        d = bytearray(base)
        what = "; ".join(_elf_op(d, lay, rng) for _ in range(rng.randint(1, 3)))
        data = bytes(d)
    if command in (INSPECT, INSPECT_JSON) and rng.random() < 0.05:
        sidecar = rng.choice(
            (
                b"{}",
                b"[]",
                b'{"shared": -1}',
                b'{"shared": 1e400}',
                b'{"shared": "x"}',
                b'{"shared": 99999999999999999999999}',
                b"[" * 100_000,
                b"\xff",
                b"",
                b'{"shared": true}',
                b'{"shared": 70000}',
            )
        )
        what += f"; sidecar {sidecar[:20]!r}"
    return Case("elf", n, what, data, ".co", command, sidecar=sidecar)


# --------------------------------------------------------------------------- bundle

_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_IDS = (
    "hipv4-amdgcn-amd-amdhsa--gfx950",
    "hipv4-amdgcn-amd-amdhsa--gfx942",
    "hip-amdgcn-amd-amdhsa--gfx950",
    "hipv4-amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-",
    "hipv4-amdgcn-amd-amdhsa--gfx9-4-generic",
    "openmp-amdgcn-amd-amdhsa--gfx950",
    "hipv4-amdgcn-amd-amdhsa--",
    "hipv4",
    "",
    "-",
    "---------",
    "hipv4-amdgcn-amd-amdhsa--gfx9999",
    "hipv4-amdgcn-amd-amdhsa-unknown-gfx950",
    "host-x86_64-unknown-linux-gnu-",
    "hipv4-amdgcn-amd-amdhsa--GFX950",
    "hipv4-amdgcn-amd-amdhsa--gfx950:" + "x" * 900,
)
_ARCHES = ("gfx950", "gfx942", "gfx9-4-generic", "gfx950:xnack+", "junk", "gfx", ":", "GFX950", "sm_90")


def bundle_bytes(entries: list[tuple[bytes, bytes]], align: int) -> tuple[bytes, list[int]]:
    """An offload bundle of (id, content) entries, and the byte offset of each entry's header."""
    table = len(_MAGIC) + 8 + sum(24 + len(eid) for eid, _ in entries)
    offsets, pos = [], table
    for _, blob in entries:
        pos = -(-pos // align) * align if blob else pos
        offsets.append(pos)
        pos += len(blob)
    out = bytearray(_MAGIC + struct.pack("<Q", len(entries)))
    heads = []
    for (eid, blob), off in zip(entries, offsets):
        heads.append(len(out))
        out += struct.pack("<QQQ", off, len(blob), len(eid)) + eid
    for (_, blob), off in zip(entries, offsets):
        out += b"\0" * (off - len(out)) + blob
    return bytes(out), heads


def ccob(payload: bytes, rng: random.Random | None = None) -> tuple[bytes, str]:
    """A compressed offload bundle around ``payload`` (zlib); with ``rng``, a lying header."""
    body = zlib.compress(payload, 6)
    version, method = 2, 0
    if rng is None:
        return b"CCOB" + struct.pack(
            "<HHIIQ", version, method, 24 + len(body), len(payload), 0
        ) + body, "ccob"
    version = rng.choice((1, 2, 3, 2, 0, 4, 0xFFFF))
    method = rng.choice((0, 0, 0, 1, 0xFFFF))
    size = rng.choice((len(payload), 0, 2**32 - 1, 2**64 - 1))
    head = {
        1: struct.pack("<HHIQ", version, method, size % 2**32, 0),
        2: struct.pack("<HHIIQ", version, method, 24 + len(body), size % 2**32, 0),
        3: struct.pack("<HHQQQ", version, method, 32 + len(body), size, 0),
    }.get(version, struct.pack("<HH", version, method))
    if rng.random() < 0.3:
        body = body[: rng.randrange(len(body) + 1)]
    elif rng.random() < 0.2:
        body = bytes(b ^ 0x55 for b in body)
    return b"CCOB" + head + body, f"ccob v{version} m{method} size {size}"


def bundle(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    pool = [seeds.build_co] if command == BUILD else [seeds.objects[k] for k in seeds.names]
    entries = [(b"host-x86_64-unknown-linux-gnu-", b"")] if rng.random() < 0.7 else []
    for _ in range(rng.randint(1, 3)):
        eid = rng.choice(_IDS[:5]) if rng.random() < 0.7 else rng.choice(_IDS)
        entries.append((eid.encode(), rng.choice(pool)))
    notes = []
    if rng.random() < 0.2:  # duplicate triples
        entries.append(rng.choice(entries[-1:]))
        notes.append("duplicate entry")
    if rng.random() < 0.1:
        entries.append((rng.choice((b"\xff\xfe", "hipv4-\u00e9".encode(), b"hip\0v4")), rng.choice(pool)))
        notes.append("non-ASCII id")
    if rng.random() < 0.15:  # an entry's content mutated, another bundle, or junk
        i = rng.randrange(len(entries))
        inner = rng.choice(("elf", "bundle", "junk"))
        if inner == "elf":
            d = bytearray(entries[i][1] or seeds.build_co)
            notes.append("entry " + _elf_op(d, _layout(entries[i][1] or seeds.build_co), rng))
            blob = bytes(d)
        elif inner == "bundle":
            blob = bundle_bytes(entries[:i] + [(b"hipv4-amdgcn-amd-amdhsa--gfx950", seeds.build_co)], 8)[0]
            notes.append("nested bundle")
        else:
            blob = rng.randbytes(rng.choice((1, 64, 4096)))
            notes.append("junk entry")
        entries[i] = (entries[i][0], blob)
    data, heads = bundle_bytes(entries, rng.choice((1, 8, 4096)))
    d = bytearray(data)
    for _ in range(rng.randint(0, 3)):
        field = rng.choice(("count", "offset", "size", "idlen"))
        v = rng.choice(
            (
                0,
                1,
                len(d) - 1,
                len(d),
                len(d) + 1,
                2**32,
                2**63,
                2**64 - 1,
                1025,
                len(entries) + 1,
                rng.choice(heads),
                32,
            )
        )
        at = (
            len(_MAGIC)
            if field == "count"
            else rng.choice(heads) + {"offset": 0, "size": 8, "idlen": 16}[field]
        )
        struct.pack_into("<Q", d, at, v)
        notes.append(f"{field}={v}")
    data = bytes(d)
    if rng.random() < 0.1:
        data = data[: rng.randrange(len(data))]
        notes.append(f"truncated to {len(data)}")
    if rng.random() < 0.12:
        data, how = ccob(data, rng)
        notes.append(how)
    options = ("--arch", rng.choice(_ARCHES)) if command != BUILD and rng.random() < 0.25 else ()
    return Case("bundle", n, "; ".join(notes) or "well formed", data, ".bundle", command, options)


# --------------------------------------------------------------------------- python literals

_CODECS = ("raw", "zlib", "gzip", "xz", "lzma-alone", "bz2")


def compress(codec: str, data: bytes) -> bytes:
    if codec == "zlib":
        return zlib.compress(data, 6)
    if codec == "gzip":
        return gzip.compress(data, 6, mtime=0)
    if codec == "xz":
        return lzma.compress(data, preset=1)
    if codec == "lzma-alone":
        return lzma.compress(data, format=lzma.FORMAT_ALONE, preset=1)
    if codec == "bz2":
        return bz2.compress(data, 1)
    return data


_MAGICS = (
    b"\x78\x9c",
    b"\x78\xda",
    b"\x1f\x8b\x08\x00",
    b"\xfd7zXZ\x00",
    b"\x5d\x00\x00\x80\x00",
    b"BZh9",
    b"CCOB",
    b"\x7fELF",
    _MAGIC,
)


def _payload(seeds: Seeds, rng: random.Random, command: str) -> tuple[bytes, str]:
    obj = seeds.build_co if command == BUILD else seeds.objects[rng.choice(seeds.names)]
    kind = rng.randrange(10)
    if kind <= 1:
        d = bytearray(obj)
        what = _elf_op(d, _layout(obj), rng)
        return bytes(d), f"object ({what})"
    if kind == 2:
        return bundle_bytes([(b"hipv4-amdgcn-amd-amdhsa--gfx950", obj)], 8)[0], "bundle"
    if kind == 3:
        return ccob(bundle_bytes([(b"hipv4-amdgcn-amd-amdhsa--gfx950", obj)], 8)[0])[0], "ccob"
    if kind == 4:
        return rng.randbytes(rng.choice((1, 30, 5000))), "random bytes"
    if kind == 5:
        return obj[: rng.randrange(len(obj))], "truncated object"
    return obj, "object"


def _encode(rng: random.Random, raw: bytes) -> tuple[str, str]:
    """base64 of ``raw``, maybe hostile: urlsafe, unpadded, wrapped, with foreign characters, a
    flipped or dropped character."""
    text = (base64.urlsafe_b64encode if rng.random() < 0.15 else base64.b64encode)(raw).decode()
    op = rng.randrange(9)
    if op == 0 and text:
        i = rng.randrange(len(text))
        return text[:i] + rng.choice("AZaz09+/-_=") + text[i + 1 :], "flipped char"
    if op == 1:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(("!", "*", "\u00e9", "\\x00", " ", "==", "\\n", "\u0660")) + text[
            i:
        ], "foreign char"
    if op == 2:
        return text[: rng.randrange(len(text) + 1)], "truncated text"
    if op == 3:
        return text.rstrip("="), "no padding"
    if op == 4:
        return "\n".join(text[i : i + 76] for i in range(0, len(text), 76)), "wrapped"
    return text, "clean"


def _literal(rng: random.Random, text: str) -> tuple[str, str]:
    """``text`` as a Python expression: plain, implicit or + concatenation, joins, bytes, f-string,
    nested parentheses, triple quotes."""
    pieces = [text[i : i + 100] for i in range(0, len(text), 100)] or [""]
    form = rng.randrange(11)
    if form == 0:
        return "(\n" + "\n".join(f'    "{p}"' for p in pieces) + "\n)", "implicit"
    if form == 1:
        chunk = max(1, len(text) // rng.choice((2, 50, 3000)))
        parts = [text[i : i + chunk] for i in range(0, len(text), chunk)] or [""]
        return " + ".join(repr(p) for p in parts), f"+ chain of {len(parts)}"
    if form == 2:
        depth = rng.choice((1, 3, 8, 9, 20))
        expr = repr(pieces)
        for _ in range(depth - 1):
            expr = f'"".join([{expr[1:-1] if expr.startswith("[") else expr}])'
        return f'"".join({expr})' if expr.startswith("[") else expr, f"join depth {depth}"
    if form == 3:
        return "b" + repr(text), "bytes"
    if form == 4:
        return f'f"{text}{{1}}"', "f-string"
    if form == 5:
        depth = rng.choice((10, 300, 1200))
        return "(" * depth + repr(text) + ")" * depth, f"parens {depth}"
    if form == 6:
        return '"""' + "\n".join(pieces) + '"""', "triple quoted"
    if form == 7:
        return f"{repr(text)} + name", "with a name"
    if form == 8:
        return f'"".join(["{text[: len(text) // 2]}", x, "{text[len(text) // 2 :]}"])', "join with a name"
    return repr(text), "plain"


def _template(rng: random.Random, expr: str) -> str:
    head = rng.choice(("#!POPCORN leaderboard amd-mxfp4-mm\n#!POPCORN gpu MI355X\n", "", "# just a file\n"))
    return f"{head}import torch\n\n_BLOB = {expr}\n\n\ndef custom_kernel(data):\n    return data[0]\n"


_SHA = re.compile(r'^        "([0-9a-f]{64})",\n        \((\d+)', re.M)  # a blob's sha256, its first size
_BLOB_TEXT = re.compile(r'^        "(?![0-9a-f]{64}")([A-Za-z0-9+/=]{24,})",$', re.M)  # a blob's base64


def _submission_edit(seeds: Seeds, rng: random.Random, command: str) -> tuple[str, str]:
    """The real submission with its sha256, size, blob or provenance line changed."""
    text = seeds.submission
    op = rng.randrange(6)
    if op == 0:
        return _SHA.sub(
            lambda m: m.group(0).replace(m.group(1), rng.randbytes(32).hex()), text, count=1
        ), "sha256 mismatch"
    if op == 1:
        return _SHA.sub(
            lambda m: m.group(0)[: m.start(2) - m.start(0)] + str(rng.choice((0, 1, 2**63, 10**30))),
            text,
            count=1,
        ), "size mismatch"
    if op == 2:
        obj = seeds.objects[rng.choice(seeds.names)]
        blob = base64.b64encode(compress(rng.choice(_CODECS[1:]), obj)).decode()
        return _BLOB_TEXT.sub(lambda m: f'        "{blob}",', text, count=1), "another object's blob"
    if op == 3:
        m = _BLOB_TEXT.search(text)
        assert m is not None
        blob = m.group(1)
        i = m.start(1) + rng.randrange(len(blob))
        return text[:i] + rng.choice(("A", "!", "", '"', "\\")) + text[i + 1 :], "blob char changed"
    if op == 4:
        field = rng.choice(
            (
                "lds=mm_tile:-1",
                "lds=mm_tile:99999999999999999999999",
                "lds=mm_tile:abc,mm_reduce:",
                "lds=:5",
                "lds=mm_tile:1e9",
                "co=" + ",".join(["%ZZ"] * 2000),
                "kernels=%00%0A",
                "=",
                "lds",
                "lds=mm_tile:70000,mm_tile:0",
                "lds=" + "x:" * 5000,
            )
        )
        return text.replace(
            "# submitgen-provenance: ", f"# submitgen-provenance: {field} ", 1
        ), f"provenance {field}"
    return text.replace(
        "#!POPCORN leaderboard amd-mxfp4-mm",
        rng.choice(
            (
                "#!POPCORN leaderboard amd-mixed-mla",
                "#!POPCORN leaderboard",
                "#!POPCORN leaderboard \u00e9",
                "# !POPCORN leaderboard x",
                "#!POPCORN gpu MI355X",
            )
        ),
        1,
    ), "header changed"


def _file_level(rng: random.Random, text: str) -> tuple[bytes, str]:
    op = rng.randrange(10)
    raw = text.encode("utf-8", "surrogatepass")
    if op == 0:
        return b"\xef\xbb\xbf" + raw, "BOM"
    if op == 1:
        i = rng.randrange(len(raw))
        return raw[:i] + b"\0" + raw[i:], "NUL byte"
    if op == 2:
        i = rng.randrange(len(raw))
        return raw[:i] + b"\xff\xfe" + raw[i:], "not UTF-8"
    if op == 3:
        return b"# -*- coding: latin-1 -*-\n" + text.encode("latin-1", "replace"), "latin-1 cookie"
    if op == 4:
        return raw.replace(b"\n", b"\r\n"), "CRLF"
    if op == 5:
        return raw[: rng.randrange(len(raw))], "truncated file"
    if op == 6:
        return raw + b"\n" + b"X = 'a'\n" * rng.choice((1000, 5000)), "many literals"
    return raw, ""


def pyliteral(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    if rng.random() < 0.15:
        text, what = _submission_edit(seeds, rng, command)
    elif rng.random() < 0.02:
        size = rng.choice((1 << 20, 1 << 20, 3 << 20))
        text, what = (
            _template(rng, f'"{rng.choice("AQ/")}" * 0 + "' + "A" * size + '"'),
            f"huge literal {size}",
        )
    else:
        payload, what = _payload(seeds, rng, command)
        codec = rng.choice(_CODECS)
        packed = compress(codec, payload)
        if rng.random() < 0.15:  # the wrong codec header, or a truncated stream
            if rng.random() < 0.5:
                magic = rng.choice(_MAGICS)
                packed = magic + packed[len(magic) :]
                what += f"; header {magic!r}"
            else:
                packed = packed[: rng.randrange(len(packed) + 1)]
                what += "; truncated stream"
        if rng.random() < 0.05:
            packed = compress(rng.choice(_CODECS[1:]), packed)
            what += "; compressed twice"
        btext, how = _encode(rng, packed)
        expr, form = _literal(rng, btext)
        text, what = _template(rng, expr), f"{what}; {codec}; {how}; {form}"
    data, level = (
        _file_level(rng, text) if rng.random() < 0.3 else (text.encode("utf-8", "surrogatepass"), "")
    )
    options = ("--problem", "mxfp4-mm") if command == LINT and rng.random() < 0.5 else ()
    return Case("pyliteral", n, f"{what}; {level}".rstrip("; "), data, ".py", command, options)


# --------------------------------------------------------------------------- bombs

_BOMB_CODECS = ("zlib", "gzip", "xz", "lzma-alone", "bz2", "ccob")


@functools.lru_cache(maxsize=16)
def bomb(codec: str, size: int) -> bytes:
    """``size`` bytes (an ELF magic, then zeros) compressed with ``codec`` (made once)."""
    chunk = b"\0" * (1 << 20)
    head = b"\x7fELF"
    if codec in ("zlib", "gzip", "ccob"):
        c = zlib.compressobj(9, zlib.DEFLATED, 31 if codec == "gzip" else 15)
    elif codec == "bz2":
        c = bz2.BZ2Compressor(9)
    else:
        c = lzma.LZMACompressor(format=lzma.FORMAT_XZ if codec == "xz" else lzma.FORMAT_ALONE, preset=0)
    parts, left = [c.compress(head)], size - len(head)
    while left > 0:
        parts.append(c.compress(chunk[:left]))
        left -= len(chunk)
    body = b"".join(parts) + c.flush()
    if codec == "ccob":
        return b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(body), size, 0) + body
    return body


def bomb_case(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    codec = _BOMB_CODECS[n % len(_BOMB_CODECS)]
    size = MAX_DECODED_SIZE + 4096 if rng.random() < 0.85 else MAX_DECODED_SIZE
    data = bomb(codec, size)
    if codec == "ccob" and rng.random() < 0.5:
        return Case("bomb", n, f"ccob file {size}", data, ".bundle", command)
    btext = base64.b64encode(data).decode()
    expr, form = _literal(rng, btext) if rng.random() < 0.5 else (repr(btext), "plain")
    return Case("bomb", n, f"{codec} {size}; {form}", _template(rng, expr).encode(), ".py", command)


# --------------------------------------------------------------------------- plan outputs by storage
_OUT = "out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)"
_PARTIAL = "partial = torch.empty((splits, m, n), dtype=torch.float32, device=a.device)"
_STORAGE = (
    ("stride 0", _OUT,
     "out = torch.empty((1,), dtype=torch.bfloat16, device=a.device).as_strided((m, n), {s})"),
    ("expand", _OUT, "out = torch.empty({one}, dtype=torch.bfloat16, device=a.device).expand(m, n)"),
    ("meta device", _OUT, 'out = torch.empty((m, n), dtype=torch.bfloat16, device="{dev}")'),
    ("set_ onto an input", _OUT, "out = torch.empty(0, dtype=torch.bfloat16, device=a.device); "
     "out.set_({src}.untyped_storage(), 0, (m, n), (n, 1))"),
    ("unwritten", '"out": out,', '"out": {other},'),
    ("column-major", _OUT, "out = torch.empty((n, m), dtype=torch.bfloat16, device=a.device).{t}"),
    ("workspace stride 0", _PARTIAL,
     "partial = torch.empty((1,), dtype=torch.float32, device=a.device)"
     ".as_strided((splits, m, n), (0, 0, 0))"),
    ("workspace device", _PARTIAL,
     'partial = torch.empty((splits, m, n), dtype=torch.float32, device="{dev}")'),
)


def storage(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    what, old, new = _STORAGE[n % len(_STORAGE)]
    new = new.format(s=rng.choice(("(0, 0)", "(0, 1)", "(1, 0)")), one=rng.choice(("(1, 1)", "(1,)", "()")),
                     dev=rng.choice(("meta", "cpu")), src=rng.choice(("b", "a")),
                     other=rng.choice(("partial", "b", "a")), t=rng.choice(("t()", "T", "transpose(0, 1)")))
    if what == "meta device" and '"meta"' in new or what == "workspace device" and '"meta"' in new:
        what += " (hard-coded meta)"
    return Case("storage", n, f"{what}: {new}", seeds.build_co, ".co", BUILD, plan=(old, new), expect=1)


# --------------------------------------------------------------------------- sizes near every bound
def _padded_note(base: bytes, size: int) -> bytes:
    from elfedit import _metadata_note

    doc = msgpack.unpackb(_metadata_note(base)[2], raw=False)
    pad = size
    while True:
        doc["sg.pad"] = "x" * pad
        packed = msgpack.packb(doc)
        if len(packed) == size:
            return packed
        pad -= len(packed) - size


def _args(count: int) -> Callable[[Any], None]:
    def edit(doc: Any) -> None:
        k = doc["amdhsa.kernels"][0]
        k[".args"] = [{".offset": 4 * i, ".size": 4, ".value_kind": "by_value"} for i in range(count)]
        k[".kernarg_segment_size"] = 4 * count
    return edit


def _kernarg(size: int) -> Callable[[Any], None]:
    def edit(doc: Any) -> None:
        doc["amdhsa.kernels"][0][".kernarg_segment_size"] = size
    return edit


def _py_of_size(size: int) -> bytes:
    head = b"import torch\n"
    return head + b"#" * (size - len(head) - 1) + b"\n"


def _py_decoding_to(total: int) -> bytes:
    half = MAX_DECODED_SIZE // 2
    lines = ["import torch", ""]
    for i, size in enumerate((half, total - half)):
        blob = base64.b64encode(zlib.compress(b"\x7fELF" + bytes(size - 4), 9)).decode()
        lines.append(f"_B{i} = {blob!r}")
    return ("\n".join(lines) + "\n").encode()


def bounds(seeds: Seeds, n: int, rng: random.Random, command: str) -> Case:
    from elfedit import with_metadata

    from submitgen.readers.amd.checks import MAX_KERNARG_SEGMENT_SIZE
    from submitgen.readers.amd.metadata import MAX_ARGS, MAX_NOTE_SIZE
    from submitgen.readers.containers import MAX_PY_FILE_SIZE, MAX_TOTAL_DECODED

    over = n % 2 == 1  # even: at the bound; odd: one past it
    kind = ("kernarg", "note", "args", "py size", "py decoded")[(n // 2) % 5]
    base = seeds.build_co if rng.random() < 0.5 else seeds.objects[seeds.names[0]]
    command = (INSPECT, INSPECT_JSON, DIFF)[n // 10 % 3]
    expect = 1 if over else 0
    if kind == "kernarg":
        data, suffix = with_metadata(base, _kernarg(MAX_KERNARG_SEGMENT_SIZE + over)), ".co"
        expect = 1 if over or command == DIFF else None  # at the bound: other findings may remain
    elif kind == "note":
        data, suffix = with_desc(base, _padded_note(base, MAX_NOTE_SIZE + over)), ".co"
        expect = 1 if over else None
    elif kind == "args":
        data, suffix = with_metadata(base, _args(MAX_ARGS + over)), ".co"
        expect = 1 if over else None
    elif kind == "py size":
        data, suffix = _py_of_size(MAX_PY_FILE_SIZE + over), ".py"
        command, expect = (LINT, INSPECT)[n // 10 % 2], 1  # no code object in it: inspect refuses it too
        if command == LINT and not over:
            expect = 1  # at the leaderboard's 1 MB: read, and failed for its header and custom_kernel
    else:
        data, suffix = _py_decoding_to(MAX_TOTAL_DECODED + over * 1024), ".py"
        expect = 1 if over else None
    if command == DIFF:
        expect = 1 if over else None
    return Case("bounds", n, f"{kind} {'past' if over else 'at'} the bound", data, suffix, command,
                expect=expect)


# --------------------------------------------------------------------------- the plan of cases

CATEGORIES: dict[str, Callable[[Seeds, int, random.Random, str], Case]] = {
    "meta": meta,
    "elf": elf,
    "bundle": bundle,
    "pyliteral": pyliteral,
    "bomb": bomb_case,
    "storage": storage,
    "bounds": bounds,
}
# Cases per category, and the command each case runs: a cycle, with `build --co` every BUILD_EVERY-th.
COUNTS = {"meta": 6500, "elf": 8000, "bundle": 4500, "pyliteral": 1500, "bomb": 36, "storage": 16,
          "bounds": 20}
# The suite's fixed sample: the first cases of each category, a fifth of the large ones and every
# bomb, storage and bounds case (each case draws its mutations from a generator seeded by its own
# name, so the first N are as random as any N, and they hold every step of each command cycle and
# of build --co). `SUBMITGEN_FUZZ_CASES=all` runs all of COUNTS.
SAMPLE = {"meta": 1300, "elf": 1600, "bundle": 900, "pyliteral": 300, "bomb": 36, "storage": 16, "bounds": 20}
BUILD_EVERY = {"meta": 80, "elf": 150, "bundle": 100, "pyliteral": 60, "bomb": 6, "storage": 1,
               "bounds": 10**9}
_CYCLE = {
    "meta": (INSPECT, INSPECT_JSON, DIFF, INSPECT_JSON, INSPECT),
    "elf": (INSPECT, INSPECT_JSON, DIFF, INSPECT, INSPECT_JSON, LINT),
    "bundle": (INSPECT, INSPECT_JSON, DIFF),
    "pyliteral": (INSPECT, INSPECT_JSON, DIFF, LINT),
    "bomb": (INSPECT, INSPECT_JSON, DIFF, LINT),
    "storage": (BUILD,),
    "bounds": (INSPECT,),  # bounds() picks the command
}


def command_for(category: str, n: int) -> str:
    if n % BUILD_EVERY[category] == BUILD_EVERY[category] - 1:
        return BUILD
    cycle = _CYCLE[category]
    return cycle[n % len(cycle)]


def make(category: str, n: int, seeds: Seeds) -> Case:
    """The n-th case of ``category`` (deterministic)."""
    rng = random.Random(f"{category}:{n}")
    return CATEGORIES[category](seeds, n, rng, command_for(category, n))

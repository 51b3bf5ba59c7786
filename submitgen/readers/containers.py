"""Where code objects come from: a bare ELF, a clang offload bundle, or a Python submission.

``load_code_objects(path_or_bytes, arch=...)`` returns every code object a source holds, each
with its provenance (file, bundle entry, Python line and encoding). A path must name a regular
file; it is read once, bounded before the read (``read_input``). Python files are read
statically (``pysource``: never imported or run)."""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from submitgen import rules
from submitgen.errors import CodeObjectError, ContainerError
from submitgen.readers import elf
from submitgen.readers.amd import processors
from submitgen.readers.amd.header import parse_header
from submitgen.readers.amd.reader import read_code_object
from submitgen.readers.base import ObjectInfo
from submitgen.readers.cuda.cubin import EM_CUDA, parse_cubin_header, read_cubin
from submitgen.readers.joined import split_joined
from submitgen.readers.pycoding import decode_python
from submitgen.readers.pysource import (
    BUNDLE_MAGIC,
    CCOB_MAGIC,
    MAX_DECODED_SIZE,
    Literal,
    bounded,
    decode_blob,
    is_container,
    python_literals,
)
from submitgen.system import Refused, read_regular

MAX_FILE_SIZE = 256 * 1024 * 1024
# A .py is a leaderboard submission, capped at 1 MB (rules.py): inspect and diff read one up to that,
# as lint does (lint.READ_LIMIT), and read no larger file of another name as Python. The costliest
# source under it to parse takes ~0.9 GB, within the budgets (submitgen/system.py).
MAX_PY_FILE_SIZE = rules.SIZE_LIMIT
# All blobs of one .py together: a 1 MB file holds at most ~750 KB of base64 payload, which real
# code objects (lzma, zlib: 3-6x) decode to a few MB; each blob alone is bounded by pysource.
MAX_TOTAL_DECODED = 64 * 1024 * 1024


def read_object(data: bytes, label: str) -> ObjectInfo:
    """The AMD code object or NVIDIA cubin ``data`` is, by its ELF ``e_machine``; an object of any
    other machine is read by the AMD reader, which names the machine it expected."""
    if elf.e_machine(data) == EM_CUDA:
        return read_cubin(data, label=label)
    return read_code_object(data, label=label)


@dataclass(frozen=True)
class BundleEntry:
    id: str  # e.g. "hipv4-amdgcn-amd-amdhsa--gfx950:sramecc+"
    offset: int
    size: int

    @property
    def triple(self) -> str:
        return "-".join(self.id.split("-", 1)[-1].split("-")[:4])

    @property
    def target_id(self) -> str:
        """``gfx950:sramecc+`` (empty for the host entry)."""
        return "-".join(self.id.split("-", 1)[-1].split("-")[4:])

    @property
    def processor(self) -> str:
        return self.target_id.split(":", 1)[0]

    @property
    def is_device(self) -> bool:
        return self.triple.startswith("amdgcn-amd-amdhsa") and self.size > 0


@dataclass(frozen=True)
class LoadedCodeObject:
    """One code object's bytes and where they came from."""

    data: bytes
    path: str  # file path, or "<bytes>"
    container: str  # "elf" | "bundle" | "python"
    bundle_entry: str | None = None
    python_line: int | None = None
    encoding: str | None = None  # "base64", "zlib+base64", ...

    @property
    def provenance(self) -> str:
        """``sub.py:12 (zlib+base64) > bundle entry hipv4-amdgcn-amd-amdhsa--gfx950``."""
        s = self.path
        if self.python_line is not None:
            s += f":{self.python_line}"
        if self.encoding:
            s += f" ({self.encoding})"
        if self.bundle_entry:
            s += f" > bundle entry {self.bundle_entry}"
        return s

    def read(self) -> ObjectInfo:
        """The AMD code object or NVIDIA cubin these bytes are (both give ``kernelinfo``'s interface)."""
        return read_object(self.data, self.provenance)


# --------------------------------------------------------------------------- arch matching


def arch_matches(processor: str, arch: str) -> bool:
    """Does code for ``processor`` (maybe generic) run on ``arch`` (``gfx950`` or a target ID)?"""
    want = arch.split(":", 1)[0].strip().lower()
    return processor == want or want in processors.GENERIC_COVERS.get(processor, ())


# --------------------------------------------------------------------------- bundles


def list_bundle(data: bytes, label: str = "<bytes>") -> list[BundleEntry]:
    """Entries of an uncompressed clang offload bundle, bounds-checked."""
    if not data.startswith(BUNDLE_MAGIC):
        raise ContainerError(f"{label}: not a clang offload bundle: expected magic {BUNDLE_MAGIC.decode()}")
    n = len(data)
    pos = len(BUNDLE_MAGIC)
    if n < pos + 8:
        raise ContainerError(f"{label}: truncated offload bundle: expected an entry count at byte {pos}, "
                             f"file has {n} bytes")
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    if count == 0 or count > (n - pos) // 24:
        raise ContainerError(f"{label}: offload bundle entry count: expected 1..{max(0, (n - pos) // 24)} "
                             f"for {n} bytes, got {count}")
    entries = []
    for i in range(count):
        if pos + 24 > n:
            raise ContainerError(f"{label}: truncated offload bundle: entry {i} header at byte {pos} "
                                 f"past the end ({n} bytes)")
        off, size, idlen = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if idlen > 1024 or pos + idlen > n:
            raise ContainerError(f"{label}: offload bundle entry {i}: id length {idlen} runs past the "
                                 f"end ({n} bytes)")
        raw_id = data[pos:pos + idlen]
        pos += idlen
        try:
            eid = raw_id.decode("ascii")
        except UnicodeDecodeError:
            raise ContainerError(
                f"{label}: offload bundle entry {i}: id is not ASCII: {raw_id[:40]!r}"
            ) from None
        if off + size > n:
            raise ContainerError(f"{label}: offload bundle entry {i} ({eid}): bytes {off}..{off + size} "
                                 f"run past the end ({n} bytes)")
        entries.append(BundleEntry(eid, off, size))
    return entries


def decompress_ccob(data: bytes, label: str = "<bytes>", limit: int = MAX_DECODED_SIZE) -> bytes:
    """A compressed offload bundle (``CCOB``) -> the uncompressed bundle bytes (zlib only)."""
    if len(data) < 8:
        raise ContainerError(f"{label}: truncated compressed bundle: {len(data)} bytes")
    version, method = struct.unpack_from("<HH", data, 4)
    # magic, version, method, the sizes (v1: 32-bit uncompressed; v2: 32-bit file and uncompressed;
    # v3: 64-bit file and uncompressed), the 64-bit hash
    hdr = {1: 4 + 2 + 2 + 4 + 8, 2: 4 + 2 + 2 + 4 + 4 + 8, 3: 4 + 2 + 2 + 8 + 8 + 8}.get(version)
    if hdr is None:
        raise ContainerError(f"{label}: compressed bundle version: expected 1, 2 or 3, got {version}")
    if len(data) < hdr:
        raise ContainerError(
            f"{label}: truncated compressed bundle: header needs {hdr} bytes, got {len(data)}"
        )
    if method != 0:
        raise ContainerError(f"{label}: compressed bundle method {method} (zstd) is not supported: "
                             "expected 0 (zlib); unbundle it with clang-offload-bundler")
    out = bounded(zlib.decompressobj, data[hdr:], "zlib", label, limit)
    if out is None:
        raise ContainerError(f"{label}: compressed bundle: zlib data is corrupt")
    return out


def _from_bundle(data: bytes, path: str, arch: str | None, src: str,
                 fields: dict[str, Any]) -> list[LoadedCodeObject]:
    entries = list_bundle(data, src)
    devices = [e for e in entries if e.is_device]
    if not devices:
        raise ContainerError(f"{src}: offload bundle has no AMDGPU code object entry; entries: "
                             f"{', '.join(e.id for e in entries)}")
    picked = [e for e in devices if arch is None or arch_matches(e.processor, arch)]
    if not picked:
        raise ContainerError(f"{src}: offload bundle has no entry for {arch}; it has "
                             f"{', '.join(e.id for e in devices)}")
    return [LoadedCodeObject(data[e.offset:e.offset + e.size], path, bundle_entry=e.id,
                             **{"container": "bundle", **fields}) for e in picked]


def _from_python(lits: list[Literal], path: str, arch: str | None) -> list[LoadedCodeObject]:
    found: list[LoadedCodeObject] = []
    arch_misses: list[str] = []
    total = 0
    for lit in lits:
        got = decode_blob(lit.text, f"{path}:{lit.line}")
        if got is None:
            continue
        enc, blob = got
        total += len(blob)
        if total > MAX_TOTAL_DECODED:
            raise ContainerError(f"{path}:{lit.line}: the file's embedded blobs decode to more than "
                                 f"{MAX_TOTAL_DECODED} bytes together (the bound on a .py's total)")
        try:
            found.extend(_from_bytes(blob, path, arch, f"{path}:{lit.line}",
                                     {"container": "python", "python_line": lit.line, "encoding": enc}))
        except ContainerError as e:
            if arch is None:
                raise
            arch_misses.append(str(e))
    if not found:
        if arch_misses:
            raise ContainerError(arch_misses[0])
        raise ContainerError(
            f"{path}: no code object found: none of its {len(lits)} string literals decodes from base64 "
            "(or base64 of zlib/gzip/lzma/bz2) to an ELF code object or an offload bundle"
        )
    return found


# --------------------------------------------------------------------------- entry points


def _from_bytes(data: bytes, path: str, arch: str | None, label: str,
                fields: dict[str, Any]) -> list[LoadedCodeObject]:
    if data.startswith(elf.ELF_MAGIC):
        joined = split_joined(data)  # a submission may embed several code objects in one text
        if len(joined) > 1:
            return [obj for image in joined for obj in _from_bytes(image, path, arch, label, fields)]
        if arch is not None:
            try:
                cuda = elf.e_machine(data) == EM_CUDA
                proc = (parse_cubin_header if cuda else parse_header)(data, label).processor
            except CodeObjectError:
                proc = None  # read() reports the header problem itself
            if proc is not None and not arch_matches(proc, arch):
                raise ContainerError(f"{label}: code object is for {proc}, expected {arch}")
        return [LoadedCodeObject(data, path, **{"container": "elf", **fields})]
    if data.startswith(BUNDLE_MAGIC):
        return _from_bundle(data, path, arch, label, fields)
    if data.startswith(CCOB_MAGIC):
        return _from_bundle(decompress_ccob(data, label), path, arch, label, fields)
    raise ContainerError(f"{label}: not an ELF code object, an offload bundle or a Python file: "
                         f"starts with {data[:8].hex() or 'nothing (empty)'}")


def read_input(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (checked before reading), through
    the one bounded reader (:func:`submitgen.system.read_regular`)."""
    limit = MAX_FILE_SIZE if limit is None else limit
    try:
        return read_regular(path, limit)
    except Refused as r:
        if r.reason == "missing":
            raise ContainerError(f"{path}: no such file") from None
        if r.reason == "unreadable":
            raise ContainerError(f"{path}: cannot read: {r.detail}") from None
        if r.reason == "too-large":
            raise ContainerError(f"{path}: {r.size} bytes is larger than the {limit}-byte limit") from None
        if r.reason == "grew":
            raise ContainerError(f"{path}: grew past the {limit}-byte limit while being read") from None
        raise ContainerError(f"{path}: not a regular file ({r.detail}): expected a code object, an offload "
                             "bundle or a Python file") from None


def load_code_objects(
    source: str | os.PathLike[str] | bytes, *, arch: str | None = None
) -> list[LoadedCodeObject]:
    """Every code object that ``source`` (a path, or the bytes of a file) holds, filtered to
    those that run on ``arch`` when given. Raises ``ContainerError`` when there is none."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, path, is_py = bytes(source), "<bytes>", False
    else:
        path = str(source)
        is_py = Path(source).suffix == ".py"
        data = read_input(source, MAX_PY_FILE_SIZE if is_py else None)
    if not data:
        raise ContainerError(
            f"{path}: empty file: expected an ELF code object, an offload bundle or a Python file"
        )
    if not is_py and is_container(data):
        return _from_bytes(data, path, arch, path, {})
    if not is_py and len(data) > MAX_PY_FILE_SIZE:
        raise ContainerError(f"{path}: not an ELF code object or an offload bundle (starts with "
                             f"{data[:8].hex()}), and at {len(data):,} bytes too large to be read as a "
                             f"Python file (at most {MAX_PY_FILE_SIZE:,}, the leaderboard's limit)")
    try:
        lits = python_literals(decode_python(data, path).text, path)  # as Python decodes it (PEP 263)
    except ContainerError:
        if is_py:
            raise
        return _from_bytes(data, path, arch, path, {})  # raises "not an ELF ..."
    return _from_python(lits, path, arch)

"""Where code objects come from: a bare ELF, a clang offload bundle, or a Python submission.

``load_code_objects(path_or_bytes, arch=...)`` returns every code object a source holds, each
with its provenance (file, bundle entry, Python line and encoding). Python files are read
statically with ``ast`` (never imported or run): every string literal - implicitly concatenated,
triple-quoted over many lines, ``"a" + "b"`` or ``"".join([...])`` of literals - that decodes
from base64, or from base64 of zlib/gzip/lzma/xz/bz2 data, to a code object or a bundle counts.
Decompression is bounded (``MAX_DECODED_SIZE``), so a decompression bomb is an error, not a hang."""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import lzma
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from . import elf, targets
from .codeobject import EM_AMDGPU, parse_header, read_code_object
from .cubin import EM_CUDA, parse_cubin_header, read_cubin
from .errors import CodeObjectError, ContainerError
from .kernelinfo import ObjectInfo

ELF_MAGIC = elf.ELF_MAGIC
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
MAX_DECODED_SIZE = 64 * 1024 * 1024  # bytes any one blob may decode or decompress to
MAX_FILE_SIZE = 256 * 1024 * 1024
_MIN_BLOB_CHARS = 24

# e_machine -> (header reader, object reader); anything else is read as an AMD code object,
# whose reader names the machine it expected.
_READERS = {EM_AMDGPU: (parse_header, read_code_object), EM_CUDA: (parse_cubin_header, read_cubin)}


def _reader(data: bytes):
    return _READERS.get(elf.e_machine(data) or EM_AMDGPU, _READERS[EM_AMDGPU])


@dataclass(frozen=True)
class BundleEntry:
    id: str  # e.g. "hipv4-amdgcn-amd-amdhsa--gfx950:sramecc+"
    offset: int
    size: int

    @property
    def kind(self) -> str:
        return self.id.split("-", 1)[0]

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
        return _reader(self.data)[1](self.data, source=self.provenance)


# --------------------------------------------------------------------------- arch matching


def arch_matches(processor: str, arch: str) -> bool:
    """Does code for ``processor`` (maybe generic) run on ``arch`` (``gfx950`` or a target ID)?"""
    want = arch.split(":", 1)[0].strip().lower()
    return processor == want or want in targets.GENERIC_COVERS.get(processor, ())


# --------------------------------------------------------------------------- bundles


def list_bundle(data: bytes, source: str = "<bytes>") -> list[BundleEntry]:
    """Entries of an uncompressed clang offload bundle, bounds-checked."""
    if not data.startswith(BUNDLE_MAGIC):
        raise ContainerError(f"{source}: not a clang offload bundle: expected magic {BUNDLE_MAGIC.decode()}")
    n = len(data)
    pos = len(BUNDLE_MAGIC)
    if n < pos + 8:
        raise ContainerError(f"{source}: truncated offload bundle: expected an entry count at byte {pos}, "
                             f"file has {n} bytes")
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    if count == 0 or count > (n - pos) // 24:
        raise ContainerError(f"{source}: offload bundle entry count: expected 1..{max(0, (n - pos) // 24)} "
                             f"for {n} bytes, got {count}")
    entries = []
    for i in range(count):
        if pos + 24 > n:
            raise ContainerError(f"{source}: truncated offload bundle: entry {i} header at byte {pos} "
                                 f"past the end ({n} bytes)")
        off, size, idlen = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if idlen > 1024 or pos + idlen > n:
            raise ContainerError(f"{source}: offload bundle entry {i}: id length {idlen} runs past the "
                                 f"end ({n} bytes)")
        raw_id = data[pos:pos + idlen]
        pos += idlen
        try:
            eid = raw_id.decode("ascii")
        except UnicodeDecodeError:
            raise ContainerError(f"{source}: offload bundle entry {i}: id is not ASCII: {raw_id[:40]!r}") from None
        if off + size > n:
            raise ContainerError(f"{source}: offload bundle entry {i} ({eid}): bytes {off}..{off + size} "
                                 f"run past the end ({n} bytes)")
        entries.append(BundleEntry(eid, off, size))
    return entries


def decompress_ccob(data: bytes, source: str = "<bytes>", limit: int = MAX_DECODED_SIZE) -> bytes:
    """A compressed offload bundle (``CCOB``) -> the uncompressed bundle bytes (zlib only)."""
    if len(data) < 8:
        raise ContainerError(f"{source}: truncated compressed bundle: {len(data)} bytes")
    version, method = struct.unpack_from("<HH", data, 4)
    if version == 1:
        hdr = 4 + 2 + 2 + 4 + 8
    elif version == 2:
        hdr = 4 + 2 + 2 + 4 + 4 + 8
    elif version == 3:
        hdr = 4 + 2 + 2 + 8 + 8 + 8
    else:
        raise ContainerError(f"{source}: compressed bundle version: expected 1, 2 or 3, got {version}")
    if len(data) < hdr:
        raise ContainerError(f"{source}: truncated compressed bundle: header needs {hdr} bytes, got {len(data)}")
    if method != 0:
        raise ContainerError(f"{source}: compressed bundle method {method} (zstd) is not supported: "
                             "expected 0 (zlib); unbundle it with clang-offload-bundler")
    out = _bounded(lambda: zlib.decompressobj(), data[hdr:], "zlib", source, limit)
    if out is None:
        raise ContainerError(f"{source}: compressed bundle: zlib data is corrupt")
    return out


def _from_bundle(data: bytes, path: str, arch: str | None, base: dict) -> list[LoadedCodeObject]:
    src = base.get("_label", path)
    entries = list_bundle(data, src)
    devices = [e for e in entries if e.is_device]
    if not devices:
        raise ContainerError(f"{src}: offload bundle has no AMDGPU code object entry; entries: "
                             f"{', '.join(e.id for e in entries)}")
    picked = [e for e in devices if arch is None or arch_matches(e.processor, arch)]
    if not picked:
        raise ContainerError(f"{src}: offload bundle has no entry for {arch}; it has "
                             f"{', '.join(e.id for e in devices)}")
    fields = {k: v for k, v in base.items() if not k.startswith("_")}
    return [LoadedCodeObject(data[e.offset:e.offset + e.size], path, bundle_entry=e.id,
                             **{"container": "bundle", **fields}) for e in picked]


# --------------------------------------------------------------------------- python files


@dataclass(frozen=True)
class _Literal:
    text: str
    line: int


def _literal_value(node: ast.AST) -> str | None:
    """String value of a literal, ``"a" + "b"`` chain, or ``"sep".join([literals])``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        v = node.value
        return v if isinstance(v, str) else v.decode("latin-1")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_value(node.left), _literal_value(node.right)
        if left is not None and right is not None:
            return left + right
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], (ast.List, ast.Tuple))):
        sep = _literal_value(node.func.value)
        parts = [_literal_value(e) for e in node.args[0].elts]
        if sep is not None and all(p is not None for p in parts):
            return sep.join(parts)  # type: ignore[arg-type]
    return None


def python_literals(text: str, source: str = "<python>") -> list[_Literal]:
    """Every maximal string literal expression in a Python source, outermost first."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        line = getattr(e, "lineno", None)
        where = f" (line {line})" if line else ""
        raise ContainerError(f"{source}: not valid Python{where}: {getattr(e, 'msg', None) or e}") from None
    out: list[_Literal] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        v = _literal_value(node) if isinstance(node, (ast.Constant, ast.BinOp, ast.Call)) else None
        if v is not None:
            out.append(_Literal(v, getattr(node, "lineno", 0)))
            continue
        stack.extend(ast.iter_child_nodes(node))
    out.sort(key=lambda lit: lit.line)
    return out


_B64_RE = re.compile(r"[A-Za-z0-9+/_-]+=*")
_WS = re.compile(r"\s+")


def _bounded(make, payload: bytes, what: str, source: str, limit: int) -> bytes | None:
    """Decompress with a cap; None if the data is corrupt; ContainerError if it exceeds ``limit``."""
    d = make()
    try:
        out = d.decompress(payload, limit + 1)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError):
        return None
    if len(out) > limit:
        raise ContainerError(f"{source}: {what} data decompresses to more than {limit} bytes "
                             "(the bound); refusing a possible decompression bomb")
    return out


def _looks_like_lzma_alone(blob: bytes) -> bool:
    """The 13-byte .lzma header: a properties byte (pb*5 + lp)*9 + lc < 225, a 32-bit dictionary
    size of 2^n or 2^n + 2^(n-1) (what encoders write), a 64-bit size (or all ones: unknown)."""
    if len(blob) < 13 or blob[0] >= 225:
        return False
    d = int.from_bytes(blob[1:5], "little")
    if d < 4096:
        return False
    top = 1 << (d.bit_length() - 1)
    return d in (top, top | (top >> 1))


def _decompress(blob: bytes, source: str, limit: int) -> tuple[str, bytes] | None:
    if blob[:2] == b"\x1f\x8b":
        r = _bounded(lambda: zlib.decompressobj(47), blob, "gzip", source, limit)
        return ("gzip", r) if r is not None else None
    if len(blob) >= 2 and blob[0] & 0x0F == 8 and (blob[0] << 8 | blob[1]) % 31 == 0:
        r = _bounded(lambda: zlib.decompressobj(), blob, "zlib", source, limit)
        return ("zlib", r) if r is not None else None
    if blob[:6] == b"\xfd7zXZ\x00":
        r = _bounded(lambda: lzma.LZMADecompressor(), blob, "xz", source, limit)
        return ("lzma", r) if r is not None else None
    if _looks_like_lzma_alone(blob):
        r = _bounded(lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE), blob, "lzma", source, limit)
        return ("lzma", r) if r is not None else None
    if blob[:3] == b"BZh" and blob[3:4].isdigit():
        r = _bounded(lambda: bz2.BZ2Decompressor(), blob, "bz2", source, limit)
        return ("bz2", r) if r is not None else None
    return None


def _is_container(b: bytes) -> bool:
    return b.startswith((ELF_MAGIC, BUNDLE_MAGIC, CCOB_MAGIC))


def decode_blob(text: str, source: str = "<python>", limit: int | None = None) -> tuple[str, bytes] | None:
    """(encoding, bytes) if ``text`` is base64 (of zlib/gzip/lzma/bz2 data) of a code object or
    bundle; else None. Raises ContainerError for a decompression bomb."""
    limit = MAX_DECODED_SIZE if limit is None else limit
    compact = _WS.sub("", text)
    if len(compact) < _MIN_BLOB_CHARS or len(compact) > limit * 4 // 3 + 8 or not _B64_RE.fullmatch(compact):
        return None
    compact += "=" * (-len(compact) % 4)
    try:
        if "-" in compact or "_" in compact:
            raw = base64.urlsafe_b64decode(compact)
        else:
            raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    if _is_container(raw):
        return "base64", raw
    dec = _decompress(raw, source, limit)
    if dec is not None and _is_container(dec[1]):
        return f"{dec[0]}+base64", dec[1]
    return None


def _from_python(text: str, path: str, arch: str | None) -> list[LoadedCodeObject]:
    lits = python_literals(text, path)
    found: list[LoadedCodeObject] = []
    arch_misses: list[str] = []
    for lit in lits:
        got = decode_blob(lit.text, f"{path}:{lit.line}")
        if got is None:
            continue
        enc, blob = got
        try:
            found.extend(_from_bytes(blob, path, arch, {"container": "python", "python_line": lit.line,
                                                        "encoding": enc, "_label": f"{path}:{lit.line}"}))
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


def _from_bytes(data: bytes, path: str, arch: str | None, base: dict) -> list[LoadedCodeObject]:
    label = base.get("_label", path)
    fields = {k: v for k, v in base.items() if not k.startswith("_")}
    if data.startswith(ELF_MAGIC):
        if arch is not None:
            try:
                proc = _reader(data)[0](data, label).processor
            except CodeObjectError:
                proc = None  # read() reports the header problem itself
            if proc is not None and not arch_matches(proc, arch):
                raise ContainerError(f"{label}: code object is for {proc}, expected {arch}")
        return [LoadedCodeObject(data, path, **{"container": "elf", **fields})]
    if data.startswith(BUNDLE_MAGIC):
        return _from_bundle(data, path, arch, base)
    if data.startswith(CCOB_MAGIC):
        return _from_bundle(decompress_ccob(data, label), path, arch, base)
    raise ContainerError(f"{label}: not an ELF code object, an offload bundle or a Python file: "
                         f"starts with {data[:8].hex() or 'nothing (empty)'}")


def load_code_objects(source: str | os.PathLike[str] | bytes, *, arch: str | None = None) -> list[LoadedCodeObject]:
    """Every code object that ``source`` (a path, or the bytes of a file) holds, filtered to
    those that run on ``arch`` when given. Raises ``ContainerError`` when there is none."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, path, is_py = bytes(source), "<bytes>", False
    else:
        p = Path(source)
        path = str(source)
        try:
            size = p.stat().st_size
            if not p.is_file():
                raise ContainerError(f"{path}: not a regular file")
            if size > MAX_FILE_SIZE:
                raise ContainerError(f"{path}: {size} bytes is larger than the {MAX_FILE_SIZE}-byte limit")
            data = p.read_bytes()
        except FileNotFoundError:
            raise ContainerError(f"{path}: no such file") from None
        except OSError as e:
            raise ContainerError(f"{path}: cannot read: {e.strerror or e}") from None
        is_py = p.suffix == ".py"
    if not data:
        raise ContainerError(f"{path}: empty file: expected an ELF code object, an offload bundle or a Python file")
    if not is_py and _is_container(data):
        return _from_bytes(data, path, arch, {})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if is_py:
            raise ContainerError(f"{path}: not valid Python: the file is not UTF-8 text") from None
        return _from_bytes(data, path, arch, {})  # raises "not an ELF ..."
    if not is_py:
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return _from_bytes(data, path, arch, {})
    return _from_python(text, path, arch)

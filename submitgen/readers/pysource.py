"""Code objects inside a Python file, found statically (the file is parsed with ``ast``, never
imported or run): every string literal (implicitly concatenated or triple-quoted over many lines,
as submitgen and people write them) that decodes from base64, or from base64 of
zlib/gzip/lzma/xz/bz2 data, to an ELF code object or an offload bundle. Decompression stops at
``MAX_DECODED_SIZE`` bytes (a decompression bomb is an error, not a hang)."""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import lzma
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from submitgen.errors import ContainerError
from submitgen.readers.elf import ELF_MAGIC
from submitgen.system import memory_budget_hit

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
MAX_DECODED_SIZE = 64 * 1024 * 1024  # bytes any one blob may decode or decompress to
_MIN_BLOB_CHARS = 24
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]+=*")
_WS = re.compile(r"\s+")
_URLSAFE = str.maketrans("-_", "+/")


@dataclass(frozen=True)
class Literal:
    text: str
    line: int


def is_container(b: bytes) -> bool:
    return b.startswith((ELF_MAGIC, BUNDLE_MAGIC, CCOB_MAGIC))


def _constant(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        v = node.value
        return v if isinstance(v, str) else v.decode("latin-1")
    return None


def python_literals(text: str, label: str = "<python>") -> list[Literal]:
    """Every string literal in a Python source, in line order."""
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError) as e:
        if isinstance(e, MemoryError) and memory_budget_hit():
            raise
        raise ContainerError(f"{label}: not read: an expression nests deeper than Python's parser "
                             f"builds ({type(e).__name__})") from None
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        where = f" (line {line})" if line else ""
        detail = getattr(e, "msg", None) or str(e)
        raise ContainerError(f"{label}: not valid Python{where}: {detail}") from None
    out = [Literal(v, getattr(node, "lineno", 0))
           for node in ast.walk(tree) if (v := _constant(node)) is not None]
    out.sort(key=lambda lit: lit.line)
    return out


def bounded(make: Callable[[], Any], payload: bytes, what: str, label: str, limit: int) -> bytes | None:
    """Decompress with a cap; None if the data is corrupt; ContainerError if it exceeds ``limit``."""
    d = make()
    try:
        out: bytes = d.decompress(payload, limit + 1)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError):
        return None
    if len(out) > limit:
        raise ContainerError(f"{label}: {what} data decompresses to more than {limit} bytes "
                             "(the bound); refusing a possible decompression bomb")
    return out


def _codec(blob: bytes) -> tuple[str, str, Callable[[], Any]] | None:
    """(name shown, name in errors, decompressor factory) of the format ``blob`` starts with."""
    if blob[:2] == b"\x1f\x8b":
        return "gzip", "gzip", lambda: zlib.decompressobj(47)
    if len(blob) >= 2 and blob[0] & 0x0F == 8 and (blob[0] << 8 | blob[1]) % 31 == 0:
        return "zlib", "zlib", zlib.decompressobj
    if blob[:6] == b"\xfd7zXZ\x00":
        return "lzma", "xz", lzma.LZMADecompressor
    if blob[:3] == b"BZh" and blob[3:4].isdigit():
        return "bz2", "bz2", bz2.BZ2Decompressor
    if len(blob) >= 13 and blob[0] < 225:  # a .lzma properties byte, (pb * 5 + lp) * 9 + lc
        return "lzma", "lzma", lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE)
    return None


def decode_blob(text: str, label: str = "<python>", limit: int | None = None) -> tuple[str, bytes] | None:
    """(encoding, bytes) if ``text`` is base64 (of zlib/gzip/lzma/bz2 data) of a code object or
    bundle; else None. Raises ContainerError for a decompression bomb."""
    limit = MAX_DECODED_SIZE if limit is None else limit
    compact = _WS.sub("", text)
    if len(compact) < _MIN_BLOB_CHARS or len(compact) > limit * 4 // 3 + 8 or not _B64_RE.fullmatch(compact):
        return None
    compact += "=" * (-len(compact) % 4)
    try:
        raw = base64.b64decode(compact.translate(_URLSAFE), validate=True)  # either alphabet
    except (binascii.Error, ValueError):
        return None
    if is_container(raw):
        return "base64", raw
    codec = _codec(raw)
    if codec is None:
        return None
    name, what, make = codec
    out = bounded(make, raw, what, label, limit)
    if out is not None and is_container(out):
        return f"{name}+base64", out
    return None

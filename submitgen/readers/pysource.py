"""Code objects inside a Python file, found statically (the file is parsed with ``ast``, never
imported or run): every string literal - implicitly concatenated, triple-quoted over many lines,
``"a" + "b"`` chains or ``"".join([...])`` of literals - that decodes from base64, or from base64
of zlib/gzip/lzma/xz/bz2 data, to an ELF code object or an offload bundle.

Everything is bounded: a ``+`` chain is folded iteratively (no recursion, however long), a
folded literal may not exceed ``MAX_LITERAL_CHARS``, and decompression stops at
``MAX_DECODED_SIZE`` bytes (a decompression bomb is an error, not a hang)."""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import io
import lzma
import re
import tokenize
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from submitgen.errors import ContainerError
from submitgen.readers.elf import ELF_MAGIC
from submitgen.readers.pycoding import PythonText, decode_python
from submitgen.system import memory_budget_hit

__all__ = ["PythonText", "decode_python"]  # re-exported: the .py readers decode with it

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
MAX_DECODED_SIZE = 64 * 1024 * 1024  # bytes any one blob may decode or decompress to
MAX_LITERAL_CHARS = MAX_DECODED_SIZE * 4 // 3 + 1024  # a folded literal longer than this cannot be a blob
_MIN_BLOB_CHARS = 24
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]+=*")
_WS = re.compile(r"\s+")


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


def _join(node: ast.AST, depth: int) -> str | None:
    """``"sep".join([...])`` / ``(...)`` whose items are literals (joins nest at most 8 deep)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], (ast.List, ast.Tuple))
    ):
        return None
    sep = _constant(node.func.value)
    parts = [literal_value(e, depth + 1) for e in node.args[0].elts]
    if sep is None or any(p is None for p in parts):
        return None
    if len(sep) * max(len(parts) - 1, 0) + sum(map(len, parts)) > MAX_LITERAL_CHARS:  # type: ignore[arg-type]
        return None  # past the bound before it is built: a long separator joins a list of many
    return sep.join(parts)  # type: ignore[arg-type]


def _leaf(node: ast.AST, depth: int) -> str | None:
    v = _constant(node)
    return v if v is not None or depth >= 8 else _join(node, depth)


def literal_value(node: ast.AST, depth: int = 0) -> str | None:
    """String value of a literal, a ``"a" + "b" + ...`` chain (any depth, folded without
    recursion) or a ``"sep".join([literals])``; None for anything else or past the size bound."""
    parts: list[str] = []
    size = 0
    todo: list[ast.AST] = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            todo += (n.right, n.left)  # left first: popped first
            continue
        v = _leaf(n, depth)
        size += len(v) if v is not None else 0
        if v is None or size > MAX_LITERAL_CHARS:
            return None
        parts.append(v)
    return "".join(parts)


def _token_literals(text: str) -> list[Literal]:
    """String literals and ``+`` / implicit concatenations of them, read token by token: for
    sources whose expressions nest deeper than ``ast`` can build (a 20,000-term chain)."""
    out: list[Literal] = []
    parts: list[str] = []
    line = 0
    joinable = False  # the previous significant token lets a string continue the chain

    def flush() -> None:
        if parts:
            out.append(Literal("".join(parts), line))
            parts.clear()

    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NL, tokenize.COMMENT):
            continue
        if tok.type == tokenize.STRING:
            value = _constant(ast.parse(tok.string, mode="eval").body) if "f" not in \
                tok.string.split("'")[0].split('"')[0].lower() else None
            if value is not None:
                if not (parts and joinable):
                    flush()
                    line = tok.start[0]
                parts.append(value)
                joinable = True
                continue
        if tok.type == tokenize.OP and tok.string == "+" and parts:
            joinable = True
            continue
        joinable = False
        flush()
    flush()
    return out


def python_literals(text: str, label: str = "<python>") -> list[Literal]:
    """Every maximal string literal expression in a Python source, in line order."""
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError) as first:
        if isinstance(first, MemoryError) and memory_budget_hit():
            raise
        try:
            return _token_literals(text)
        except (SyntaxError, tokenize.TokenError, ValueError, RecursionError, MemoryError) as e:
            if isinstance(e, MemoryError) and memory_budget_hit():
                raise
            raise ContainerError(f"{label}: not valid Python: {e}") from None
    except (SyntaxError, ValueError) as e:
        line = getattr(e, "lineno", None)
        where = f" (line {line})" if line else ""
        detail = getattr(e, "msg", None) or str(e)
        raise ContainerError(f"{label}: not valid Python{where}: {detail}") from None
    out: list[Literal] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        v = literal_value(node) if isinstance(node, (ast.Constant, ast.BinOp, ast.Call)) else None
        if v is not None:
            out.append(Literal(v, getattr(node, "lineno", 0)))
            continue
        stack.extend(ast.iter_child_nodes(node))
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


def _codec(blob: bytes) -> tuple[str, str, Callable[[], Any]] | None:
    """(name shown, name in errors, decompressor factory) of the format ``blob`` starts with."""
    if blob[:2] == b"\x1f\x8b":
        return "gzip", "gzip", lambda: zlib.decompressobj(47)
    if len(blob) >= 2 and blob[0] & 0x0F == 8 and (blob[0] << 8 | blob[1]) % 31 == 0:
        return "zlib", "zlib", zlib.decompressobj
    if blob[:6] == b"\xfd7zXZ\x00":
        return "lzma", "xz", lzma.LZMADecompressor
    if _looks_like_lzma_alone(blob):
        return "lzma", "lzma", lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE)
    if blob[:3] == b"BZh" and blob[3:4].isdigit():
        return "bz2", "bz2", bz2.BZ2Decompressor
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
        if "-" in compact or "_" in compact:
            raw = base64.urlsafe_b64decode(compact)
        else:
            raw = base64.b64decode(compact, validate=True)
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

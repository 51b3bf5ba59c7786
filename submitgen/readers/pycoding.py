"""Decoding a ``.py`` exactly as Python does (PEP 263). Kept apart from
:mod:`submitgen.readers.pysource` (which reads code objects and imports pyelftools) so that lint
loads only this."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass

from submitgen.errors import ContainerError


@dataclass(frozen=True)
class PythonText:
    """A ``.py`` decoded as Python decodes it: ``encoding`` as :func:`tokenize.detect_encoding`
    names it ('utf-8', 'utf-8-sig' with a BOM, 'iso-8859-1', ...), the BOM left out of ``text``."""

    text: str
    encoding: str


def decode_python(raw: bytes, label: str = "<python>") -> PythonText:
    """Decode the bytes of a ``.py`` exactly as Python does (PEP 263: a UTF-8 BOM, else a coding
    declaration in the first two lines, else UTF-8). Raises ContainerError where Python would
    refuse the file (an unknown or non-text coding, a BOM with another coding, bytes invalid in
    the coding)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as e:
        msg = str(e.msg if hasattr(e, "msg") else e)
        if raw.startswith(codecs.BOM_UTF8):
            raise ContainerError(f"{label}: not valid Python: a UTF-8 BOM and a coding declaration "
                                 "other than utf-8") from None
        if not msg.startswith("invalid or missing encoding"):
            raise ContainerError(f"{label}: not valid Python: {msg}") from None
        encoding = "utf-8"  # the decode below names the bad byte
    info = codecs.lookup(encoding)
    if not getattr(info, "_is_text_encoding", True):
        raise ContainerError(f"{label}: not valid Python: {encoding!r} is not a text encoding")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise ContainerError(f"{label}: not valid Python: byte 0x{raw[e.start]:02x} at offset {e.start} "
                             f"is not valid {info.name}") from None
    return PythonText(text, encoding)

"""Decoding a ``.py`` exactly as Python does (PEP 263), and refusing a coding that hides code
from a reader. Kept apart from :mod:`submitgen.readers.pysource` (which reads code objects and imports
pyelftools) so that lint loads only this."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass

from submitgen.errors import ContainerError, SourceCodingError

_ASCII = bytes(range(128))
_NON_ASCII = bytes(range(128, 256))


@dataclass(frozen=True)
class PythonText:
    """A ``.py`` decoded as Python decodes it: ``encoding`` as :func:`tokenize.detect_encoding`
    names it ('utf-8', 'utf-8-sig' with a BOM, 'iso-8859-1', ...), the BOM left out of ``text``."""

    text: str
    encoding: str
    coding_line: int  # 0: UTF-8 by default; 1 or 2: the line of the coding declaration (1: BOM)


def _coding_line(raw: bytes) -> int:
    if raw.startswith(codecs.BOM_UTF8):
        return 1
    for no, line in enumerate(raw.splitlines()[:2], 1):
        if re.match(rb"^[ \t\f]*#.*?coding[:=]", line):
            return no
    return 0


def decode_python(raw: bytes, label: str = "<python>") -> PythonText:
    """Decode the bytes of a ``.py`` exactly as Python does (PEP 263: a UTF-8 BOM, else a coding
    declaration in the first two lines, else UTF-8). Raises ContainerError where Python would
    refuse the file (an unknown or non-text coding, a BOM with another coding, bytes invalid in
    the coding), and SourceCodingError where Python accepts a coding under which the code differs
    from what the bytes show: decided by a check, not a list, of two facts: the codec decodes
    the 128 ASCII bytes to themselves (false for utf-7, utf-16/32, EBCDIC codecs), and the file's
    decoded text holds exactly its ASCII bytes, in order (false where a multibyte codec such as
    shift_jis swallows an ASCII byte into a character)."""
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
    line = _coding_line(raw)
    info = codecs.lookup(encoding)
    if not getattr(info, "_is_text_encoding", True):
        raise ContainerError(f"{label}: not valid Python: {encoding!r} is not a text encoding")
    if encoding not in ("utf-8", "utf-8-sig"):
        try:
            same = _ASCII.decode(encoding) == _ASCII.decode("ascii")
        except (UnicodeDecodeError, LookupError):
            same = False
        if not same:
            raise SourceCodingError(label, line or 1, (
                f"the coding declaration {info.name!r} on line {line} makes Python read other text than "
                "the file shows: under it ASCII bytes do not decode to themselves, so code can hide in "
                "what reads as a comment or a string"))
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise ContainerError(f"{label}: not valid Python: byte 0x{raw[e.start]:02x} at offset {e.start} "
                             f"is not valid {info.name}") from None
    if encoding not in ("utf-8", "utf-8-sig") and \
            text.encode("ascii", "ignore") != raw.translate(None, _NON_ASCII):
        raise SourceCodingError(label, line or 1, (
            f"the coding declaration {info.name!r} on line {line} makes Python read other code than the "
            "file shows: it decodes some ASCII bytes as parts of other characters, so what reads as "
            "code, a comment or a string is not what runs"))
    return PythonText(text, encoding, line)



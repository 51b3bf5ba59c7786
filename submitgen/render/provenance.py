"""The provenance line every emitted submission carries in its first comment block, written by
the build and read back by ``inspect``:

    # submitgen-provenance: version=0.1.0 arch=gfx950 target=... kernels=a,b sources=<sha256> co=<sha256>,...

Each value is percent-encoded (UTF-8), and a list's items are encoded one by one and joined by
commas, so that any name (spaces, tabs, line breaks, commas, non-ASCII) keeps the line one line
and reads back exactly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import quote, unquote

from submitgen.errors import ProvenanceError

PREFIX = "# submitgen-provenance: "
FIELDS = ("version", "arch", "target", "kernels", "sources", "co", "compress", "launcher")
_SAFE = ":+@/"  # kept as they are besides letters, digits and "_.-~" (target IDs read as usual)
# Present only when they apply: "triton" is the Triton version that built each embedded object, in
# "co" order ("-" for an object not built by Triton), when any object is; "lds" is the dynamic LDS
# each kernel is launched with (the largest over the shapes; Triton's ``shared`` for one the plan
# never launches), one ``INDEX/NAME:BYTES`` item per kernel, INDEX its object's position in "co"
# (Triton specializations of one kernel share its name, each in an object of its own).
# "digest" is the sha256 of the whole file as written, with this one item taken out of its line
# (``content_digest``): it tells a file as the build wrote it from one changed since (by hand).
DIGEST = "digest"
_DIGEST_ITEM = re.compile(r" digest=[0-9a-f]*(?= |$)")


@dataclass(frozen=True)
class Provenance:
    line: int  # 1-based line of the provenance comment
    fields: Mapping[str, str]  # as written (encoded)

    def value(self, key: str) -> str:
        return unquote(self.fields.get(key, ""))

    def items(self, key: str) -> tuple[str, ...]:
        return field_items(self.fields, key)

    @property
    def code_objects(self) -> tuple[str, ...]:
        """sha256 of every embedded code object, as the build recorded them."""
        return self.items("co")

    @property
    def kernels(self) -> tuple[str, ...]:
        return self.items("kernels")


def field_items(fields: Mapping[str, str], key: str) -> tuple[str, ...]:
    """The decoded items of a list field of a provenance line's ``fields`` (as written)."""
    return tuple(unquote(v) for v in fields.get(key, "").split(",") if v)


def lds_item(index: int, name: str, nbytes: int) -> str:
    """One item of the ``lds`` field (encoded by :func:`format_line` like any list item)."""
    return f"{index}/{name}:{nbytes}"


def parse_lds(items: Sequence[str], index: int | None) -> dict[str, int]:
    """Dynamic LDS bytes per kernel name of the object at ``index`` in "co", from the decoded items
    of an ``lds`` field: ``INDEX/NAME:BYTES`` (the index is digits, the bytes are digits: the first
    "/" and the last ":" split it whatever the name holds). Malformed items are skipped."""
    out: dict[str, int] = {}
    for item in items:
        head, _, rest = item.partition("/")
        name, _, value = rest.rpartition(":")
        if not head.isdigit() or not name or not value.isdigit() or int(head) != index:
            continue
        out[name] = int(value)
    return out


def _encode(value: str | Sequence[str]) -> str:
    if isinstance(value, str):
        return quote(value, safe=_SAFE)
    return ",".join(quote(item, safe=_SAFE) for item in value)


def format_line(fields: Mapping[str, str | Sequence[str]]) -> str:
    """The comment line (without a newline). A value is a string, or a sequence of strings (a
    list, read back by :meth:`Provenance.items`)."""
    for key in fields:
        if not key.isidentifier():
            raise ProvenanceError(f"provenance field name {key!r}: expected an identifier")
    return PREFIX + " ".join(f"{k}={_encode(v)}" for k, v in fields.items())


def read(text: str) -> Provenance | None:
    """The provenance of a submission's text, from its first comment block; None if it has none."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(PREFIX):
            pairs = (item.partition("=") for item in line[len(PREFIX):].split())
            return Provenance(number, MappingProxyType({k: v for k, sep, v in pairs if sep}))
        if not (line.startswith("#") or line.startswith("//")):
            return None
    return None


def content_digest(text: str) -> str:
    """sha256 of ``text`` with the provenance line's ``digest`` item taken out (the value it records)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(PREFIX):
            lines[i] = _DIGEST_ITEM.sub("", line, count=1)
            break
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def seal(text: str) -> str:
    """``text`` with ``digest=<content_digest>`` as the last field of its provenance line (before a
    trailing ``  # noqa`` comment); ``text`` itself when it has no provenance line."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(PREFIX):
            digest = content_digest(text)
            body = line.rstrip("\r\n")
            end = line[len(body):]
            head, sep, noqa = body.partition("  # noqa")
            lines[i] = f"{head} {DIGEST}={digest}{sep}{noqa}{end}"
            return "".join(lines)
    return text

"""Text and JSON helpers shared by inspect and diff: 100-column lines and strict JSON values."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any

WIDTH = 100


def wrap(text: str, indent: str = "  ", sub: str | None = None, width: int = WIDTH) -> list[str]:
    """``text`` wrapped to ``width`` columns (long words broken), first line indented by ``indent``."""
    sub = indent + "    " if sub is None else sub
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=sub,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def cut(s: str, n: int = WIDTH) -> str:
    """``s`` cut to ``n`` characters, the last one an ellipsis when anything was cut."""
    return s if len(s) <= n else s[: n - 1] + "…"


def jsonable(v: Any) -> Any:
    """A value from a code object's metadata as strict JSON: map keys as strings (bytes as hex),
    bytes as hex, tuples as lists, NaN and infinities as null, anything else as its text."""
    if isinstance(v, Mapping):
        return {_key(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)


def _key(k: Any) -> str:
    if isinstance(k, (bytes, bytearray)):
        return bytes(k).hex()
    return str(k)

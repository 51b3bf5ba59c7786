"""Text and JSON helpers shared by inspect, diff and the build summary: 100-column lines, text
safe for a terminal, and strict JSON values."""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections.abc import Mapping
from typing import Any

from submitgen import __version__

WIDTH = 100
PLAIN = frozenset({int, str, bool, type(None)})  # types jsonable gives back as they are


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character that ``str.isprintable`` refuses (controls, ESC, bidi and format
    characters, separators, surrogates, unassigned code points) shown as a Python escape, except
    those in ``keep`` (``"\n"`` for a multi-line message). Idempotent."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ord(ch)) for ch in text)


def _escape(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def lines(rows: list[str]) -> str:
    """Lines joined for a terminal, each made ``printable``."""
    return "\n".join(printable(r) for r in rows)


def wrap(text: str, indent: str = "  ", sub: str | None = None, width: int = WIDTH) -> list[str]:
    """``text`` (made ``printable``) wrapped to ``width`` columns (long words broken), first line
    indented by ``indent``."""
    sub = indent + "    " if sub is None else sub
    text = printable(text)
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=sub,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def cut(s: str, n: int = WIDTH) -> str:
    """``s`` (made ``printable``) cut to ``n`` characters, the last one an ellipsis when anything
    was cut."""
    s = printable(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def jsonable(v: Any) -> Any:
    """A value from a code object's metadata as strict JSON: map keys as strings (bytes decoded
    as UTF-8 with escapes), byte strings as hex, tuples as lists, NaN and infinities as null, a
    msgpack Timestamp as ISO 8601, anything else as its text."""
    if type(v) in PLAIN:
        return v
    if isinstance(v, Mapping):
        return {json_key(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    to_datetime = getattr(v, "to_datetime", None)  # a msgpack Timestamp
    if callable(to_datetime):
        try:
            return to_datetime().isoformat()
        except (OverflowError, ValueError, OSError):
            pass
    return str(v)


def json_key(k: Any) -> str:
    if isinstance(k, (bytes, bytearray)):
        return bytes(k).decode("utf-8", "backslashreplace")
    return k if isinstance(k, str) else str(jsonable(k))


def fit_middle(s: str, width: int) -> str:
    """``s`` (made ``printable``) shortened in the middle with ``...`` to at most ``width``
    characters."""
    s = printable(s)
    if len(s) <= width:
        return s
    keep = max(width - 3, 0)
    return s[: keep // 2] + "..." + s[len(s) - (keep - keep // 2):]


def fit_pair(a: str, b: str, width: int, context: int = 8) -> tuple[str, str]:
    """Two strings (e.g. OLD's and NEW's path) shortened to ``width`` so that the part where they
    differ stays readable: the common beginning is cut first (keeping ``context`` characters
    before the difference), then the common end; only then the rest, in the middle."""
    a, b = printable(a), printable(b)
    if max(len(a), len(b)) <= width:
        return a, b
    p = len(os.path.commonprefix([a, b]))
    s = len(os.path.commonprefix([a[p:][::-1], b[p:][::-1]]))
    over = max(len(a), len(b)) - width
    if p > context + 3:
        cut = min(over + 3, p - context)
        a, b, over = "..." + a[cut:], "..." + b[cut:], over - (cut - 3)
    if over > 0 and s > context + 3:
        cut = min(over + 3, s - context)
        a, b = a[: len(a) - cut] + "...", b[: len(b) - cut] + "..."
    return fit_middle(a, width), fit_middle(b, width)


def fit_call(name: str, inner: str, width: int) -> str:
    """``name (inner)`` in at most ``width`` characters: the parts are shortened in their middle,
    and the parentheses are always kept."""
    name, inner = printable(name), printable(inner)
    full = f"{name} ({inner})"
    if len(full) <= width:
        return full
    name = fit_middle(name, max(width // 2, width - len(inner) - 3))
    return f"{name} ({fit_middle(inner, max(width - len(name) - 3, 5))})"


def py_string(s: str) -> str:
    """``s`` as a Python string literal in double quotes, as ``ruff format`` writes it (repr's
    escapes; single quotes when ``s`` holds a double quote and no single one)."""
    text = repr(s)
    if text.startswith("'") and '"' not in s:
        text = '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


FORMAT_VERSION = 1


def envelope(command: str, ok: bool, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The envelope of a command that ran: ``ok`` is whether it passed; ``fields`` its results."""
    return {"command": command, "version": __version__, "format_version": FORMAT_VERSION, "ok": ok,
            "error": None, **(fields or {})}


def error_envelope(command: str, error: str) -> dict[str, Any]:
    """The envelope of a command stopped by a domain error (what its Error: line would say)."""
    return envelope(command, False) | {"error": error}


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, allow_nan=False)


def payload_json(p: Any) -> dict[str, Any]:
    """A ``payload.PayloadEstimate`` as JSON."""
    return {"problem": p.problem, "chars": p.chars, "limit": p.limit, "baseline": p.baseline,
            "submission_chars": p.submission_chars, "headroom": p.headroom, "fits": p.fits}


def lint_fields(file: str, leaderboard: str | None, report: Any) -> dict[str, Any]:
    """``lint --json``'s fields for a ``lint.LintReport`` of ``file``."""
    keys = ("rule", "line", "severity", "source", "message", "fix")
    return {"file": file, "leaderboard": leaderboard,
            "errors": [{k: getattr(f, k) for k in keys} for f in report.errors],
            "warnings": [{k: getattr(f, k) for k in keys} for f in report.warnings],
            "payload": payload_json(report.payload), "kernelguard": report.kernelguard.as_json()}

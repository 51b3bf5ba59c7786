"""Reading compiler inputs safely: regular files only, each read once and bounded before the
read happens (a path naming ``/dev/zero``, a FIFO or ``/dev/stdin`` is refused, never read)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from submitgen.errors import CompileError
from submitgen.system import Refused, read_regular

MAX_SOURCE_BYTES = 64 << 20  # a source or header larger than this is not a kernel source
_MAX_SCANNED_FILES = 512
_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include(?:_next)?[ \t]*([<"])([^>"\r\n]+)[>"]', re.MULTILINE)


def read_input(path: Path, what: str = "source") -> bytes:
    """The bytes of one regular file, at most MAX_SOURCE_BYTES (checked before reading), through
    the one bounded reader (:func:`submitgen.system.read_regular`)."""
    try:
        return read_regular(path, MAX_SOURCE_BYTES)
    except Refused as r:
        if r.reason in ("missing", "unreadable"):
            why = r.detail or "No such file or directory"
            raise CompileError(f"{what} {path}: cannot read it ({why})") from None
        if r.reason == "not-regular":
            raise CompileError(f"{what} {path}: not a regular file ({r.detail}); sources and headers "
                               "must be regular files") from None
        if r.reason == "too-large":
            raise CompileError(f"{what} {path}: {r.size} bytes, over the {MAX_SOURCE_BYTES} byte "
                               "limit") from None
        raise CompileError(f"{what} {path}: grew past the {MAX_SOURCE_BYTES} byte limit while being "
                           "read") from None


def file_sha(path: Path) -> str | None:
    """sha256 of a header's bytes, or None when it is gone or not a regular file."""
    try:
        return hashlib.sha256(read_input(path, "header")).hexdigest()
    except CompileError:
        return None


def check_includes(sources: Sequence[tuple[Path, bytes]], include_dirs: Sequence[Path]) -> None:
    """Follow the ``#include`` lines of the sources (and of the headers they reach in the source
    folders and include folders) and refuse any that names something other than a regular file:
    a compiler would read ``/dev/zero`` forever and block on a FIFO. Conditionals are not
    evaluated, so a device path inside ``#if 0`` is refused too."""
    todo = list(sources)
    seen: set[Path] = {p for p, _ in sources}
    while todo and len(seen) < _MAX_SCANNED_FILES:
        path, data = todo.pop()
        for m in _INCLUDE_RE.finditer(data):
            name = m.group(2).decode("utf-8", "replace").strip()
            dirs = ([path.parent] if m.group(1) == b'"' else []) + list(include_dirs)
            found = _resolve(name, dirs)
            if found is None or found in seen:
                continue
            seen.add(found)
            try:
                todo.append((found, read_input(found, "header")))
            except CompileError as e:
                raise CompileError(f"{path} includes {name!r}: {e}") from None


def _resolve(name: str, dirs: Sequence[Path]) -> Path | None:
    cands = [Path(name)] if os.path.isabs(name) else [d / name for d in dirs]
    for c in cands:
        try:
            os.stat(c)
        except OSError:
            continue
        return Path(os.path.abspath(c))
    return None

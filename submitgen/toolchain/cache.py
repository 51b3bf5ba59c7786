"""The content-addressed compile cache.

Folder: ``SUBMITGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/submitgen``, else ``~/.cache/submitgen``.
A manifest keyed on the inputs (the exact source bytes that were compiled, flags, arch and
compiler identity) lists the headers the last compile read; the object is stored under a key that
adds those headers' contents. A rebuild of unchanged inputs therefore runs no compiler at all.

The cache is an optimisation only: a folder that cannot be created, read or written makes the
compile run uncached (with a warning in the result), never fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from submitgen.files import write_atomic
from submitgen.toolchain.inputs import file_sha

CACHE_FORMAT = "2"
_MAX_ENTRY_BYTES = 256 << 20


def cache_dir() -> Path:
    """The user's submitgen cache folder (not created here)."""
    env = os.environ.get("SUBMITGEN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "submitgen"
    try:
        return Path.home() / ".cache" / "submitgen"
    except RuntimeError:  # no HOME and no passwd entry
        return Path(tempfile.gettempdir()) / f"submitgen-cache-{os.getuid()}"


def write_cache_file(path: Path, data: bytes) -> str | None:
    """Write one cache file atomically; on failure return why (the caller goes on uncached)."""
    try:
        write_atomic(path, data)
    except OSError as e:
        return f"cache folder {path.parent} is not writable ({e.strerror or e}); compiled without caching"
    return None


def key_of(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def object_key(key1: str, headers: Sequence[tuple[str, str | None]]) -> str:
    h = hashlib.sha256(key1.encode())
    for name, digest in headers:
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()


def read_entry(path: Path) -> bytes:
    """One cache file's bytes (regular files only, bounded)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY_BYTES:
        raise OSError(f"{path}: not a cache entry")
    with open(path, "rb") as f:
        return f.read(_MAX_ENTRY_BYTES)


@dataclass(frozen=True)
class CachedObject:
    data: bytes
    meta: dict


def lookup(root: Path, key1: str) -> CachedObject | None:
    """The object stored for ``key1`` if the headers it read still have the same contents."""
    try:
        manifest = json.loads(read_entry(root / "manifests" / f"{key1}.json"))
        headers = [(h, file_sha(Path(h))) for h in manifest["headers"]]
        if any(d is None for _, d in headers):
            return None
        key2 = object_key(key1, headers)
        meta = json.loads(read_entry(root / "objects" / f"{key2}.json"))
        data = read_entry(root / "objects" / f"{key2}.co")
        if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return CachedObject(data, meta)


def store(
    root: Path, key1: str, data: bytes, meta: dict, header_digests: Sequence[tuple[str, str | None]]
) -> str | None:
    """Store an object and its manifest; returns a warning when the folder is unusable."""
    key2 = object_key(key1, header_digests)
    for path, payload in (
        (root / "objects" / f"{key2}.co", data),
        (root / "objects" / f"{key2}.json", json.dumps(meta).encode()),
        (
            root / "manifests" / f"{key1}.json",
            json.dumps({"headers": [h for h, _ in header_digests]}).encode(),
        ),
    ):
        warning = write_cache_file(path, payload)
        if warning:
            return warning
    return None

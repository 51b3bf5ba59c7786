"""``llvm-readelf --notes`` as data: find a readelf whose LLVM prints AMDGPU metadata, and parse the
YAML subset it prints (block mappings, block sequences, plain and quoted scalars). Test helper."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

_MAP_ITEM = re.compile(r"^[^\s'\"][^:]*:(\s|$)")


def find_readelf(probe: Path) -> str | None:
    """``llvm-readelf-22`` when installed, else another ``llvm-readelf`` that prints the AMDGPU
    metadata note of ``probe`` (LLVM 14 and later do)."""
    names = (
        ["llvm-readelf-22"] + [f"llvm-readelf-{v}" for v in range(30, 13, -1) if v != 22] + ["llvm-readelf"]
    )
    for name in names:
        tool = shutil.which(name)
        if tool and "amdhsa.kernels" in notes_text(tool, probe):
            return tool
    return None


def notes_text(tool: str, path: Path) -> str:
    r = subprocess.run([tool, "--notes", str(path)], capture_output=True, text=True, timeout=60, check=False)
    return r.stdout if r.returncode == 0 else ""


def metadata(tool: str, path: Path) -> dict[str, Any]:
    """The NT_AMDGPU_METADATA map readelf prints for ``path``."""
    text = notes_text(tool, path)
    body = text.split("---", 1)[1].split("\n...", 1)[0]
    lines = [ln.rstrip() for ln in body.splitlines() if ln.strip()]
    value, pos = _block(lines, 0)
    assert pos == len(lines), lines[pos:pos + 3]
    return value


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _scalar(s: str) -> Any:
    if s.startswith("!"):  # a tag: !str keeps a value that would read as a bool or number a string
        tag, _, rest = s.partition(" ")
        value = _scalar(rest.strip())
        return str(rest.strip()) if tag == "!str" and not isinstance(value, str) else \
            (rest.strip() if tag == "!str" else value)
    if s.startswith("'") and s.endswith("'"):
        return s[1:-1].replace("''", "'")
    if s.startswith('"') and s.endswith('"'):
        return s[1:-1].encode().decode("unicode_escape")
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if re.fullmatch(r"0x[0-9a-fA-F]+", s):
        return int(s, 16)
    return {"true": True, "false": False, "~": None, "null": None}.get(s, s)


def _block(lines: list[str], pos: int) -> tuple[Any, int]:
    ind = _indent(lines[pos])
    if lines[pos].lstrip().startswith("- "):
        out: list[Any] = []
        while pos < len(lines) and _indent(lines[pos]) == ind and lines[pos].lstrip().startswith("- "):
            rest = lines[pos].lstrip()[2:]
            if _MAP_ITEM.match(rest):
                lines[pos] = " " * (ind + 2) + rest
                value, pos = _block(lines, pos)
            else:
                value, pos = _scalar(rest.strip()), pos + 1
            out.append(value)
        return out, pos
    mapping: dict[str, Any] = {}
    while pos < len(lines) and _indent(lines[pos]) == ind and not lines[pos].lstrip().startswith("- "):
        key, _, val = lines[pos].strip().partition(":")
        pos += 1
        if val.strip():
            mapping[key] = _scalar(val.strip())
        elif pos < len(lines) and (_indent(lines[pos]) > ind or lines[pos].lstrip().startswith("- ")):
            mapping[key], pos = _block(lines, pos)
        else:
            mapping[key] = None
    return mapping, pos

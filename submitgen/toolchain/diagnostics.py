"""Compiler output -> one CompileError with file:line and the compiler's own words."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from submitgen.errors import CompileError

MAX_ERRORS = 3
_DIAG_RE = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?"
    r"\s*(?P<sev>fatal error|error|warning|note):\s*(?P<msg>.*)$"
)


def diagnostics(text: str) -> list[tuple[str, str, str]]:
    """(file, line, text) of each error in clang's output; text keeps the source excerpt and
    caret lines that follow it, drops notes and warnings."""
    out: list[tuple[str, str, list[str]]] = []
    open_block = False
    for ln in text.splitlines():
        m = _DIAG_RE.match(ln)
        if m:
            open_block = m.group("sev") in ("error", "fatal error")
            if open_block:
                out.append((m.group("file"), m.group("line"), [ln]))
        elif open_block and ln.startswith(" ") and len(out[-1][2]) < 4:
            out[-1][2].append(ln)
        else:
            open_block = False
    return [(f, n, "\n".join(block)) for f, n, block in out]


def unmap_paths(text: str, names: Mapping[str, str]) -> str:
    """The compiler saw snapshot copies of the sources: show the user's paths instead."""
    for snap, orig in names.items():
        text = text.replace(snap, orig)
    return text


def compile_failure(step: str, argv: Sequence[str], r: subprocess.CompletedProcess, arch: str,
                    src: Path | None, names: Mapping[str, str] | None = None) -> CompileError:
    text = unmap_paths((r.stderr or "") + (r.stdout or ""), names or {})
    diags = diagnostics(text)
    what = f"compiling {src} for {arch}" if src else f"linking the code object for {arch}"
    if diags:
        file, line, _ = diags[0]
        shown = "\n".join(block for _, _, block in diags[:MAX_ERRORS])
        more = f"\n... and {len(diags) - MAX_ERRORS} more errors" if len(diags) > MAX_ERRORS else ""
        msg = f"{what} failed at {file}:{line}:\n{shown}{more}"
    else:
        lines = [ln for ln in text.splitlines() if ln.strip() and "generated" not in ln]
        file, line = (str(src) if src else None), None
        msg = f"{what} failed ({step}, exit code {r.returncode}):\n" + "\n".join(lines[:8])
    err = CompileError(msg)
    err.file = file
    err.line = int(line) if line else None
    err.arch = arch
    err.command = tuple(argv)
    err.compiler_output = text
    return err

"""What test_golden and the default-build tests ask of an emitted file: ``ruff format`` would leave
it as it is, and pycodestyle's errors and warnings pass, the blank-line rules (E30x, preview)
included, at the project's line length. E265 is left out: popcorn-cli reads its directives from
`#!POPCORN`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_RUFF = [sys.executable, "-m", "ruff"]


def ruff_problems(path: Path) -> str:
    """"" when the file is clean, else ruff's diff and findings."""
    fmt = subprocess.run([*_RUFF, "format", "--check", "--diff", "--line-length", "110", str(path)],
                         capture_output=True, text=True)
    rules = ["--preview", "--select", "E,W", "--ignore", "E265", "--line-length", "110"]
    lint = subprocess.run([*_RUFF, "check", *rules, "--output-format", "concise", str(path)],
                          capture_output=True, text=True)
    out = ""
    if fmt.returncode:
        out += fmt.stdout + fmt.stderr
    if lint.returncode:
        out += lint.stdout + lint.stderr
    return out

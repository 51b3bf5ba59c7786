"""What test_golden and the default-build tests ask of an emitted file: ``ruff format`` would leave
it as it is, and pycodestyle's errors and warnings pass, the blank-line rules (E30x, preview)
included, at the project's line length (E265 is left out: popcorn-cli reads its directives from
`#!POPCORN`); and it reads top-down (``order_problems``)."""

from __future__ import annotations

import ast
import re
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


_MACHINERY = re.compile(r"_?sg_|_?Sg")  # submitgen's own functions and classes: runtime/, templates/
_BASE64 = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")


def order_problems(text: str) -> str:
    """"" when the emitted ``text`` reads top-down, else what is out of order: the header first
    (#!POPCORN lines, then the provenance line), the plan's ``def plan`` and then ``def
    custom_kernel(data)`` before every function and class of submitgen's machinery, the base64 of
    the code objects in ``_SG_BLOBS`` after all of them, and only the import-time setup after it."""
    lines = text.splitlines()
    body = ast.parse(text).body
    problems = []
    if not lines[0].startswith("#!POPCORN leaderboard ") or not any(
            line.startswith("# submitgen-provenance: ") for line in lines[:4]):
        problems.append(f"header: {lines[:4]}")
    defs = [(i, n.name) for i, n in enumerate(body) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    kernel = [i for i, name in defs if name == "custom_kernel"]
    if len(kernel) != 1:
        return f"{len(kernel)} 'def custom_kernel' at module level, expected 1"
    before = [name for i, name in defs if i < kernel[0]]
    if "plan" not in before:
        problems.append("def plan comes after def custom_kernel")
    problems += [f"{name} comes before def custom_kernel" for name in before
                 if _MACHINERY.match(name) and name != "sg_frozen"]
    blobs = [i for i, n in enumerate(body) if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "_SG_BLOBS" for t in n.targets)]
    if len(blobs) != 1:
        return problems and "; ".join(problems) or f"{len(blobs)} _SG_BLOBS assignments, expected 1"
    after = body[blobs[0] + 1:]
    problems += [f"{n.name} comes after _SG_BLOBS" for n in after
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    blob = body[blobs[0]]
    for node in ast.walk(ast.Module(body=[n for n in body if n is not blob], type_ignores=[])):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _BASE64.search(node.value):
            problems.append(f"base64 outside _SG_BLOBS at line {node.lineno}")
    texts = [n.value for n in ast.walk(blob) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and _BASE64.fullmatch(n.value)]
    if not texts:
        problems.append("no base64 text in _SG_BLOBS")
    setup = [n for n in after if isinstance(n, ast.Assign)]
    if not setup or ast.unparse(setup[0]) != "_SG_IMAGES = _sg_decode()":
        first = ast.unparse(after[0]) if after else "nothing"
        problems.append(f"after _SG_BLOBS: {first}, expected the setup")
    return "; ".join(problems)

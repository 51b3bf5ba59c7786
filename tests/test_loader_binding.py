"""The emitted loader binds the HIP runtime torch itself mapped, never a second copy: with two
copies of libamdhip64 in /proc/self/maps (torch's bundled one and /opt/rocm's), it picks
torch's. The function is taken from a rendered golden file and run with a fake maps file."""

from __future__ import annotations

import ast
import io
import os
import types
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "mm_basic_ctypes.py"

MAPS = """\
7f0000000000-7f0000001000 r--p 00000000 08:01 1 /opt/rocm/lib/libamdhip64.so.7.1.0
7f0000002000-7f0000003000 r-xp 00001000 08:01 1 /opt/rocm/lib/libamdhip64.so.7.1.0
7f1000000000-7f1000001000 r--p 00000000 08:01 2 {torch}/lib/libamdhip64.so
7f2000000000-7f2000001000 rw-p 00000000 00:00 0
"""


def mapped_library(maps: str, torch_dir: str):
    tree = ast.parse(GOLDEN.read_text())
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_sg_mapped_library"]
    namespace = {
        "os": os,
        "torch": types.SimpleNamespace(__file__=os.path.join(torch_dir, "__init__.py")),
        "open": lambda path: io.StringIO(maps),
    }
    exec(compile(ast.Module([fn], []), str(GOLDEN), "exec"), namespace)  # noqa: S102 - test harness
    return namespace["_sg_mapped_library"]


def test_prefers_torch_own_copy(tmp_path):
    torch_dir = str(tmp_path / "site-packages" / "torch")
    find = mapped_library(MAPS.format(torch=torch_dir), torch_dir)
    assert find("libamdhip64") == f"{torch_dir}/lib/libamdhip64.so"


def test_system_copy_when_torch_has_none(tmp_path):
    torch_dir = str(tmp_path / "torch")
    maps = "\n".join(line for line in MAPS.splitlines() if "{torch}" not in line)
    assert mapped_library(maps, torch_dir)("libamdhip64") == "/opt/rocm/lib/libamdhip64.so.7.1.0"


def test_none_when_not_mapped(tmp_path):
    assert mapped_library("", str(tmp_path))("libamdhip64") is None

"""Shared fixtures. Code objects are compiled by the tests themselves with the bundled clang
(the ``ziglang`` wheel) so every test reads real, current gfx950/gfx942 output.

NOTE (lead): ``compile_co`` calls clang directly for now; once ``submitgen.toolchain`` exists it
must go through ``toolchain.compile_sources`` so the tests exercise the product's own path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _zig(*args: str, cwd: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "ziglang", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{r.stderr}")


@pytest.fixture(scope="session")
def compile_co(tmp_path_factory):
    """compile_co(source_text, arch="gfx950", name="k.hip", flags=()) -> bytes of a linked ET_DYN code object."""
    cache: dict[tuple, bytes] = {}

    def build(source: str, arch: str = "gfx950", name: str = "k.hip", flags: tuple[str, ...] = ()) -> bytes:
        key = (source, arch, name, flags)
        if key in cache:
            return cache[key]
        d = tmp_path_factory.mktemp("co")
        (d / name).write_text(source)
        include = str(REPO / "kernels" / "include")
        if name.endswith(".s"):
            _zig("clang", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", *flags, "-c", name, "-o", "k.o", cwd=d)
        else:
            lang = ["-x", "cl", "-Xclang", "-finclude-default-header", "-target", "amdgcn-amd-amdhsa",
                    f"-mcpu={arch}"] if name.endswith(".cl") else \
                   ["-x", "hip", "--cuda-device-only", f"--offload-arch={arch}"]
            _zig("clang", *lang, "-nogpulib", "-nogpuinc", "-O3", "-I", include, *flags, "-S", name, "-o", "k.s", cwd=d)
            _zig("clang", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-c", "k.s", "-o", "k.o", cwd=d)
        _zig("ld.lld", "-shared", "k.o", "-o", "k.co", cwd=d)
        cache[key] = (d / "k.co").read_bytes()
        return cache[key]

    return build

"""CUDA builds with nvcc (numerics checks on NVIDIA): the same kernel sources and
``submitgen/device.h`` become a cubin."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from submitgen.errors import CompileError, ToolchainError
from submitgen.files import device_include_dir, private_dir
from submitgen.system import run_tool
from submitgen.toolchain.diagnostics import compile_failure
from submitgen.toolchain.discovery import is_executable
from submitgen.toolchain.inputs import check_includes, read_input
from submitgen.toolchain.options import CompileOptions


def find_nvcc() -> Path | None:
    env = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if env and is_executable(Path(env) / "bin" / "nvcc"):
        return Path(env) / "bin" / "nvcc"
    found = shutil.which("nvcc")
    return Path(found) if found else None


def compile_cuda(sources: Sequence[Path | str], options: CompileOptions | None = None, /, *,
                 nvcc: str | None = None, **kwargs) -> bytes:
    """Build one CUDA source (it #includes the others) into a cubin with nvcc. Keyword arguments
    are CompileOptions fields; ``arch`` defaults to sm_90 here."""
    if options is None:
        opts = CompileOptions(**{"arch": "sm_90", **kwargs})
    else:
        opts = replace(options, **kwargs)
    found = find_nvcc()
    exe = nvcc or (str(found) if found else None)
    if not exe:
        raise ToolchainError("nvcc not found (install the CUDA toolkit or set CUDA_HOME)")
    srcs = [Path(s).absolute() for s in sources]
    if not srcs:
        raise CompileError("no sources to compile")
    if len(srcs) != 1:
        raise CompileError(f"compile_cuda builds one source (#include the others), got {len(srcs)}")
    src = srcs[0]
    data = read_input(src)
    include_dirs = (*opts.include_dirs, device_include_dir())
    check_includes([(src, data)], include_dirs)
    with private_dir("cuda") as d:
        snap = Path(d) / src.name
        snap.write_bytes(data)
        out = Path(d) / "out.cubin"
        argv = [exe, "-x", "cu", f"-arch={opts.arch}", "-cubin", f"-O{opts.opt}", f"-I{src.parent}",
                *[f"-I{p}" for p in include_dirs], *[f"-D{x}" for x in opts.defines], *opts.extra_flags,
                str(snap), "-o", str(out)]
        r = run_tool(argv, cwd=Path(d), timeout=opts.timeout, what=f"compiling {src} for {opts.arch}")
        if r.returncode != 0:
            raise compile_failure("compile", argv, r, opts.arch, src, {str(snap): str(src)})
        return read_input(out, "cubin")

"""Compilers and compiling: find a toolchain (``discovery``), compile sources into one AMDGPU
code object (``compile``) through the content cache (``cache``), CUDA cubins with nvcc
(``cuda``), and Triton kernels (``triton``)."""

from __future__ import annotations

from submitgen.toolchain.cache import cache_dir
from submitgen.toolchain.compile import CompileResult, check_code_object, compile_sources
from submitgen.toolchain.cuda import compile_cuda, find_nvcc
from submitgen.toolchain.discovery import (
    KNOWN_ARCHES,
    Toolchain,
    describe,
    describe_extras,
    discover,
    format_table,
    select_toolchain,
)
from submitgen.toolchain.options import CODE_OBJECT_VERSIONS, SOURCE_SUFFIXES, CompileOptions

__all__ = [
    "CODE_OBJECT_VERSIONS",
    "KNOWN_ARCHES",
    "SOURCE_SUFFIXES",
    "CompileOptions",
    "CompileResult",
    "Toolchain",
    "cache_dir",
    "check_code_object",
    "compile_cuda",
    "compile_sources",
    "describe",
    "describe_extras",
    "discover",
    "find_nvcc",
    "format_table",
    "select_toolchain",
]

"""Compilers and compiling: find a toolchain (``discovery``), compile sources into one AMDGPU
code object (``compile``) through the content cache (``cache``), CUDA cubins with nvcc
(``cuda``), and Triton kernels (``triton``)."""

from __future__ import annotations

from .cache import cache_dir
from .compile import CompileResult, check_code_object, compile_sources
from .cuda import compile_cuda, find_nvcc
from .discovery import (
    KNOWN_ARCHES,
    Toolchain,
    describe,
    describe_extras,
    discover,
    format_table,
    select_toolchain,
)
from .options import CODE_OBJECT_VERSIONS, SOURCE_SUFFIXES, CompileOptions

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

"""What to compile and how: the frozen options shared by ``submitgen compile`` and the build."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import CompileError
from submitgen.system import DEFAULT_TIMEOUT_S

HIP_SUFFIXES = (".hip", ".cpp", ".cu", ".cc", ".cxx")
CL_SUFFIXES = (".cl",)
ASM_SUFFIXES = (".s", ".S")
SOURCE_SUFFIXES = HIP_SUFFIXES + CL_SUFFIXES + ASM_SUFFIXES
CODE_OBJECT_VERSIONS = (4, 5, 6)
OPT_LEVELS = ("0", "1", "2", "3", "s", "z", "g", "fast")


def source_kind(path: Path) -> str:
    """"hip", "cl" or "asm", from the file name."""
    s = path.suffix
    if s in HIP_SUFFIXES:
        return "hip"
    if s in CL_SUFFIXES:
        return "cl"
    if s in ASM_SUFFIXES:
        return "asm"
    raise CompileError(f"{path}: unknown source type '{s}', expected one of {' '.join(SOURCE_SUFFIXES)}")


@dataclass(frozen=True)
class CompileOptions:
    """How to compile: normalised on creation (``opt`` without ``-O``, tuples, absolute include
    folders) and checked (an unknown level or code object version is a CompileError)."""

    arch: str = "gfx950"
    opt: str = "3"
    defines: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    code_object_version: int | None = None
    extra_flags: tuple[str, ...] = ()
    compiler: str | None = None  # an explicit compiler (path or name on PATH); None: discover
    use_cache: bool = True
    timeout: float = DEFAULT_TIMEOUT_S  # per compiler run, seconds

    def __post_init__(self) -> None:
        opt = str(self.opt).removeprefix("-O")
        if opt not in OPT_LEVELS:
            raise CompileError(f"optimisation level '-O{opt}' is not one of -O0 -O1 -O2 -O3 -Os -Oz")
        cov = self.code_object_version
        if cov is not None and cov not in CODE_OBJECT_VERSIONS:
            raise CompileError(
                f"code object version {cov} is not supported, expected one of "
                f"{', '.join(map(str, CODE_OBJECT_VERSIONS))}"
            )
        if not self.timeout > 0:
            raise CompileError(f"compile time limit must be a positive number of seconds, got {self.timeout}")
        object.__setattr__(self, "opt", opt)
        object.__setattr__(self, "defines", _strs(self.defines))
        object.__setattr__(self, "extra_flags", _strs(self.extra_flags))
        object.__setattr__(self, "include_dirs", tuple(Path(d).absolute() for d in self.include_dirs))


def _strs(values: Sequence[str] | str) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(str(v) for v in values)

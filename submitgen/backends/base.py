"""The backend protocol and the value a backend's compile or load gives the build."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from submitgen.options import Target

if TYPE_CHECKING:
    from submitgen.readers.base import KernelInfo, ObjectInfo
    from submitgen.toolchain.triton import TritonArtifact, TritonSpec


@dataclass(frozen=True)
class Image:
    """One code object's bytes as a backend produced or loaded them, before it is read."""

    data: bytes
    label: str  # how messages name it: "mm_basic (gfx950)", a path, ...
    # the reader's model, when making the image read one
    parsed: ObjectInfo | None = field(default=None, compare=False)
    source_sha256: tuple[str, ...] = ()  # of each source as the compiler read it, when it says


class Backend(Protocol):
    """What the build needs of a GPU target."""

    target: Target
    default_arch: str
    triton_kind: str  # the image Triton makes for this target ("hsaco", "cubin")

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        """Compile a project's device sources into one code object."""

    def compile_triton(self, spec: TritonSpec, arch: str, *, use_cache: bool) -> TritonArtifact:
        """Compile one Triton specialization (a TritonSpec) into a TritonArtifact for ``arch``."""

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        """The one code object for ``arch`` that the file at ``path`` holds."""

    def read(self, image: Image) -> ObjectInfo:
        """Parse a code object (the build's only parse of it)."""

    def lds_limit(self, code_object: ObjectInfo) -> int:
        """Bytes of static + dynamic shared memory one block may use on this object's processor."""

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        """One short phrase for the build summary's occupancy column."""


def compile_triton(spec: TritonSpec, arch: str, kind: str, *, use_cache: bool) -> TritonArtifact:
    """Compile a Triton specialization with the toolchain; the image must be of ``kind``."""
    from submitgen.errors import TritonCompileError
    from submitgen.toolchain.triton import compile_triton as compile_one

    artifact = compile_one(spec, arch, cache=use_cache)
    if artifact.kind != kind:
        raise TritonCompileError(
            f"{spec.source}: Triton kernel '{spec.kernel}' for {arch} gave a {artifact.kind}, "
            f"this target loads a {kind}"
        )
    return artifact

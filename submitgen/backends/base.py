"""The backend protocol, the value a backend's compile or load gives the build, and the runtime
an emitted file binds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from submitgen.options import Target, TritonTarget

if TYPE_CHECKING:
    from submitgen.readers.base import HeaderInfo, KernelInfo, ObjectInfo


class Runtime(str):
    """The runtime library an emitted loader binds (template ``runtime/<name>.py.j2``); it is its
    name, a str, as templates compare it. ``label`` names it in the file's comments; ``after_load``
    is a function of its template that the ctypes launcher calls once the kernels are loaded ("" for
    none; CUDA's allows more than 48 KiB of dynamic shared memory)."""

    label: str
    after_load: str

    def __new__(cls, name: str, label: str, after_load: str = "") -> Runtime:
        self = super().__new__(cls, name)
        self.label = label
        self.after_load = after_load
        return self

    def __repr__(self) -> str:
        return f"Runtime({str(self)!r}, {self.label!r}, {self.after_load!r})"


@dataclass(frozen=True)
class Image:
    """One code object's bytes as a backend produced or loaded them, before it is read."""

    data: bytes
    label: str  # how messages name it: "mm_basic (gfx950)", a path, ...
    # the reader's model, when making the image read one
    parsed: ObjectInfo | None = field(default=None, compare=False)
    source_sha256: tuple[str, ...] = ()  # of each source as the compiler read it, when it says


class Backend(Protocol):
    """What the build, the CLI, the launchers and the readers need of a GPU target: everything that
    differs between targets is here (BACKENDS in backends/__init__.py lists them, in
    ``options.Target``'s order)."""

    target: Target
    summary: str  # one phrase for --target's help
    arches: tuple[str, ...]  # the processors it names in --arch's help, the default first
    default_arch: str
    runtime: Runtime  # what an emitted file binds on it (the ctypes launcher's, and any launcher's default)
    image_kind: str  # the image it loads ("hsaco", "cubin"): a front end's compiler must make this kind
    e_machine: int  # the ELF e_machine of its code objects: how a container's reader picks its reader
    triton_arches: Mapping[str, TritonTarget]  # the arches Triton builds for it (toolchain/triton.py)

    def compile(self, sources: tuple[Path, ...], arch: str, *, label: str, compiler: str | None,
                use_cache: bool) -> Image:
        """Compile a project's device sources into one code object."""

    def load_prebuilt(self, path: Path, arch: str) -> Image:
        """The one code object for ``arch`` that the file at ``path`` holds."""

    def read_header(self, data: bytes, source: str) -> HeaderInfo:
        """Check and decode the ELF header of one of its code objects (its processor)."""

    def read(self, image: Image) -> ObjectInfo:
        """Parse a code object (the build's only parse of it)."""

    def lds_limit(self, code_object: ObjectInfo) -> int:
        """Bytes of static + dynamic shared memory one block may use on this object's processor."""

    def occupancy_text(self, code_object: ObjectInfo, kernel: KernelInfo, block: int,
                       dynamic_lds: int) -> str:
        """One short phrase for the build summary's occupancy column."""

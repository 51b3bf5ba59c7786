"""The typed values the submission templates read. The build fills a :class:`RenderContext`;
``render`` hands it to the templates whole (nothing flattened into strings), and the templates
write every value taken from an input through the ``py`` filter (a Python literal)."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.errors import RenderError
from submitgen.launchers import LauncherSpec, Runtime
from submitgen.options import Compress
from submitgen.project.launches import AqlEntry
from submitgen.render.embed import Blob
from submitgen.runtime.pack import SgLaunchDefaults

# Dynamic shared memory a CUDA kernel gets without opting in (cuFuncSetAttribute), bytes.
CUDA_DEFAULT_DYNAMIC_SHARED = 48 * 1024


@dataclass(frozen=True)
class KernelEntry:
    """One kernel a plan may launch: where its code lives and its explicit arguments."""

    name: str  # the name the plan launches it by
    object_index: int  # index of the code object that holds it
    symbol: str  # its function symbol in that code object
    explicit_bytes: int
    args: tuple[tuple[int, int, str, str], ...]  # (offset, size, value_kind, type_name), every explicit one
    # what its compiler decided for its launches (runtime/pack.py's sg_apply_defaults); None for
    # a kernel whose plan says everything itself
    defaults: SgLaunchDefaults | None = None
    dynamic_shared: int = 0  # the most dynamic shared memory (LDS) any launch of it asks for


@dataclass(frozen=True)
class Pasted:
    """Python sources pasted into the submission; their imports are hoisted to the top."""

    leaves: str  # _sg_leaves(data), _sg_key(data)
    fallback: str  # _sg_fallback(data)
    plan: str  # the kernel project's launch.py
    plan_name: str  # "project/launch.py", for the section comment
    plan_triton_resolved: bool = False  # its TRITON literal was rewritten for the build's arch


@dataclass(frozen=True)
class RenderContext:
    """Everything the submission templates read; nothing else reaches them."""

    header_lines: tuple[str, ...]
    provenance: str
    version: str
    project: str
    command: str
    leaderboard: str
    target_id: str
    arch: str
    runtime: Runtime  # one of the launcher's runtimes
    launcher: LauncherSpec
    compress: Compress
    blobs: tuple[Blob, ...]
    kernels: tuple[KernelEntry, ...]
    pasted: Pasted
    allow_fallback: bool
    reuse_output: bool = False
    outputs: int = 0  # the number of tensors of a tuple output; 0: one tensor
    aql: tuple[AqlEntry, ...] = ()  # --launcher aql only

    def __post_init__(self) -> None:
        for line in (*self.header_lines, self.provenance):
            if not (line.startswith("#") and line.isprintable()):
                raise RenderError(f"a header line must be one printable comment line, got {line!r:.120}")
        if not isinstance(self.compress, Compress):
            raise RenderError(f"compress must be a Compress ({', '.join(Compress)}), got {self.compress!r}")
        if not isinstance(self.launcher, LauncherSpec):
            raise RenderError(f"launcher must be a LauncherSpec, got {self.launcher!r}")
        allowed = tuple(dict.fromkeys(self.launcher.runtimes.values()))
        if not isinstance(self.runtime, Runtime) or self.runtime not in allowed:
            raise RenderError(f"launcher {self.launcher.name} renders with runtime {' or '.join(allowed)}, "
                              f"got {str(self.runtime)!r}")

    @property
    def images(self) -> tuple[tuple[str, int], ...]:
        """(sha256, size) of every embedded code object, in the order the kernels index them."""
        return tuple(part for blob in self.blobs for part in blob.images)

    @property
    def defaulted(self) -> tuple[KernelEntry, ...]:
        """Kernels whose compiler decided part of their launches."""
        return tuple(k for k in self.kernels if k.defaults is not None)

    @property
    def large_shared(self) -> tuple[KernelEntry, ...]:
        """Kernels whose launches ask for more dynamic shared memory than CUDA gives by default."""
        return tuple(k for k in self.kernels if k.dynamic_shared > CUDA_DEFAULT_DYNAMIC_SHARED)

    @property
    def runtime_name(self) -> str:
        return self.runtime.label

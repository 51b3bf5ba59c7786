"""What every reader (AMD code objects, NVIDIA cubins) gives the rest of submitgen: findings, the
kernel interface (``KernelInfo``) and the objects' base class (``ObjectInfo``, with the lookups
both share). ``report``, ``diff`` and ``containers`` use only these."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from submitgen.errors import CodeObjectError

if TYPE_CHECKING:
    from submitgen.readers.amd.processors import Processor


@dataclass(frozen=True)
class Finding:
    """Something that parses but a loader or a careful user would object to."""

    severity: str  # "error" (will not load / launch), "warning", "info"
    code: str  # stable short id, e.g. "descriptor-mismatch", "lds-over-limit", "spills"
    message: str
    kernel: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "message": self.message, "kernel": self.kernel}


class ArgInfo(Protocol):
    @property
    def index(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def value_kind(self) -> str: ...

    @property
    def name(self) -> str | None: ...

    @property
    def hidden(self) -> bool: ...

    @property
    def end(self) -> int: ...


Add = Callable[[str, str, str], None]  # (severity, code, message): records one finding


def check_arg_extent(a: ArgInfo, label: str, prev_end: int, limit: int,
                     add: Add, *, previous: str, beyond: str) -> None:
    """The layout checks both readers make on one argument: it does not overlap the ``previous`` one
    (ending at ``prev_end``), it is aligned to its size (1 to 8 bytes, a power of two), and it ends
    within ``limit`` bytes (``beyond`` names that limit)."""
    if a.offset < prev_end:
        add("error", "arg-layout",
            f"{label} at offset {a.offset} overlaps the {previous} ending at {prev_end}")
    if a.size and a.size & (a.size - 1) == 0 and a.size <= 8 and a.offset % a.size:
        add("warning", "arg-layout", f"{label} at offset {a.offset} is not aligned to its size {a.size}")
    if a.end > limit:
        add("error", "arg-layout", f"{label} ends at byte {a.end}, beyond {beyond}")


class KernelInfo(Protocol):
    """One kernel, in the AMD metadata's terms (a cubin fills what it has; absent counts are None)."""

    @property
    def name(self) -> str: ...

    @property
    def symbol(self) -> str: ...

    @property
    def args(self) -> tuple[ArgInfo, ...]: ...

    @property
    def kernarg_segment_size(self) -> int: ...

    @property
    def kernarg_segment_align(self) -> int: ...

    @property
    def group_segment_fixed_size(self) -> int: ...

    @property
    def private_segment_fixed_size(self) -> int: ...

    @property
    def vgpr_count(self) -> int: ...

    # None on NVIDIA
    @property
    def sgpr_count(self) -> int | None: ...

    @property
    def agpr_count(self) -> int | None: ...

    @property
    def sgpr_spill_count(self) -> int | None: ...

    @property
    def vgpr_spill_count(self) -> int | None: ...

    @property
    def max_flat_workgroup_size(self) -> int: ...

    @property
    def reqd_workgroup_size(self) -> tuple[int, ...] | None: ...

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    @property
    def demangled_name(self) -> str: ...

    @property
    def explicit_args(self) -> tuple[ArgInfo, ...]: ...

    def to_json(self, demangled: str) -> dict[str, Any]:
        """The reader's own keys for inspect --json (docs/inspect-json.md)."""
        ...

    def text_lines(self) -> list[str]:
        """inspect's lines for this kernel between its name and its occupancy (<= 100 columns)."""
        ...


class HeaderInfo(Protocol):
    """What ``KernelLookup`` reads of a reader's header."""

    @property
    def target_id(self) -> str: ...

    @property
    def processor(self) -> str: ...


@dataclass(frozen=True)
class ObjectInfo(ABC):
    """What AMD code objects and CUDA cubins share and give the rest of submitgen: where the bytes
    came from, their size and hash, the lookups, and what each reader says of its format.
    Subclasses add ``header``, ``kernels`` and ``findings`` (object-level findings plus every
    kernel's)."""

    label: str
    size: int
    sha256: str
    if TYPE_CHECKING:  # what each subclass declares as its own fields
        header: HeaderInfo
        kernels: tuple[KernelInfo, ...]
        findings: tuple[Finding, ...]

    @property
    @abstractmethod
    def version_label(self) -> str:
        """``code object v5`` or ``cubin``: what diff and inspect call the format."""

    @abstractmethod
    def processor_facts(self) -> Processor | None:
        """Occupancy facts (``processors.Processor``) for this object's processor, or None."""

    @abstractmethod
    def occupancy_note(self) -> str | None:
        """What inspect says when there are no occupancy facts (None: say nothing)."""

    @abstractmethod
    def header_json(self) -> Mapping[str, Any]: ...

    @abstractmethod
    def header_lines(self) -> list[str]: ...

    @property
    def target_id(self) -> str:
        return self.header.target_id

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def processor(self) -> str:
        return self.header.processor

    @property
    def family(self) -> str:
        """The arch a build for which may embed this object: its processor (a cubin's sm_90a: sm_90)."""
        return self.processor

    def kernel(self, name: str) -> KernelInfo:
        """The kernel whose name (or symbol, or unique demangled name, with or without its
        argument list) is ``name``; a ``CodeObjectError`` listing the kernels otherwise."""
        for k in self.kernels:
            if name in (k.name, k.symbol):
                return k
        by_demangled = [k for k in self.kernels if name in (k.demangled_name, k.demangled_name.split("(")[0])]
        if len(by_demangled) == 1:
            return by_demangled[0]
        names = ", ".join(repr(k.name) for k in self.kernels) or "none"
        raise CodeObjectError(f"{self.label}: no kernel named {name!r}; it has {names}")

    def require_loadable(self, label: str | None = None) -> None:
        """Raise ``CodeObjectError`` with the first error finding, if any, naming the object by
        ``label`` (default: its own ``label``). The build's one check of the findings."""
        if self.errors:
            f = self.errors[0]
            where = f"kernel {f.kernel!r}: " if f.kernel else ""
            raise CodeObjectError(f"{label or self.label}: {where}{f.message}")

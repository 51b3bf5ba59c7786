"""``submitgen diff``'s model: the fields it compares (``FIELDS``), the ``--fail-on`` rules, and the
frozen results (``Side``, ``FieldChange``, ``KernelDiff``, ``DiffResult``) that ``compare.py`` builds
and ``text.py`` renders."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from submitgen.diff.pairing import ArgChange
from submitgen.inspection.launchtable import Launch
from submitgen.readers.amd import processors
from submitgen.readers.base import KernelInfo as Kernel
from submitgen.readers.base import ObjectInfo as CodeObject
from submitgen.readers.containers import LoadedCodeObject

FAIL_ON_RULES = ("spills", "scratch", "occupancy", "lds", "args")

# (Kernel attribute or special key, label, unit, fail-on rule that watches it, worse direction)
# direction +1: an increase is worse; -1: a decrease is worse; 0: neither.
FIELDS: tuple[tuple[str, str, str, str | None, int], ...] = (
    ("target", "target", "", None, 0),
    ("vgpr_count", "VGPR", "", None, 0),
    ("agpr_count", "AGPR", "", None, 0),
    ("sgpr_count", "SGPR", "", None, 0),
    ("vgpr_spill_count", "VGPR spills", "", "spills", +1),
    ("sgpr_spill_count", "SGPR spills", "", "spills", +1),
    ("private_segment_fixed_size", "scratch", "B", "scratch", +1),
    ("group_segment_fixed_size", "static LDS", "B", "lds", +1),
    ("dynamic_lds", "dynamic LDS", "B", "lds", +1),
    ("occupancy", "occupancy", "waves/SIMD", "occupancy", -1),
    ("code_size", "code size", "B", None, 0),
    ("explicit_args_size", "explicit kernarg", "B", None, 0),
    ("kernarg_segment_size", "kernarg segment", "B", None, 0),
    ("max_flat_workgroup_size", "max workgroup size", "", None, 0),
    ("wavefront_size", "wavefront", "", None, 0),
)


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Side:
    """One input (OLD or NEW): its code objects and kernels by the name the plan launches them by
    (a ``.py`` submission's launch table names each Triton specialization; else the ``.name``)."""

    source: str
    loaded: tuple[LoadedCodeObject, ...]
    code_objects: tuple[CodeObject, ...]
    kernels: tuple[tuple[Kernel, CodeObject], ...]  # in file order, launch names unique
    plan_blocks: Mapping[str | None, tuple[int, ...]]  # None: launches with a non-literal name
    launches: tuple[Launch | None, ...] = ()  # per kernel: its launch-table entry (None: no table)

    @property
    def names(self) -> tuple[str, ...]:
        launches = (*self.launches, *(None,) * len(self.kernels))
        return tuple(la.name if la is not None else k.name for (k, _), la in zip(self.kernels, launches))

    def get(self, name: str) -> tuple[Kernel, CodeObject] | None:
        return self.kernels[self.names.index(name)] if name in self.names else None

    def launch(self, name: str) -> Launch | None:
        i = self.names.index(name) if name in self.names else len(self.launches)
        return self.launches[i] if i < len(self.launches) else None


@dataclass(frozen=True)
class FieldChange:
    key: str
    label: str
    unit: str
    old: Any
    new: Any
    rule: str | None
    direction: int

    @property
    def changed(self) -> bool:
        return self.old != self.new

    @property
    def delta(self) -> int | None:
        if isinstance(self.old, int) and isinstance(self.new, int) and not isinstance(self.old, bool):
            return self.new - self.old
        return None

    @property
    def worse(self) -> bool | None:
        if self.rule is None:
            return None
        d = self.delta
        return d is not None and d * self.direction > 0


@dataclass(frozen=True)
class Trip:
    """A ``--fail-on`` rule that tripped: which, on which kernel, and why."""

    rule: str
    kernel: str
    message: str


@dataclass(frozen=True)
class BlockChoice:
    old: int
    new: int
    source: str  # "option" | "launch plan" | "max workgroup size"
    detail: str  # words for the output, e.g. "from the launch plan"


@dataclass(frozen=True)
class KernelDiff:
    name: str  # NEW's kernel
    demangled: str
    block: BlockChoice
    occupancy_target: str | None  # NEW's facts
    old_occupancy: processors.Occupancy | None
    new_occupancy: processors.Occupancy | None
    fields: tuple[FieldChange, ...]
    args: tuple[ArgChange, ...]  # differing explicit args only
    old_name: str = ""  # OLD's kernel (the same name unless paired one-to-one or by --pair)
    pairing: str = "name"
    old_target: str | None = None  # OLD's facts
    symbol: str = ""  # NEW's kernel .name, when the name is a launch name that differs from it

    @property
    def changed(self) -> bool:
        return bool(self.args) or any(f.changed for f in self.fields)


@dataclass(frozen=True)
class DiffResult:
    """Everything ``diff`` found: both inputs, the pairs compared, and what tripped."""

    old: Side
    new: Side
    arch: str | None
    added: tuple[str, ...]
    removed: tuple[str, ...]
    kernels: tuple[KernelDiff, ...]
    fail_on: tuple[str, ...]
    tripped: tuple[Trip, ...]

    @property
    def compared(self) -> int:
        return len(self.kernels)

    @property
    def exit_code(self) -> int:
        return 1 if self.tripped else 0

"""``submitgen diff``'s model: the compared fields, the ``--fail-on`` rules and the frozen results
that ``compare.py`` builds and ``text.py`` renders (docs/diff-json.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from submitgen.inspection.report import Inspected
from submitgen.inspection.source import Launch
from submitgen.readers.amd import processors
from submitgen.readers.base import ArgInfo
from submitgen.readers.base import KernelInfo as Kernel

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


@dataclass(frozen=True)
class Side:
    """One input (OLD or NEW): its code objects as inspect reads them, and its kernels by the name
    the plan launches them by (a ``.py`` submission's launch table), else by ``.name``."""

    source: str
    objects: tuple[Inspected, ...]
    names: tuple[str, ...]  # in file order, unique
    kernels: tuple[tuple[Kernel, Inspected], ...]  # one per name, with the object that holds it
    launches: tuple[Launch | None, ...]  # one per name: its launch-table entry (None: no table)
    plan_blocks: Mapping[str | None, tuple[int, ...]]  # None: launches with a non-literal name

    def get(self, name: str) -> tuple[Kernel, Inspected] | None:
        return self.kernels[self.names.index(name)] if name in self.names else None

    def launch(self, name: str) -> Launch | None:
        return self.launches[self.names.index(name)] if name in self.names else None


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
        return None if self.rule is None else (self.delta or 0) * self.direction > 0


@dataclass(frozen=True)
class ArgChange:
    index: int  # the argument's position in NEW (in OLD for a removal)
    old: ArgInfo | None
    new: ArgInfo | None

    @property
    def status(self) -> str:
        """``inserted``, ``removed``, ``moved`` (only the offset differs) or ``changed``."""
        if self.old is None or self.new is None:
            return "inserted" if self.old is None else "removed"
        same = (self.old.name, self.old.size, self.old.value_kind) == (self.new.name, self.new.size,
                                                                       self.new.value_kind)
        return "moved" if same else "changed"


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
    source: str  # "option" | "triton" | "launch plan" | "required block" | "max workgroup size"
    detail: str  # words for the output, e.g. "block 128 (launch plan)"


@dataclass(frozen=True)
class KernelDiff:
    name: str  # NEW's kernel, by launch name
    old_name: str  # OLD's kernel (the same name unless paired one-to-one or by --pair)
    pairing: str  # "name" | "one-to-one" | "--pair"
    symbol: str  # NEW's kernel .name
    demangled: str
    block: BlockChoice
    old_target: str | None  # the facts used for each side's occupancy
    occupancy_target: str | None
    old_occupancy: processors.Occupancy | None
    new_occupancy: processors.Occupancy | None
    fields: tuple[FieldChange, ...]
    args: tuple[ArgChange, ...]  # differing explicit args only

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

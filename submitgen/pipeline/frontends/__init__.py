"""Front ends: each turns one kind of a kernel project's input into the code objects the
submission embeds (``FRONT_ENDS``, run in ``order``). The protocol and how to add one: HACKING.md,
"Where each axis of change lives"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from submitgen.pipeline.values import EmbeddedObject, Prepared
    from submitgen.project.param_kinds import TritonParams

from submitgen.registry import Registry


class FrontEnd(Protocol):
    name: str
    order: int

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]: ...

    def inputs(self, p: Prepared) -> tuple[Path, ...]: ...

    def param_kinds(self, p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]: ...

    def param_names(self, p: Prepared) -> dict[str, TritonParams]: ...


FRONT_ENDS: Registry[FrontEnd] = Registry(
    "front end", tuple((n, f"{__name__}.{n}") for n in ("prebuilt", "compiled", "triton")), attr="FRONT_END")


def front_ends() -> tuple[FrontEnd, ...]:
    """Every front end, in ``order``."""
    return tuple(sorted(FRONT_ENDS.values(), key=lambda f: (f.order, f.name)))

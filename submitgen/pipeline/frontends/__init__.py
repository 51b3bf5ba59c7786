"""Front ends: each turns one kind of input of a kernel project into the code objects the
submission embeds, with the launch names each object serves and what its compiler decided for
their launches (``SgLaunchDefaults``).

A front end is a module named in ``FRONT_ENDS`` that binds ``FRONT_END``, an object with a ``name``, an
``order`` (front ends run in ascending order; the objects keep that order in the file) and
``objects(prepared) -> tuple[EmbeddedObject, ...]``, which returns () when the project has none
of its input; ``inputs(prepared)``, the files it reads (the build's -o may be none of them);
``param_kinds(prepared)``, whether each by-value parameter of the launch names it serves is an int
or a float, where its language says; and ``param_names(prepared)``, the parameters the plan passes
by name, where its language names them. ``front_ends()`` lists them; the build, ``prepare``'s input
list and ``check``'s plan checks ask each of them. Adding a language means adding its module here
(and its line in ``FRONT_ENDS``), its compile step in ``submitgen/toolchain/`` (with any per-arch
table of its own), and its declaration in the project (``project/load.py``, as ``TRITON`` is)."""

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

"""Front ends: each turns one kind of input of a kernel project into the code objects the
submission embeds, with the launch names each object serves and what its compiler decided for
their launches (``SgLaunchDefaults``).

A front end is a module of this package that binds ``FRONT_END``, an object with a ``name``, an
``order`` (front ends run in ascending order; the objects keep that order in the file) and
``objects(prepared) -> tuple[EmbeddedObject, ...]``, which returns () when the project has none
of its input; ``inputs(prepared)``, the files it reads (the build's -o may be none of them);
``param_kinds(prepared)``, whether each by-value parameter of the launch names it serves is an int
or a float, where its language says; and ``param_names(prepared)``, the parameters the plan passes
by name, where its language names them. ``front_ends()`` finds them all; the build, ``prepare``'s
input list and ``check``'s plan checks ask each of them. Adding a language means adding its
module here, its compile step in ``submitgen/toolchain/`` (with any per-arch table of its own),
and its declaration in the project (``project/load.py``, as ``TRITON`` is)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from submitgen.pipeline.values import EmbeddedObject, Prepared
    from submitgen.project.param_kinds import TritonParams


class FrontEnd(Protocol):
    name: str
    order: int

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]: ...

    def inputs(self, p: Prepared) -> tuple[Path, ...]: ...

    def param_kinds(self, p: Prepared) -> dict[str, tuple[str, tuple[object, ...]]]: ...

    def param_names(self, p: Prepared) -> dict[str, TritonParams]: ...


def front_ends() -> tuple[FrontEnd, ...]:
    """Every front end of this package, in ``order``."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        front_end = getattr(module, "FRONT_END", None)
        if front_end is not None:
            found.append(front_end)
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))

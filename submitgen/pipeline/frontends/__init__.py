"""Front ends: each turns one kind of input of a kernel project into the code objects the
submission embeds, with the launch names each object serves and what its compiler decided for
their launches (``SgLaunchDefaults``).

A front end is a module of this package that binds ``FRONT_END``, an object with a ``name``, an
``order`` (front ends run in ascending order; the objects keep that order in the file) and
``objects(prepared) -> tuple[EmbeddedObject, ...]``, which returns () when the project has none
of its input. ``front_ends()`` finds them all; adding a language means adding its module here and
its compile step in ``submitgen/toolchain/``."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from submitgen.pipeline.values import EmbeddedObject, Prepared


class FrontEnd(Protocol):
    name: str
    order: int

    def objects(self, p: Prepared) -> tuple[EmbeddedObject, ...]: ...


def front_ends() -> tuple[FrontEnd, ...]:
    """Every front end of this package, in ``order``."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        front_end = getattr(module, "FRONT_END", None)
        if front_end is not None:
            found.append(front_end)
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))

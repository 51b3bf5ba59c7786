"""Backends: everything that differs between GPU targets lives behind :class:`Backend`.

The build asks the backend of ``BuildOptions.target`` to compile a project, load prebuilt
objects, read them, and give limits and occupancy; nothing outside this package asks which
target is active. Adding a backend: a module here with a class satisfying the protocol, a
member of ``options.Target``, an entry in ``BACKENDS``, and the runtime each launcher that runs on
it binds there (its ``LauncherSpec.runtimes``, submitgen/launchers/)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from submitgen.backends.amd import AmdBackend
from submitgen.backends.base import Backend, Image
from submitgen.backends.cuda import CudaBackend
from submitgen.options import Target, parse

__all__ = ["BACKENDS", "AmdBackend", "Backend", "CudaBackend", "Image", "get_backend"]


BACKENDS: Mapping[Target, Backend] = MappingProxyType({
    Target.AMD: AmdBackend(),
    Target.CUDA: CudaBackend(),
})


def get_backend(target: Target | str) -> Backend:
    """The backend of ``target`` (an OptionError names the choices for an unknown one)."""
    return BACKENDS[parse(Target, target, "--target")]


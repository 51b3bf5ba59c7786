"""Backends: everything that differs between GPU targets lives behind :class:`Backend`;
``BACKENDS`` is the one registry of targets, and nothing outside this package asks which target is
active. Adding a target: HACKING.md, "Where each axis of change lives"."""

from __future__ import annotations

from submitgen.backends.base import Backend, Image, Runtime
from submitgen.options import Target, TritonTarget, parse
from submitgen.registry import Registry

__all__ = ["BACKENDS", "Backend", "Image", "Runtime", "TritonTarget", "get_backend"]


# one backend per Target member, in its order (tests/test_build_stages.py checks it)
BACKENDS: Registry[Backend] = Registry(
    "backend", ((Target.AMD, "submitgen.backends.amd"), (Target.CUDA, "submitgen.backends.cuda")),
    attr="BACKEND")


def get_backend(target: Target | str) -> Backend:
    """The backend of ``target`` (an OptionError names the choices for an unknown one)."""
    return BACKENDS[parse(Target, target, "--target")]


"""Launchers: how an emitted file loads and launches its kernels (``--launcher``), one
:class:`LauncherSpec` each (``spec.py``). ``prepare`` resolves ``--launcher`` to its spec once; every
later stage reads the spec, never the name. Adding one: HACKING.md."""

from __future__ import annotations

from submitgen.errors import LauncherError, OptionError
from submitgen.launchers.spec import ImportCost, LauncherSpec, OwnQueue, Runtime
from submitgen.options import Target
from submitgen.registry import Registry

__all__ = ["DEFAULT", "REGISTRY", "ImportCost", "LauncherSpec", "OwnQueue", "Runtime", "comparable",
           "get_launcher", "register"]

# name -> spec, in the order the CLI lists them
REGISTRY: Registry[LauncherSpec] = Registry(
    "launcher", tuple((n, f"submitgen.launchers.builtin:{n.upper()}") for n in ("ctypes", "cpp", "aql")),
    attr="LAUNCHER", error=LauncherError)
DEFAULT = REGISTRY.builtins[0][0]


def register(spec: LauncherSpec) -> LauncherSpec:
    """Add ``spec`` to the registry (a LauncherError for another launcher of its name)."""
    return REGISTRY.register(spec.name, spec)


def get_launcher(name: str | LauncherSpec) -> LauncherSpec:
    """The spec of ``--launcher name``; OptionError naming the choices for an unknown one."""
    if isinstance(name, LauncherSpec):
        return name
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise OptionError(f"--launcher must be one of {', '.join(REGISTRY)}, got {name!r}") from None


def comparable(launcher: LauncherSpec, target: Target) -> tuple[LauncherSpec, ...]:
    """The other submittable launchers ``target`` runs, which the build summary compares with
    ``launcher``."""
    return tuple(s for s in REGISTRY.values() if s.submittable and s != launcher and target in s.runtimes)

"""Problems from installed packages: the ``submitgen.problems`` entry point group.

A distribution declares, in its pyproject.toml::

    [project.entry-points."submitgen.problems"]
    toy-mul = "submitgen_toy_mul.problem"

The entry point's name is the problem's CLI name; its value names a module that binds
``PROBLEM = ProblemSpec(...)`` (or, as ``module:attr``, the spec itself). The registry
(:mod:`submitgen.problems.registry`) loads every one on first use. A plug-in that cannot be imported,
whose spec is bad or whose name clashes with a problem already registered is not loaded: it becomes
a :class:`BrokenPlugin`, naming the reason, and every other problem still works. docs/plugins.md says
what a plug-in may rely on.

This module imports neither torch nor the problem modules, so the CLI can read it cheaply.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from dataclasses import dataclass
from typing import Any

ENTRY_POINT_GROUP = "submitgen.problems"


@dataclass(frozen=True)
class Origin:
    """Where a registered problem comes from: ``built in``, a ``plug-in`` (its entry point and
    distribution), or ``registered`` by a module calling ``register()``."""

    kind: str
    module: str
    entry_point: str = ""
    distribution: str = ""

    def describe(self) -> str:
        if self.kind == "plug-in":
            return f"plug-in {self.distribution} ({self.entry_point})"
        if self.kind == "built in":
            return f"built in ({self.module})"
        return f"registered by {self.module}"


@dataclass(frozen=True)
class BrokenPlugin:
    """An entry point of the group that did not give a usable problem."""

    name: str
    """The entry point's name: the problem name the plug-in meant to add."""
    value: str
    """What the entry point names: ``package.module`` (or ``package.module:attr``)."""
    distribution: str
    """The installed distribution that declares it, as ``name version``."""
    reason: str
    """Why it was not loaded, one line."""

    def message(self) -> str:
        return (f"problem plug-in {self.name!r} ({self.value}) of the package {self.distribution} "
                f"{self.reason}")


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) as one space."""
    return " ".join(str(text).split())


def distribution_label(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown distribution)"
    name = dist.metadata["Name"] or "(unnamed)"
    return f"{name} {dist.version}"


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Every entry point of the group on the current ``sys.path``, sorted by name (then value)."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return tuple(sorted(found, key=lambda ep: (ep.name, ep.value)))


class PluginFailed(Exception):
    """Raised by :func:`load_spec` with the reason a plug-in gives no problem (one line)."""


def load_spec(ep: importlib.metadata.EntryPoint, spec_type: type, spec_error: type[Exception]) -> Any:
    """Import what ``ep`` names and return its ``ProblemSpec``; :class:`PluginFailed` says why not.
    ``spec_type`` is ProblemSpec and ``spec_error`` ProblemError (passed in: this module stays free
    of torch)."""
    module_name = ep.value.split(":", 1)[0].strip()
    try:
        if ":" in ep.value:
            spec = ep.load()
            where = ep.value.strip()
        else:
            spec = getattr(importlib.import_module(module_name), "PROBLEM", None)
            where = f"{module_name}.PROBLEM"
    except spec_error as e:
        raise PluginFailed(f"has a bad spec: {one_line(e)}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure of a third-party import
        raise PluginFailed(f"cannot be imported: {type(e).__name__}: {one_line(e)}") from None
    if not isinstance(spec, spec_type):
        hint = "" if spec is not None or ":" in ep.value else " (the module binds no PROBLEM)"
        raise PluginFailed(f"has a bad spec: {where} is {type(spec).__name__}, expected a ProblemSpec{hint}")
    if spec.name != ep.name:
        raise PluginFailed(f"has a bad spec: its entry point is named {ep.name!r}, but the spec's name "
                           f"is {spec.name!r} (they must be equal)")
    if spec.module not in sys.modules:
        raise PluginFailed(f"has a bad spec: module={spec.module!r} is not an imported module "
                           f"(write module=__name__ in {module_name})")
    if not spec.kernel_project.is_dir():
        raise PluginFailed(f"has a bad spec: kernel_project {str(spec.kernel_project)!r} is not a folder")
    return spec


"""The one registry of problems and leaderboards that the build, lint, payload, test/bench and the
CLI read.

- Problems: every module of the ``submitgen.problems`` package that binds ``PROBLEM`` (a
  :class:`ProblemSpec`) is found on first use, then every plug-in of the ``submitgen.problems``
  entry point group (:mod:`submitgen.problems.plugins`); any other module adds its own with
  :func:`register` (tests do this with a toy problem). A plug-in that fails to load is kept as a
  :class:`~submitgen.problems.plugins.BrokenPlugin`: naming its problem raises its reason, every
  other problem works.
- Leaderboards: those of the registered problems, plus :data:`OTHER_LEADERBOARDS`, the ones the server
  runs that submitgen has no problem module for. Lint knows all of them; ``test``/``bench``/``build``
  need a problem.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from submitgen.errors import ProblemError
from submitgen.problems.plugins import (
    BrokenPlugin,
    Origin,
    PluginFailed,
    distribution_label,
    entry_points,
    load_spec,
)

if TYPE_CHECKING:  # the spec module imports torch: loaded only where a spec is made or checked
    from submitgen.problems.spec import ProblemSpec


@dataclass(frozen=True)
class Leaderboard:
    """A leaderboard the server runs: its GPUs, its measured payload baseline (None: not measured) and
    the CLI name of submitgen's problem for it (None: lint only)."""

    name: str
    gpus: tuple[str, ...]
    payload_baseline: int | None = None
    problem: str | None = None
    clones_inputs: bool = True  # the problem's eval_clones_inputs (True without a problem)


ROUND_ORDER: tuple[str, ...] = ("amd-mxfp4-mm", "amd-mixed-mla", "amd-moe-mxfp4")
"""The AMD Developer Challenge February 2026 problems in the round's order: problems are listed in
this order, then any other registered problem in registration order."""

OTHER_LEADERBOARDS: tuple[Leaderboard, ...] = (
    # AMD Developer Challenge 2025 (problems/amd.yaml, problems/amd_distributed.yaml)
    Leaderboard("amd-identity", ("MI300",)),
    Leaderboard("amd-fp8-mm", ("MI300",)),
    Leaderboard("amd-mixture-of-experts", ("MI300",)),
    Leaderboard("amd-mla-decode", ("MI300",)),
    Leaderboard("amd-all2all", ("MI300x8",)),
    Leaderboard("amd-gemm-rs", ("MI300x8",)),
    Leaderboard("amd-ag-gemm", ("MI300x8",)),
)
"""Leaderboards without a problem module. A registered problem's spec replaces a row of the same
leaderboard."""

_registered: dict[str, ProblemSpec] = {}
_origins: dict[str, Origin] = {}
_broken: list[BrokenPlugin] = []
_discovered = False
_plugins_discovered = False


def _discover() -> None:
    global _discovered
    if not _discovered:
        _discovered = True
        import submitgen.problems as package
        from submitgen.problems.spec import ProblemSpec

        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg or info.name.startswith("_"):
                continue
            spec = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "PROBLEM", None)
            if isinstance(spec, ProblemSpec):
                _add(spec, Origin("built in", spec.module))
    _discover_plugins()


def _discover_plugins() -> None:
    global _plugins_discovered
    if _plugins_discovered:
        return
    _plugins_discovered = True
    from submitgen.problems.spec import ProblemSpec

    for ep in entry_points():
        dist = distribution_label(ep)
        try:
            spec = load_spec(ep, ProblemSpec, ProblemError)
        except PluginFailed as e:
            _broken.append(BrokenPlugin(ep.name, ep.value, dist, str(e)))
            continue
        clash = next((p for p in _registered.values() if p is not spec
                      and (p.name == spec.name or p.leaderboard == spec.leaderboard)), None)
        if clash is not None:
            where = _origins.get(clash.name, Origin("registered", clash.module)).describe()
            _broken.append(BrokenPlugin(ep.name, ep.value, dist, (
                f"clashes with the problem {clash.name!r} ({clash.leaderboard}), {where}: its problem is "
                f"{spec.name!r} ({spec.leaderboard}); a plug-in needs a name and a leaderboard of its own")))
            continue
        _add(spec, Origin("plug-in", spec.module, f"{ep.name} = {ep.value}", dist))


def _add(spec: ProblemSpec, origin: Origin) -> None:
    register(spec)
    _origins.setdefault(spec.name, origin)


def broken_plugins() -> tuple[BrokenPlugin, ...]:
    """The plug-ins that did not load (after the registry was first read)."""
    return tuple(_broken)


def discovered() -> bool:
    """Whether the registry has been read in this process (the CLI reports broken plug-ins then)."""
    return _plugins_discovered


def reload_plugins() -> None:
    """Forget the plug-ins found so far; the next read of the registry looks them up again on the
    current ``sys.path`` (for tests, and after installing one in the same process)."""
    global _plugins_discovered
    for name, origin in list(_origins.items()):
        if origin.kind == "plug-in":
            _origins.pop(name)
            _registered.pop(name, None)
    _broken.clear()
    _plugins_discovered = False
    importlib.invalidate_caches()


def origin(name: str) -> Origin:
    """Where the registered problem ``name`` comes from."""
    spec = get_problem(name)
    return _origins.get(spec.name, Origin("registered", spec.module))


def register(spec: ProblemSpec) -> ProblemSpec:
    """Add ``spec`` to the registry (again with the same spec: no change). A second, different spec
    under a taken name or leaderboard is refused."""
    from submitgen.problems.spec import ProblemSpec

    if not isinstance(spec, ProblemSpec):
        raise ProblemError(f"register() takes a ProblemSpec, got {type(spec).__name__}")
    for other in _registered.values():
        if other is not spec and (other.name == spec.name or other.leaderboard == spec.leaderboard):
            raise ProblemError(f"problem {spec.name!r} ({spec.leaderboard}) clashes with the registered "
                               f"problem {other.name!r} ({other.leaderboard}) from {other.module}")
    _registered[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a problem added with :func:`register` (tests clean up with this)."""
    _registered.pop(name, None)
    _origins.pop(name, None)


def import_root(spec: ProblemSpec) -> str | None:
    """The ``sys.path`` folder from which ``spec.module`` imports (for a worker process), or None."""
    import sys
    from pathlib import Path

    module = sys.modules.get(spec.module)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    levels = spec.module.count(".") + (1 if Path(file).name == "__init__.py" else 0)
    return str(Path(file).resolve().parents[levels])


def load(module: str, name: str, root: str | None = None) -> ProblemSpec:
    """Import ``module`` (from ``root`` when it is not importable as is), register the ``PROBLEM``
    it binds, and return the problem ``name``: how a worker process finds a problem."""
    import sys

    from submitgen.problems.spec import ProblemSpec

    if root and root not in sys.path:
        sys.path.append(root)
    spec = getattr(importlib.import_module(module), "PROBLEM", None)
    if isinstance(spec, ProblemSpec):
        register(spec)
    return get_problem(name)


def problems() -> tuple[ProblemSpec, ...]:
    """Every registered problem, in listing order."""
    _discover()
    order = {lb: i for i, lb in enumerate(ROUND_ORDER)}
    seq = {name: i for i, name in enumerate(_registered)}
    return tuple(sorted(_registered.values(),
                        key=lambda p: (order.get(p.leaderboard, len(order)), seq[p.name])))


def problem_names() -> tuple[str, ...]:
    return tuple(p.name for p in problems())


def get_problem(name: str) -> ProblemSpec:
    """The problem by CLI name ("mxfp4-mm") or leaderboard name ("amd-mxfp4-mm")."""
    key = name.strip()
    for problem in problems():
        if key in (problem.name, problem.leaderboard):
            return problem
    for broken in _broken:
        if key == broken.name:
            raise ProblemError(broken.message())
    known = ", ".join(f"{p.name} ({p.leaderboard})" for p in problems())
    raise ProblemError(f"unknown problem {name!r}: known problems are {known}")


def leaderboards(*, load: bool = True) -> dict[str, Leaderboard]:
    """Every leaderboard lint knows, by name, in listing order: the problems', then the others.
    ``load=False`` imports no problem module that is not imported yet (they import torch): the
    shipped problems' rows are read from their source (:mod:`submitgen.problems.facts`), with the
    same values; where that reading fails, the modules are imported after all."""
    out = {row.name: row for row in _problem_rows(load)}
    for row in OTHER_LEADERBOARDS:
        out.setdefault(row.name, row)
    return out


def _row(p) -> Leaderboard:
    return Leaderboard(p.leaderboard, (p.gpu,), p.payload_baseline, p.name, p.eval_clones_inputs)


def _problem_rows(load: bool) -> list[Leaderboard]:
    if load or _discovered:
        return [_row(p) for p in problems()]
    from submitgen.problems.facts import static_problems

    static = static_problems()
    if static is None:
        return [_row(p) for p in problems()]
    known = list(_registered.values())
    modules = {p.module for p in known}
    known += [f for f in static if f.module not in modules]
    order = {lb: i for i, lb in enumerate(ROUND_ORDER)}
    ranked = sorted(enumerate(known), key=lambda ip: (order.get(ip[1].leaderboard, len(order)), ip[0]))
    return [_row(p) for _, p in ranked]


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted({g for lb in leaderboards().values() for g in lb.gpus}))


def default_payload_baseline() -> int:
    """The largest measured baseline: the safe guess for a file of no known problem."""
    rows = leaderboards(load=False).values()
    return max(lb.payload_baseline for lb in rows if lb.payload_baseline is not None)


def payload_baseline(leaderboard: str | None) -> int:
    """The measured baseline of ``leaderboard``, or :func:`default_payload_baseline`."""
    row = leaderboards(load=False).get(leaderboard) if leaderboard else None
    if row is None or row.payload_baseline is None:
        return default_payload_baseline()
    return row.payload_baseline


class _ProblemsView(Mapping[str, "ProblemSpec"]):
    """A live, read-only ``name -> ProblemSpec`` view of the registry."""

    def __getitem__(self, name: str) -> ProblemSpec:
        for p in problems():
            if p.name == name:
                return p
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(problem_names())

    def __len__(self) -> int:
        return len(problems())

    def __repr__(self) -> str:
        return f"PROBLEMS({', '.join(problem_names())})"


PROBLEMS: Mapping[str, ProblemSpec] = _ProblemsView()

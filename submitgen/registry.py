"""The one way to register problems, launchers, backends and front ends: a :class:`Registry`'s
built-ins are ``(name, "module[:attr]")`` pairs, the form an entry point takes, and both load the
same way on first use (docs/plugins.md); a plug-in that fails to load is kept as a
:class:`BrokenPlugin` naming the reason (a built-in's failure propagates). It imports nothing of
submitgen but the budgets (system), so every layer may use it."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from submitgen.system import over_budget

T = TypeVar("T")


@dataclass(frozen=True)
class Origin:
    """Where an entry comes from: ``built in``, a ``plug-in`` (its entry point and distribution), or
    ``registered`` by a module calling ``register()``."""

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
    """An entry point of the group that did not give a usable entry."""

    what: str  # what the registry holds ("problem")
    name: str  # the entry point's name: the name the plug-in meant to add
    value: str  # what it names: "package.module" (or "package.module:attr")
    distribution: str  # the installed distribution that declares it, as "name version"
    reason: str  # why it was not loaded, one line

    def message(self) -> str:
        return (f"{self.what} plug-in {self.name!r} ({self.value}) of the package {self.distribution} "
                f"{self.reason}")


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (line breaks included) as one space."""
    return " ".join(str(text).split())


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown distribution)"
    return f"{dist.metadata['Name'] or '(unnamed)'} {dist.version}"


class Registry(Mapping[str, T], Generic[T]):
    """``name -> entry``, in registration order; built-ins and plug-ins load on first read.

    ``attr`` is what a ``module`` value without ``:attr`` binds; ``check(name, value, where)``
    returns the entry or raises ``error``; ``key(entry)`` is what no two entries may share besides
    the name (a problem's leaderboard), ``describe(entry)`` how messages name an entry and
    ``unique`` what a plug-in needs of its own."""

    def __init__(self, what: str, builtins: tuple[tuple[str, str], ...], *, attr: str,
                 group: str | None = None, check: Callable[[str, Any, str], T] | None = None,
                 key: Callable[[T], object] | None = None,
                 describe: Callable[[T], str] | None = None, unique: str = "a name",
                 error: type[Exception] = Exception) -> None:
        self.what, self.builtins, self.attr, self.group, self.unique = what, builtins, attr, group, unique
        self._check = check or (lambda name, value, where: value)
        self._key = key
        self._describe = describe
        self._error = error
        self._entries: dict[str, T] = {}
        self.origins: dict[str, Origin] = {}
        self.broken: list[BrokenPlugin] = []
        self.loaded = self.builtins_loaded = False

    def __getitem__(self, name: str) -> T:
        self.load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def registered(self) -> tuple[T, ...]:
        """The entries registered so far, loading nothing."""
        return tuple(self._entries.values())

    def names(self) -> tuple[str, ...]:
        """Every name the registry holds or will hold, importing nothing: the built-ins', those
        registered, then the plug-ins' entry point names (those of letters, digits, '.', '_', '-')."""
        found = [name for name, _ in self.builtins] + list(self._entries)
        if self.group is not None and not self.loaded:
            found += sorted(ep.name for ep in importlib.metadata.entry_points(group=self.group)
                            if NAME_RE.fullmatch(ep.name))
        return tuple(dict.fromkeys(found))

    def load(self) -> None:
        """Load the built-ins, then the plug-ins of ``group`` (once)."""
        if self.loaded:
            return
        self.loaded = True
        if not self.builtins_loaded:
            self.builtins_loaded = True
            for name, value in self.builtins:
                found = getattr(importlib.import_module(_module(value)), value.partition(":")[2] or self.attr)
                self.register(name, self._check(name, found, value), Origin("built in", _module(value)))
        if self.group is None:
            return
        found = importlib.metadata.entry_points(group=self.group)
        for ep in sorted(found, key=lambda ep: (ep.name, ep.value)):
            dist = _distribution(ep)
            try:
                try:
                    with _time_limit(PLUGIN_IMPORT_S):
                        entry = self._load_one(ep.name, ep.value)
                except _ImportTimeout:
                    raise _Refused(f"cannot be imported: its import ran past the {PLUGIN_IMPORT_S:g} s "
                                   "limit") from None
                other = self._clash(ep.name, entry)
                if other is not None:
                    raise _Refused(f"clashes with the {self.what} {other}: its {self.what} is "
                                   f"{self._name(ep.name, entry)}; a plug-in needs {self.unique} of its own")
            except _Refused as e:
                self.broken.append(BrokenPlugin(self.what, ep.name, ep.value, dist, str(e)))
                continue
            origin = Origin("plug-in", _module(ep.value), f"{ep.name} = {ep.value}", dist)
            self.register(ep.name, entry, origin)

    def _load_one(self, name: str, value: str) -> T:
        module, _, attr = value.partition(":")
        where = value.strip() if attr else f"{module.strip()}.{self.attr}"
        try:
            found = getattr(importlib.import_module(module.strip()), (attr or self.attr).strip(), None)
            return self._check(name, found, where)
        except self._error as e:
            raise _Refused(f"has a bad spec: {one_line(e)}") from None
        except (KeyboardInterrupt, _ImportTimeout):
            raise
        except BaseException as e:  # noqa: BLE001 - any failure of a third-party import (SystemExit too)
            if over_budget(e):  # the command's budget, reached while importing: enforced() names it
                raise
            raise _Refused(f"cannot be imported: {type(e).__name__}: {one_line(e)}") from None

    def _name(self, name: str, entry: T) -> str:
        return self._describe(entry) if self._describe else repr(name)

    def _clash(self, name: str, entry: T) -> str | None:
        for other_name, other in self._entries.items():
            same_key = self._key is not None and self._key(other) == self._key(entry)
            if other is not entry and (other_name == name or same_key):
                return f"{self._name(other_name, other)}, {self.origin(other_name).describe()}"
        return None

    def register(self, name: str, entry: T, origin: Origin | None = None) -> T:
        """Add ``entry`` under ``name`` (again with the same entry: no change); a different entry
        that shares its name (or key) with a registered one is refused with the registry's error."""
        other = self._clash(name, entry)
        if other is not None:
            what = self.what
            raise self._error(f"{what} {self._name(name, entry)} clashes with the registered {what} {other}")
        self._entries[name] = entry
        self.origins.setdefault(name, origin or Origin("registered", getattr(entry, "module", "?")))
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)
        self.origins.pop(name, None)

    def origin(self, name: str) -> Origin:
        return self.origins[name]

    def reload_plugins(self) -> None:
        """Forget the plug-ins found so far; the next read looks them up again on ``sys.path``."""
        for name, origin in list(self.origins.items()):
            if origin.kind == "plug-in":
                self.unregister(name)
        self.broken.clear()
        importlib.invalidate_caches()
        self.loaded = False


class _Refused(Exception):
    """Why one entry point gives no entry (one line)."""


PLUGIN_IMPORT_S = 30.0
"""Seconds one plug-in's import may take before it is given up (and named as not loaded)."""
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What a name from a plug-in may hold: it is shown in tables and written in #!POPCORN lines."""


class _ImportTimeout(BaseException):
    """Raised into a plug-in's import by the time limit."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise _ImportTimeout into the block after ``seconds`` of wall time (a real-time timer: in the
    main thread only, where signals are delivered; elsewhere no limit). A timer already set is
    restored, less the time spent."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _ImportTimeout

    handler = signal.signal(signal.SIGALRM, stop)
    earlier, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler)
        if earlier:
            signal.setitimer(signal.ITIMER_REAL, max(earlier - (time.monotonic() - started), 1e-3))


def _module(value: str) -> str:
    return value.split(":", 1)[0].strip()

"""The leaderboard problems (HACKING.md, "Adding a problem"): one module each binding ``PROBLEM =
ProblemSpec(...)``, found by :mod:`submitgen.problems.registry`. The names below load on first use,
so that importing a submodule (the CLI's parameter type) does not import torch."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CheckResult": "compare", "Tolerance": "compare",
    "PROBLEMS": "registry", "Leaderboard": "registry", "get_problem": "registry", "leaderboards": "registry",
    "problems": "registry", "register": "registry", "unregister": "registry",
    "ProblemSpec": "spec", "Problem": "spec",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    value = getattr(module, "ProblemSpec" if name == "Problem" else name)
    globals()[name] = value
    return value

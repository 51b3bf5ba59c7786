"""The leaderboard problems: their shapes, inputs, torch reference, correctness rule, and the
pure-torch fallback that submissions paste in.

Each problem is one module of this package binding ``PROBLEM = ProblemSpec(...)``
(:mod:`submitgen.problems.spec`) plus its fallback module under ``fallbacks/``; the registry
(:mod:`submitgen.problems.registry`) finds them. See HACKING.md, "Adding a problem".

The names below load on first use, so that importing a submodule (the CLI's parameter type) does
not import torch.
"""

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

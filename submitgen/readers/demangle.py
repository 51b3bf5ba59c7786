"""Itanium C++ names -> readable ones, with ``c++filt`` (or ``llvm-cxxfilt``) when present.

One process demangles any number of names: callers that hold many names (``inspect`` over many
objects) pass them all at once. Results are remembered for the life of the process."""

from __future__ import annotations

import shutil
import subprocess

from submitgen.system import release_in_child

_KNOWN: dict[str, str] = {}


def _tool() -> str | None:
    return shutil.which("c++filt") or shutil.which("llvm-cxxfilt")


def demangle_many(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Each name demangled (unchanged when it is not mangled or no demangler is installed)."""
    names = tuple(names)
    todo = list(dict.fromkeys(n for n in names if n.startswith("_Z") and "\n" not in n and n not in _KNOWN))
    tool = _tool() if todo else None
    if tool:
        out = _run(tool, todo)
        _KNOWN.update(zip(todo, out if out is not None else todo))
    return tuple(_KNOWN.get(n, n) for n in names)


def demangle(name: str) -> str:
    return demangle_many((name,))[0]


def _run(tool: str, mangled: list[str]) -> list[str] | None:
    try:
        r = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True, text=True,
                           timeout=30, check=False, preexec_fn=release_in_child)
    except (OSError, subprocess.SubprocessError):
        return None
    out = r.stdout.splitlines()
    if r.returncode != 0 or len(out) != len(mangled):
        return None
    return out

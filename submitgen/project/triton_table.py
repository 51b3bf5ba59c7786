"""A kernel project's ``TRITON`` table (plain data in ``launch.py``; HACKING.md, docs/triton.md)
-> checked TritonSpecs. Each source file is read once; specializations that share it share the bytes."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from submitgen.errors import CompileError, PlanError
from submitgen.toolchain.inputs import read_input
from submitgen.toolchain.triton import TritonSpec

_KEYS = ("source", "kernel", "signature", "constexprs", "num_warps", "num_stages", "options", "plan")
_REQUIRED = ("source", "kernel", "signature")
_SCALARS = (bool, int, float, str, type(None))


def specs_from_launch(table: object, folder: Path) -> tuple[TritonSpec, ...]:
    """Check ``TRITON`` from a launch.py and turn it into specs (in the table's order)."""
    if not isinstance(table, Mapping):
        raise PlanError(f"launch.py: TRITON must be a dict of launch name -> specialization, got "
                        f"{type(table).__name__}")
    files: dict[Path, bytes] = {}
    specs = []
    for name, entry in table.items():
        where = f"launch.py: TRITON[{name!r}]"
        if not isinstance(name, str) or not name.isidentifier():
            raise PlanError(f"{where}: a launch name must be an identifier string")
        if not isinstance(entry, Mapping):
            raise PlanError(f"{where}: must be a dict, got {type(entry).__name__}")
        unknown = [k for k in entry if k not in _KEYS]
        missing = [k for k in _REQUIRED if k not in entry]
        problems = [f"unknown key(s) {', '.join(map(repr, unknown))} (expected {', '.join(_KEYS)})"
                    ] if unknown else []
        problems += [f"missing {', '.join(missing)}"] if missing else []
        if problems:
            raise PlanError(f"{where}: {'; '.join(problems)}")
        if not isinstance(entry.get("plan", {}), Mapping):
            raise PlanError(f"{where}: 'plan' must be a dict of values the plan reads, got "
                            f"{type(entry['plan']).__name__}")
        path = _source_path(where, entry["source"], folder)
        if path not in files:
            try:
                files[path] = read_input(path, "Triton source")
            except CompileError as e:
                raise PlanError(f"{where}: {e}") from None
        specs.append(TritonSpec(
            name=name, source=path, source_bytes=files[path],
            kernel=_identifier(where, "kernel", entry["kernel"]),
            signature=_signature(where, _str_map(where, "signature", entry["signature"])),
            constexprs=_value_map(where, "constexprs", entry.get("constexprs", {})),
            num_warps=_count(where, "num_warps", entry.get("num_warps", 4), power_of_two=True),
            num_stages=_count(where, "num_stages", entry.get("num_stages", 2), low=0),
            options=_value_map(where, "options", entry.get("options", {}))))
    return tuple(specs)


def _source_path(where: str, source: object, folder: Path) -> Path:
    if not isinstance(source, str) or not source.endswith(".py"):
        raise PlanError(f"{where}: 'source' must name a .py file in the project folder, got {source!r}")
    root = Path(os.path.realpath(folder))
    path = Path(os.path.realpath(root / source))
    if root not in path.parents:
        raise PlanError(f"{where}: 'source' {source!r} is outside the project folder {folder}")
    if not path.exists():
        raise PlanError(f"{where}: 'source' {source!r} not found in {folder}")
    return path


def _identifier(where: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise PlanError(f"{where}: {key!r} must be a Python identifier, got {value!r}")
    return value


def _str_map(where: str, key: str, value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in value.items()):
        raise PlanError(f"{where}: {key!r} must be a dict of parameter name -> Triton type string, "
                        f"got {value!r}")
    return tuple(value.items())


TRITON_TYPES = ("bf16", "fp16", "fp32", "fp64", "fp8e4nv", "fp8e4b8", "fp8e4b15", "fp8e5", "fp8e5b16",
                "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "B")
"""The scalar types Triton's ``str_to_ty`` knows (triton.language, 3.x)."""
_PLAIN_TYPE = re.compile(r"\*?k?(?P<base>[A-Za-z][A-Za-z0-9_]*)(?::\d+)?")


def _signature(where: str, items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The signature, each plain type (``*bf16``, ``i32:16``) checked here, so that a typo is named
    in launch.py rather than by the compiler as a fault of the kernel's source."""
    for param, text in items:
        m = _PLAIN_TYPE.fullmatch(text)
        if m and m["base"] not in TRITON_TYPES and not m["base"].startswith(("constexpr", "tensordesc")):
            raise PlanError(f"{where}: signature[{param!r}] is {text!r}, not a Triton type (a type of "
                            f"{', '.join(TRITON_TYPES)}, '*' before it for a pointer, ':16' after it for "
                            "16-byte alignment, or 'constexpr')")
    return items


def _value_map(where: str, key: str, value: object) -> tuple[tuple[str, object], ...]:
    if not isinstance(value, Mapping):
        raise PlanError(f"{where}: {key!r} must be a dict, got {type(value).__name__}")
    for k, v in value.items():
        finite = not isinstance(v, float) or math.isfinite(v)
        if not isinstance(k, str) or not isinstance(v, _SCALARS) or not finite:
            raise PlanError(f"{where}: {key}[{k!r}] must be a bool, int, finite float, str or None, "
                            f"got {v!r}")
    return tuple(value.items())


def _count(where: str, key: str, value: object, power_of_two: bool = False, low: int = 1) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= 64
    if ok and power_of_two:
        ok = value & (value - 1) == 0
    if not ok:
        kind = f"a power of two from {low} to 64" if power_of_two else f"an int from {low} to 64"
        raise PlanError(f"{where}: {key!r} must be {kind}, got {value!r}")
    return value

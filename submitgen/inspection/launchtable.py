"""What a submitgen-built ``.py`` submission says of its own kernels, read statically (``ast``;
the file is never run): the launch names the plan uses for the kernels of each embedded object
(``_SG_KERNEL_IMAGE``: several Triton specializations of one kernel share its symbol, one object
each), the argument names of each kernel whose compiler decided part of its launches, as its source
names them (``_SG_DEFAULTS``), then the scratch buffers submitgen appends, and the dynamic LDS each
kernel is launched with (the provenance's ``lds`` field).

``inspect`` and ``diff`` show kernels by these launch names; a file without the table (not built
by submitgen) has none, and its kernels keep their symbol names."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from submitgen.readers.base import KernelInfo
from submitgen.render import provenance

# What the two pointers submitgen appends to every Triton launch are called where a user reads them.
TRITON_SCRATCH_NAMES = ("(global scratch)", "(profile scratch)")
DEFAULTS_TABLE = "_SG_DEFAULTS"  # launch name -> SgLaunchDefaults(...), in the emitted file

K = TypeVar("K", bound=KernelInfo)


@dataclass(frozen=True)
class Launch:
    """One name the plan launches: the kernel (its ``.name``) that serves it in its object."""

    name: str
    symbol: str
    arg_names: tuple[str, ...] = ()  # a Triton specialization's explicit arguments; () if not known
    dynamic_lds: int | None = None  # what the provenance records; None if it does not
    block: int | None = None  # the block its compiler chose (``_SG_DEFAULTS``' threads)


@dataclass(frozen=True)
class LaunchTable:
    """Launch names per embedded object (its position in the file's decode order)."""

    objects: Mapping[int, tuple[Launch, ...]]

    def launches(self, index: int, symbol: str) -> tuple[Launch, ...]:
        return tuple(la for la in self.objects.get(index, ()) if la.symbol == symbol)


def _assigned(tree: ast.Module, name: str) -> object | None:
    """The literal value of the last module-level ``name = <literal>``; None if there is none."""
    value = None
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name):
            try:
                value = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = None
    return value


def _defaults(tree: ast.Module) -> dict[str, tuple[tuple[str, ...], int | None]]:
    """launch name -> (argument names, block threads) from ``_SG_DEFAULTS = {name:
    SgLaunchDefaults(compiler, threads, shared, scratch, names), ...}`` (its fields given by
    position or by keyword)."""
    out: dict[str, tuple[tuple[str, ...], int | None]] = {}
    node = next((s.value for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == DEFAULTS_TABLE), None)
    if not isinstance(node, ast.Dict):
        return out
    for key, value in zip(node.keys, node.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Call)):
            continue
        try:
            fields = dict(zip(("compiler", "threads", "shared", "scratch", "names"),
                              map(ast.literal_eval, value.args)))
            fields.update({k.arg: ast.literal_eval(k.value) for k in value.keywords if k.arg is not None})
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        names, scratch, threads = fields.get("names"), fields.get("scratch", ()), fields.get("threads")
        shown: tuple[str, ...] = ()
        if (isinstance(names, tuple) and names and all(isinstance(n, str) for n in names)
                and isinstance(scratch, tuple)):
            shown = tuple(names) + TRITON_SCRATCH_NAMES[:len(scratch)]
        block = threads if isinstance(threads, int) and not isinstance(threads, bool) else None
        out[key.value] = (shown, block)
    return out


def object_indices(shas: Sequence[str], recorded: Sequence[str]) -> list[int]:
    """Each loaded object's index in the file's table: its position in the provenance's ``co``
    (identical objects take the recorded positions in turn), else its load position."""
    out: list[int] = []
    for pos, sha in enumerate(shas):
        spots = [i for i, r in enumerate(recorded) if r == sha and i not in out]
        out.append(spots[0] if spots else pos)
    return out


def read_launch_table(text: str) -> LaunchTable | None:
    """The launch table of a submission's text; None when it has no ``_SG_KERNEL_IMAGE`` literal
    mapping launch names to ``(object index, symbol)``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    image = _assigned(tree, "_SG_KERNEL_IMAGE")
    if not isinstance(image, dict) or not image:
        return None
    defaults = _defaults(tree)
    prov = provenance.read(text)
    lds_items = prov.items("lds") if prov is not None else ()
    objects: dict[int, list[Launch]] = {}
    for name, where in image.items():
        if not (isinstance(name, str) and isinstance(where, tuple) and len(where) == 2
                and isinstance(where[0], int) and isinstance(where[1], str)):
            return None
        index, symbol = where
        lds = provenance.parse_lds(lds_items, index).get(symbol) if prov is not None else None
        names, block = defaults.get(name, ((), None))
        objects.setdefault(index, []).append(Launch(name, symbol, names, lds, block))
    return LaunchTable({i: tuple(v) for i, v in objects.items()})


def with_arg_names(kernel: K, names: Sequence[str]) -> K:
    """``kernel`` with its explicit arguments named ``names`` (a Triton signature's, which the
    metadata leaves unnamed), when there is one name per argument; else ``kernel`` itself."""
    named = dataclasses.is_dataclass(kernel) and not isinstance(kernel, type)
    if not names or len(names) != len(kernel.explicit_args) or not named:
        return kernel
    it = iter(names)
    model: Any = kernel  # a reader's frozen dataclass (named above), which replace() copies
    args = tuple(a if a.hidden else dataclasses.replace(a, name=next(it)) for a in model.args)
    replaced: K = dataclasses.replace(model, args=args)
    return replaced

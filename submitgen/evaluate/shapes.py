"""Which shapes ``submitgen test``/``bench`` run: the problem's lists, subsets and custom specs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from submitgen.errors import EvaluateError, ProblemError
from submitgen.evaluate.results import Shape


def combine_seed(shape_seed: int, seed: int) -> int:
    """eval.py's mixing of ``--seed`` (POPCORN_SEED) into a case's seed (a Cantor pairing)."""
    return shape_seed + (shape_seed + seed) * (shape_seed + seed + 1) // 2


_SEL_RE = re.compile(r"^(test|benchmark|all)(?::([0-9,\- ]+))?$")


MAX_SPEC_VALUE = 1 << 40
"""Spec values beyond this are refused before any tensor is sized from them."""


def _indices(which: str, text: str, n: int, what: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if hi else a
        except ValueError:
            raise EvaluateError(f"--shapes {which!r}: {part!r} is not an index or a range") from None
        if b < a:
            raise EvaluateError(
                f"--shapes {which!r}: the range {part!r} is empty (write the lower index first)"
            )
        for i in (a, b):
            if not 0 <= i < n:
                raise EvaluateError(f"shape selection: {what} index {i} is out of range (0..{n - 1})")
        out.extend(range(a, b + 1))
    return out


def parse_shape(text: str, keys: Sequence[str]) -> dict[str, Any]:
    """'m=8,n=256,k=512,seed=1' -> spec dict of ints; every key of ``keys`` must be given (seed
    defaults to 1)."""
    spec: dict[str, int] = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        name = name.strip()
        if not sep or not name:
            raise EvaluateError(f"shape {text!r}: expected key=value pairs like "
                                f"{','.join(f'{k}=...' for k in keys)}")
        try:
            number = int(value.strip())
        except ValueError:
            raise EvaluateError(f"shape {text!r}: {name} must be an integer, got {value.strip()!r}") from None
        if abs(number) > MAX_SPEC_VALUE:
            raise EvaluateError(
                f"shape {text!r}: {name}={number} is out of range (at most {MAX_SPEC_VALUE:,})"
            )
        spec[name] = number
    if "seed" in keys and "seed" not in spec:
        spec["seed"] = 1
    if set(spec) != set(keys):
        raise EvaluateError(f"shape {text!r}: keys are {sorted(spec)}, this problem takes {list(keys)}")
    return {k: spec[k] for k in keys}


def check_selection(which: str) -> re.Match[str]:
    """The parts of a --shapes value; EvaluateError for one of another form (``tests`` included)."""
    m = _SEL_RE.match(which.strip())
    if not m:
        raise EvaluateError(f"--shapes {which!r}: expected test, benchmark, all, or a subset like "
                            "'test:0,1' or 'benchmark:0-2'")
    return m


def _picked(problem: Any, which: str) -> list[tuple[str, int, Mapping[str, Any]]]:
    kind, subset = check_selection(which).groups()
    lists = {"test": list(problem.tests), "benchmark": list(problem.benchmarks)}
    kinds = ["test", "benchmark"] if kind == "all" else [kind]
    if subset and kind == "all":
        raise EvaluateError("--shapes all takes no indices; use 'test:...' or 'benchmark:...'")
    picked: list[tuple[str, int, Mapping[str, Any]]] = []
    for k in kinds:
        specs = lists[k]
        idx = _indices(which, subset, len(specs), k) if subset else range(len(specs))
        picked += [(k, i, specs[i]) for i in idx]
    if not picked:
        raise EvaluateError(f"--shapes {which!r} selects no shapes")
    return picked


def select_shapes(problem: Any, which: str = "test", *, custom: Sequence[Mapping[str, Any] | str] = (),
                  seed: int | None = None) -> list[Shape]:
    """The shapes to run. ``which``: 'test', 'benchmark', 'all', or a subset such as 'test:0,2' or
    'benchmark:0-2' (indices into the problem's lists); ``custom`` specs (dicts, or strings like
    'm=8,n=256,k=512,seed=1') replace the selection when given. ``seed`` is mixed into each shape's
    seed as eval.py does with POPCORN_SEED. EvaluateError for a selection that is malformed, empty,
    or names a shape the problem refuses."""
    if custom:
        keys = tuple(problem.spec_keys)
        picked = [
            ("custom", i, parse_shape(s, keys) if isinstance(s, str) else s) for i, s in enumerate(custom)
        ]
    else:
        picked = _picked(problem, which)
    shapes = []
    for kind, i, spec in picked:
        spec = dict(spec)
        if seed is not None and "seed" in spec:
            spec["seed"] = combine_seed(int(spec["seed"]), seed)
        try:
            label = problem.shape_label(spec)
        except ProblemError as e:
            raise EvaluateError(f"shape {spec}: {e}") from None
        shapes.append(Shape(kind, i, tuple(spec.items()), label))
    return shapes

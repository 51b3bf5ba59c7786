"""What eval.py writes to ``POPCORN_FD``, read back as kernelbot reads it (docs/reference-kernels.md,
"What runs"): ``key: value`` lines (``test-count``, ``test.<i>.status``, ``benchmark.<i>.mean``...,
``check``), a later key replacing an earlier one; a line that starts with no key continues the
value before it. A case index has at most 9 digits (a longer one is no key)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from submitgen.evaluate.stoprule import Stats

_KEY_RE = re.compile(r"^(check|test-count|benchmark-count|(?:test|benchmark)\.\d{1,9}\.[a-z]+)\s*:(.*)$")
_CASE_RE = re.compile(r"^(test|benchmark)\.(\d+)\.([a-z]+)$")
MAX_CASES = 10_000
MAX_VALUE_LINES = 1_000
"""A value of eval.py's output (an error's traceback, a check's message) keeps this many lines."""


@dataclass(frozen=True)
class CaseResult:
    index: int
    spec: str | None = None
    status: str | None = None  # "pass", "fail", or None when eval.py wrote none
    error: str | None = None
    message: str | None = None
    stats: Stats | None = None


@dataclass(frozen=True)
class PopcornResult:
    kind: str  # "test" or "benchmark" (the key prefix eval.py used)
    count: int | None  # test-count / benchmark-count
    cases: tuple[CaseResult, ...]
    check: str | None  # "pass", "fail" or None when eval.py never wrote it


def parse_lines(text: str) -> dict[str, str]:
    """The ``key: value`` pairs (kernelbot's reading, with continuation lines joined; blank ones
    dropped). Linear in ``text``: a value keeps its first MAX_VALUE_LINES lines and then says how
    many more it had."""
    parts: dict[str, list[str]] = {}
    dropped: dict[str, int] = {}
    last: str | None = None
    for line in text.splitlines():
        m = _KEY_RE.match(line)
        if m:
            last = m.group(1)
            first = m.group(2).strip()
            parts[last] = [first] if first else []
            dropped[last] = 0
        elif last is not None and (line := line.rstrip()):
            if len(parts[last]) < MAX_VALUE_LINES:
                parts[last].append(line)
            else:
                dropped[last] += 1
    return {k: "\n".join(v) + (f"\n[{dropped[k]:,} more lines not shown]" if dropped[k] else "")
            for k, v in parts.items()}


def key_of(line: str) -> tuple[str, str] | None:
    """(key, value) of one protocol line, or None for a continuation line."""
    m = _KEY_RE.match(line)
    return (m.group(1), m.group(2).strip()) if m else None


def _number(value: str | None) -> float | None:
    try:
        x = float(value) if value is not None else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) else None


def _stats(fields: dict[str, str]) -> Stats | None:
    runs = _number(fields.get("runs"))
    figures = [_number(fields.get(k)) for k in ("mean", "std", "err", "best", "worst")]
    if runs is None or runs < 1 or runs != int(runs) or any(f is None for f in figures):
        return None
    return Stats(int(runs), *(float(f) for f in figures))  # type: ignore[arg-type]


def read_result(text: str, kind: str) -> PopcornResult:
    """The cases of ``kind`` ('test' or 'benchmark') and the verdict in eval.py's output ``text``."""
    pairs = parse_lines(text)
    per: dict[int, dict[str, str]] = {}
    for key, value in pairs.items():
        m = _CASE_RE.match(key)
        if m and m.group(1) == kind and int(m.group(2)) < MAX_CASES:
            per.setdefault(int(m.group(2)), {})[m.group(3)] = value
    count = _number(pairs.get(f"{kind}-count"))
    cases = tuple(
        CaseResult(i, f.get("spec"), f.get("status") or ("pass" if _stats(f) else None), f.get("error"),
                   f.get("message"), _stats(f))
        for i, f in sorted(per.items()))
    check = pairs.get("check")
    return PopcornResult(kind, int(count) if count is not None and count >= 0 else None, cases,
                         check if check in ("pass", "fail") else (check or None))

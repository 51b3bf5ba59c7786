"""The ``header`` rule: the ``#!POPCORN`` directives as the server reads them, and the leaderboards
and GPUs the registry knows."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LintError
from ..payload import canonical_leaderboard
from .findings import LintFinding


def known_leaderboards() -> dict[str, tuple[str, ...]]:
    """Every leaderboard the registry knows -> the GPUs it runs on (problems first)."""
    from ..problems.registry import leaderboards

    return {name: row.gpus for name, row in leaderboards().items()}


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted({g for gs in known_leaderboards().values() for g in gs}))


_DIRECTIVE_PREFIXES = ("#!POPCORN", "//!POPCORN")
_DIRECTIVE_NAMES = ("leaderboard", "gpus")  # "gpu" is read as "gpus"

@dataclass(frozen=True)
class Header:
    """The directives the server reads from the first comment block."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    leaderboard_line: int | None
    gpus_line: int | None
    block_end: int  # number of lines in the first comment block


def resolve_leaderboard(name: str) -> str:
    """'mixed-mla' or 'amd-mixed-mla' -> 'amd-mixed-mla'; LintError for an unknown name."""
    canon = canonical_leaderboard(name)
    known = known_leaderboards()
    if canon not in known:
        raise LintError(f"unknown leaderboard {name!r}: expected one of {', '.join(known)}")
    return canon


def _parse_header(lines: list[str]) -> tuple[Header, list[LintFinding]]:
    found: list[LintFinding] = []
    values: dict[str, tuple[int, list[str]]] = {}
    block_end = len(lines)
    for no, line in enumerate(lines, 1):
        if not line.startswith(("#", "//")):
            block_end = no - 1
            break
        words = line.split()
        if not words or words[0] not in _DIRECTIVE_PREFIXES:
            if "!POPCORN" in line.upper():
                found.append(LintFinding(
                    "header", no, f"{line.strip()!r} is not read as a directive: the server wants "
                    "'#!POPCORN' (exactly, at the start of the line) as the first word",
                    "write it as '#!POPCORN <name> <value>'"))
            continue
        if len(words) < 3:
            found.append(LintFinding("header", no, f"directive {line.strip()!r} has no value",
                                     "write '#!POPCORN leaderboard <name>' or '#!POPCORN gpu MI355X'"))
            continue
        name = words[1].lower()
        name = "gpus" if name == "gpu" else name
        if name not in _DIRECTIVE_NAMES:
            found.append(LintFinding("header", no, f"unknown directive {words[1]!r}; the server "
                                     "knows 'leaderboard' and 'gpu' (or 'gpus')",
                                     "remove the line or correct the name"))
            continue
        if name in values:
            found.append(LintFinding("header", no, f"second {name!r} directive (the first is on line "
                                     f"{values[name][0]}); the server rejects duplicates",
                                     "keep one of them"))
            continue
        values[name] = (no, words[2:])

    # directives the server never reads
    for no in range(block_end + 1, len(lines) + 1):
        text = lines[no - 1].lstrip()
        if text.upper().startswith(("#!POPCORN", "//!POPCORN", "# !POPCORN")):
            found.append(LintFinding(
                "header", no, "this directive is after the first comment block (which ends at "
                f"line {block_end}), so the server ignores it",
                "move it to the top of the file, before any code or blank line"))

    lb = values.get("leaderboard")
    gp = values.get("gpus")
    header = Header(
        leaderboard=lb[1][0] if lb else None,
        gpus=tuple(gp[1]) if gp else (),
        leaderboard_line=lb[0] if lb else None,
        gpus_line=gp[0] if gp else None,
        block_end=block_end,
    )
    return header, found


def read_header(text: str) -> Header:
    """The directives of ``text`` as the server reads them (no checks)."""
    return _parse_header(text.splitlines())[0]


def _check_gpus(header: Header, target: str | None, known: dict[str, tuple[str, ...]]) -> list[LintFinding]:
    found = []
    allowed = known[target] if target else known_gpus()
    for gpu in header.gpus:
        if gpu not in allowed:
            near = [g for g in allowed if g.lower() == gpu.lower()]
            fix = f"write '{near[0]}' (exact case)" if near else f"use {' or '.join(allowed)}"
            where = f"leaderboard {target!r} runs on {', '.join(allowed)}" if target else \
                f"known AMD GPUs are {', '.join(known_gpus())}"
            found.append(LintFinding("header", header.gpus_line or 1,
                                     f"GPU {gpu!r} is not one this tool knows: {where}", fix))
    return found


def check_header(lines: list[str], problem: str | None) -> list[LintFinding]:
    header, found = _parse_header(lines)
    known = known_leaderboards()
    lb = header.leaderboard
    if lb is not None:
        if lb not in known:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"unknown leaderboard {lb!r}",
                f"use one of {', '.join(known)}"))
        elif problem is not None and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"the header names leaderboard {lb!r} but "
                f"--problem says {problem!r}; the server refuses a mismatch",
                f"change the header to '#!POPCORN leaderboard {problem}' or drop --problem"))
    elif problem is None:
        found.append(LintFinding(
            "header", 1, "no '#!POPCORN leaderboard <name>' directive in the first comment block",
            "add '#!POPCORN leaderboard amd-mxfp4-mm' (or your leaderboard) as the first line, "
            "or pass --problem"))
    found += _check_gpus(header, lb if lb in known else problem, known)
    if header.gpus_line is None and problem is None:
        gpu = known[lb][0] if lb in known else "MI355X"
        found.append(LintFinding(
            "header", header.leaderboard_line or 1,
            "no '#!POPCORN gpu <GPU>' directive in the first comment block",
            f"add '#!POPCORN gpu {gpu}' after the leaderboard line"))
    return found


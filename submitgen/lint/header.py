"""The ``header`` rule: the ``#!POPCORN`` directives as popcorn-cli reads them (gpu-mode/popcorn-cli
``src/utils/mod.rs``, ``get_popcorn_directives``: Rust's ``str::lines``, which ends a line at
``\n`` only, and ``split_whitespace``), warnings where the server's own reading (the first comment
block of Python's ``splitlines``) differs, and the leaderboards and GPUs the registry knows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from submitgen.errors import LintError
from submitgen.lint.findings import ERROR, WARNING, LintFinding
from submitgen.lint.payload import canonical_leaderboard
from submitgen.problems.folder import folder_board, is_folder
from submitgen.problems.registry import leaderboards


def known_leaderboards(plugins: bool = False) -> dict[str, tuple[str, ...]]:
    """Every leaderboard the registry knows -> the GPUs it runs on (problems first); ``plugins``:
    the installed plug-ins' too (they are imported)."""
    return {name: row.gpus for name, row in leaderboards(load=plugins).items()}


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted({g for gs in known_leaderboards().values() for g in gs}))


_DIRECTIVE_PREFIXES = ("#!POPCORN", "//!POPCORN")
_DIRECTIVE_NAMES = ("leaderboard", "gpus")  # "gpu" is read as "gpus"


@dataclass(frozen=True)
class Header:
    """The directives as popcorn-cli reads them: from every line that starts with ``#`` or ``//``
    whose first word is ``#!POPCORN`` or ``//!POPCORN`` (exact case; the directive's name in any
    case), the last of each kind winning."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    leaderboard_line: int | None
    gpus_line: int | None


def resolve_problem(name: str) -> tuple[str, int | None, tuple[str, ...]]:
    """(leaderboard, payload baseline or None: the registry's, GPUs or (): the registry's) of
    --problem: 'mixed-mla' or 'amd-mixed-mla' -> 'amd-mixed-mla' (plug-ins loaded for a name lint does
    not know; LintError for an unknown one), a problem folder -> its round file's leaderboard and
    GPUs and its own baseline."""
    if is_folder(name):
        return folder_board(name)
    canon = canonical_leaderboard(name)
    known = known_leaderboards()
    if canon not in known:
        known = known_leaderboards(plugins=True)
        canon = canonical_leaderboard(name)
    if canon not in known:
        raise LintError(f"unknown leaderboard {name!r}: expected one of {', '.join(known)}, or a problem "
                        "folder")
    return canon, None, ()


def resolve_leaderboard(name: str) -> str:
    """:func:`resolve_problem`'s leaderboard."""
    return resolve_problem(name)[0]


_PYTHON_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""Where Python's ``splitlines`` (the server's reading) ends a line and popcorn-cli does not."""


def popcorn_lines(text: str) -> list[tuple[int, str]]:
    """(offset, line) of each line of ``text`` as popcorn-cli reads it (Rust's ``str::lines``): a
    line ends at ``\n`` only, a ``\r`` before it is dropped, and a final ``\n`` starts no line."""
    pieces = text.split("\n")
    last = pieces.pop()
    out, at = [], 0
    for piece in pieces:
        out.append((at, piece[:-1] if piece.endswith("\r") else piece))
        at += len(piece) + 1
    if last:
        out.append((at, last))
    return out


def _block_end(text: str) -> tuple[int, int]:
    """(lines, characters) of the first comment block as the server reads it (``splitlines``)."""
    at = 0
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        if not line.startswith(("#", "//")):
            return no - 1, at
        at += len(line)
    return text.count("\n") + 1, len(text)


def _hidden_directives(no: int, line: str) -> LintFinding | None:
    """A ``warning`` for a line that Python and the server read as several lines (a bare ``\r``,
    form feed, ...) with directives after its first: popcorn-cli does not read them."""
    if not _PYTHON_BREAKS.search(line):
        return None
    parts = line.splitlines()
    hidden = [p for p in parts[1:] if p.startswith(_DIRECTIVE_PREFIXES)]
    if not hidden:
        return None
    return LintFinding(
        "header", no, f"popcorn-cli reads this as one line of {len(parts):,}: it ends lines at '\\n' "
        f"only, and these end in '\\r' (or another break that Python reads), so it does not read "
        f"{hidden[0].strip()!r}" + (f" and {len(hidden) - 1} more directive(s)" if len(hidden) > 1 else ""),
        "save the file with '\\n' (or '\\r\\n') line ends", WARNING, source="popcorn-cli")


def _parse_header(text: str) -> tuple[Header, list[LintFinding]]:
    found: list[LintFinding] = []
    values: dict[str, tuple[int, list[str]]] = {}
    block_end, block_chars = _block_end(text)
    for no, (at, line) in enumerate(popcorn_lines(text), 1):
        hidden = _hidden_directives(no, line)
        if hidden is not None:
            found.append(hidden)
        if not line.startswith(("#", "//")):
            continue
        words = line.split()
        if not words or words[0] not in _DIRECTIVE_PREFIXES:
            continue
        if len(words) < 3:
            found.append(LintFinding("header", no, f"directive {line.strip()!r} has no value",
                                     "write '#!POPCORN leaderboard <name>' or '#!POPCORN gpu MI355X'",
                                     source="kernelbot"))
            continue
        name = words[1].lower()
        name = "gpus" if name == "gpu" else name
        if name not in _DIRECTIVE_NAMES:
            found.append(LintFinding("header", no, f"unknown directive {words[1]!r}: popcorn-cli and the "
                                     "server read only 'leaderboard' and 'gpu' (or 'gpus') and ignore it",
                                     "remove the line or correct the name", WARNING, source="popcorn-cli"))
            continue
        first, before = values.get(name, (0, words[2:]))
        if before != words[2:]:
            found.append(LintFinding(
                "header", no, f"second {name!r} directive says {' '.join(words[2:])!r}, the one on "
                f"line {first} {' '.join(before)!r}: popcorn-cli takes the last one, the server "
                "refuses a leaderboard that differs from its first comment block's",
                "keep one of them", source="kernelbot"))
        if at >= block_chars:
            found.append(LintFinding(
                "header", no, f"this directive is {_after(block_end)}: popcorn-cli reads it and sends "
                "its value with the request, but the server reads directives only from the first "
                "comment block",
                f"move {' '.join(words)!r} to the top of the file, before any code or blank line",
                WARNING, source="kernelbot"))
        values[name] = (no, words[2:])

    lb = values.get("leaderboard")
    gp = values.get("gpus")
    header = Header(
        leaderboard=lb[1][0] if lb else None,
        gpus=tuple(gp[1]) if gp else (),
        leaderboard_line=lb[0] if lb else None,
        gpus_line=gp[0] if gp else None,
    )
    return header, found


def _after(block_end: int) -> str:
    if block_end == 0:
        return "not in a comment block at the top of the file (its first line is not a comment)"
    return f"after the first comment block (which ends at line {block_end})"


def read_header(text: str) -> Header:
    """The directives of ``text`` as popcorn-cli reads them (no checks)."""
    return _parse_header(text)[0]


def _check_gpus(header: Header, target: str | None, known: dict[str, tuple[str, ...]]) -> list[LintFinding]:
    found = []
    allowed = known[target] if target else tuple(sorted({g for gs in known.values() for g in gs}))
    for gpu in header.gpus:
        if gpu not in allowed:
            near = [g for g in allowed if g.lower() == gpu.lower()]
            fix = f"write '{near[0]}' (exact case)" if near else f"use {' or '.join(allowed)}"
            where = f"leaderboard {target!r} runs on {', '.join(allowed)}" if target else \
                f"the GPUs it knows are {', '.join(known_gpus())}"
            found.append(LintFinding("header", header.gpus_line or 1,
                                     f"GPU {gpu!r} is not one this tool knows: {where}", fix,
                                     ERROR if target or near else WARNING, source="kernelbot"))
    return found


def check_header(text: str, problem: str | None, gpus: tuple[str, ...] = ()) -> list[LintFinding]:
    """The header's findings; ``gpus``: the GPUs of ``problem`` where it is a problem folder (its round
    file's, or the build's ``--gpu``), which the leaderboard's row may not list."""
    header, found = _parse_header(text)
    known = known_leaderboards()
    if problem is not None and gpus:
        known = {**known, problem: gpus}
    lb = header.leaderboard
    if lb is not None and lb not in known:
        known = known_leaderboards(plugins=True)
    if lb is not None:
        if lb not in known and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"leaderboard {lb!r} is not one submitgen knows "
                "(a new round's?); the server decides whether it exists",
                f"check the name, or pass --problem with its problem folder; known: {', '.join(known)}",
                WARNING, source="kernelbot"))
        elif problem is not None and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"the header names leaderboard {lb!r} but "
                f"--problem says {problem!r}; the server refuses a mismatch",
                f"change the header to '#!POPCORN leaderboard {problem}' or drop --problem",
                source="kernelbot"))
    elif problem is None:
        found.append(LintFinding(
            "header", 1, "no '#!POPCORN leaderboard <name>' directive: popcorn-cli reads it from a "
            "comment line that starts with '#!POPCORN'",
            f"add '#!POPCORN leaderboard <name>' (one of {', '.join(known)}) as the first line, or pass "
            "--problem",
            source="popcorn-cli"))
    board = lb if lb in known else (problem if problem in known else None)
    found += _check_gpus(header, board, known)
    if len(header.gpus) > 1:
        found.append(LintFinding(
            "header", header.gpus_line or 1, f"the gpu directive names {len(header.gpus)} GPUs: "
            "popcorn-cli submits to one and refuses several", "name one GPU", source="popcorn-cli"))
    if header.gpus_line is None and problem is None:
        gpu = known[board][0] if board in known else "<GPU>"
        found.append(LintFinding(
            "header", header.leaderboard_line or 1,
            "no '#!POPCORN gpu <GPU>' directive: popcorn-cli then needs --gpu",
            f"add '#!POPCORN gpu {gpu}' after the leaderboard line, or pass --gpu {gpu} to "
            "popcorn-cli", WARNING, source="popcorn-cli"))
    return found

"""The ``header`` rule: the ``#!POPCORN`` directives as popcorn-cli reads them (gpu-mode/popcorn-cli
``src/utils/mod.rs``, ``get_popcorn_directives``), warnings where the server's own reading (the
first comment block only) differs, and the leaderboards and GPUs the registry knows."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.errors import LintError
from submitgen.lint.findings import ERROR, WARNING, LintFinding
from submitgen.lint.payload import canonical_leaderboard


def known_leaderboards(plugins: bool = False) -> dict[str, tuple[str, ...]]:
    """Every leaderboard the registry knows -> the GPUs it runs on (problems first); ``plugins``:
    the installed plug-ins' too (they are imported)."""
    from submitgen.problems.registry import leaderboards

    return {name: row.gpus for name, row in leaderboards(load=plugins).items()}


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted({g for gs in known_leaderboards().values() for g in gs}))


_DIRECTIVE_PREFIXES = ("#!POPCORN", "//!POPCORN")
_DIRECTIVE_NAMES = ("leaderboard", "gpus")  # "gpu" is read as "gpus"
_NEAR_MISSES = ("#!POPCORN", "//!POPCORN", "# !POPCORN", "// !POPCORN")


@dataclass(frozen=True)
class Header:
    """The directives as popcorn-cli reads them: from every line that starts with ``#`` or ``//``
    whose first word is ``#!POPCORN`` or ``//!POPCORN`` (exact case; the directive's name in any
    case), the last of each kind winning. ``block_end`` is the number of lines of the first
    comment block, the only lines the server itself reads directives from."""

    leaderboard: str | None
    gpus: tuple[str, ...]
    leaderboard_line: int | None
    gpus_line: int | None
    block_end: int  # number of lines in the first comment block


def resolve_problem(name: str) -> tuple[str, int | None]:
    """(leaderboard, payload baseline or None: the registry's) of --problem: 'mixed-mla' or
    'amd-mixed-mla' -> 'amd-mixed-mla' (plug-ins loaded for a name lint does not know; LintError for
    an unknown one), a problem folder -> its round file's leaderboard and its own baseline."""
    from submitgen.problems.folder import folder_board, is_folder

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
    return canon, None


def resolve_leaderboard(name: str) -> str:
    """:func:`resolve_problem`'s leaderboard."""
    return resolve_problem(name)[0]


def _block_end(lines: list[str]) -> int:
    for no, line in enumerate(lines, 1):
        if not line.startswith(("#", "//")):
            return no - 1
    return len(lines)


def _near_miss(line: str) -> bool:
    """A line meant as a directive that popcorn-cli does not read as one (``# !POPCORN``,
    ``#!popcorn``, an indented ``#!POPCORN``)."""
    if line.startswith(("#", "//")):
        words = line.split()
        return bool(words) and words[0] not in _DIRECTIVE_PREFIXES and "!POPCORN" in line.upper()
    return line.lstrip().upper().startswith(_NEAR_MISSES)


def _parse_header(lines: list[str]) -> tuple[Header, list[LintFinding]]:
    found: list[LintFinding] = []
    values: dict[str, tuple[int, list[str]]] = {}
    block_end = _block_end(lines)
    for no, line in enumerate(lines, 1):
        if _near_miss(line):
            found.append(LintFinding(
                "header", no, f"{line.strip()!r} is not read as a directive: popcorn-cli wants "
                "'#!POPCORN' (exactly, at the start of the line) as the first word",
                f"write it as {_respelled(line)!r}"))
            continue
        if not line.startswith(("#", "//")):
            continue
        words = line.split()
        if not words or words[0] not in _DIRECTIVE_PREFIXES:
            continue
        if len(words) < 3:
            found.append(LintFinding("header", no, f"directive {line.strip()!r} has no value",
                                     "write '#!POPCORN leaderboard <name>' or '#!POPCORN gpu MI355X'"))
            continue
        name = words[1].lower()
        name = "gpus" if name == "gpu" else name
        if name not in _DIRECTIVE_NAMES:
            found.append(LintFinding("header", no, f"unknown directive {words[1]!r}: popcorn-cli and the "
                                     "server read only 'leaderboard' and 'gpu' (or 'gpus') and ignore it",
                                     "remove the line or correct the name", WARNING))
            continue
        if name in values:
            first, before = values[name]
            if before != words[2:]:
                found.append(LintFinding(
                    "header", no, f"second {name!r} directive says {' '.join(words[2:])!r}, the one on "
                    f"line {first} {' '.join(before)!r}: popcorn-cli takes the last one, the server "
                    "refuses a leaderboard that differs from its first comment block's",
                    "keep one of them"))
            else:
                found.append(LintFinding("header", no, f"{name!r} directive repeats line {first}",
                                         "keep one of them", WARNING))
        if no > block_end:
            found.append(LintFinding(
                "header", no, f"this directive is {_after(block_end)}: popcorn-cli reads it and sends "
                "its value with the request, but the server reads directives only from the first "
                "comment block",
                f"move {' '.join(words)!r} to the top of the file, before any code or blank line",
                WARNING))
        values[name] = (no, words[2:])

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


def _after(block_end: int) -> str:
    if block_end == 0:
        return "not in a comment block at the top of the file (its first line is not a comment)"
    return f"after the first comment block (which ends at line {block_end})"


def _respelled(line: str) -> str:
    """A near miss as popcorn-cli would read it: '#!POPCORN leaderboard amd-mixed-mla'."""
    words = line.replace("!", " ! ", 1).split()
    rest = [w for w in words[1:] if w.upper() not in ("!", "POPCORN", "!POPCORN")]
    return " ".join(["#!POPCORN", *rest]) if rest else "#!POPCORN <name> <value>"


def read_header(text: str) -> Header:
    """The directives of ``text`` as the server reads them (no checks)."""
    return _parse_header(text.splitlines())[0]


def _check_gpus(header: Header, target: str | None, known: dict[str, tuple[str, ...]]) -> list[LintFinding]:
    found = []
    allowed = known[target] if target else tuple(sorted({g for gs in known.values() for g in gs}))
    for gpu in header.gpus:
        if gpu not in allowed:
            near = [g for g in allowed if g.lower() == gpu.lower()]
            fix = f"write '{near[0]}' (exact case)" if near else f"use {' or '.join(allowed)}"
            where = f"leaderboard {target!r} runs on {', '.join(allowed)}" if target else \
                f"known AMD GPUs are {', '.join(known_gpus())}"
            found.append(LintFinding("header", header.gpus_line or 1,
                                     f"GPU {gpu!r} is not one this tool knows: {where}", fix,
                                     ERROR if target or near else WARNING))
    return found


def _leaderboard_fix(lines: list[str], known: dict[str, tuple[str, ...]]) -> str:
    """'#!POPCORN leaderboard NAME' for the fix text: the leaderboard a near miss names, when one
    does (the file's own), else a placeholder and the known names."""
    for line in lines:
        if _near_miss(line):
            words = _respelled(line).split()
            if len(words) >= 3 and words[1].lower() == "leaderboard":
                return f"'#!POPCORN leaderboard {words[2]}'"
    return f"'#!POPCORN leaderboard <name>' (one of {', '.join(known)})"


def check_header(lines: list[str], problem: str | None, gpu: str | None = None) -> list[LintFinding]:
    """The header's findings; ``gpu``: the GPU the build's own problem runs on (a problem folder's
    ``--gpu``), which the leaderboard's row may not list."""
    header, found = _parse_header(lines)
    known = known_leaderboards()
    if problem is not None and gpu is not None:
        known = {**known, problem: (gpu,)}
    lb = header.leaderboard
    if lb is not None and lb not in known:
        known = known_leaderboards(plugins=True)
    if lb is not None:
        if lb not in known and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"leaderboard {lb!r} is not one submitgen knows "
                "(a new round's?); the server decides whether it exists",
                f"check the name, or pass --problem with its problem folder; known: {', '.join(known)}",
                WARNING))
        elif problem is not None and lb != problem:
            found.append(LintFinding(
                "header", header.leaderboard_line or 1, f"the header names leaderboard {lb!r} but "
                f"--problem says {problem!r}; the server refuses a mismatch",
                f"change the header to '#!POPCORN leaderboard {problem}' or drop --problem"))
    elif problem is None:
        found.append(LintFinding(
            "header", 1, "no '#!POPCORN leaderboard <name>' directive: popcorn-cli reads it from a "
            "comment line that starts with '#!POPCORN'",
            f"add {_leaderboard_fix(lines, known)} as the first line, or pass --problem"))
    board = lb if lb in known else (problem if problem in known else None)
    found += _check_gpus(header, board, known)
    if len(header.gpus) > 1:
        found.append(LintFinding(
            "header", header.gpus_line or 1, f"the gpu directive names {len(header.gpus)} GPUs: "
            "popcorn-cli submits to one and refuses several", "name one GPU"))
    if header.gpus_line is None and problem is None:
        gpu = known[board][0] if board in known else "<GPU>"
        found.append(LintFinding(
            "header", header.leaderboard_line or 1,
            "no '#!POPCORN gpu <GPU>' directive: popcorn-cli then needs --gpu",
            f"add '#!POPCORN gpu {gpu}' after the leaderboard line, or pass --gpu {gpu} to "
            "popcorn-cli", WARNING))
    return found

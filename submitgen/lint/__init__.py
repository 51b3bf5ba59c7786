"""Static checks of a single-file submission against the rules the leaderboard enforces.

The file is read, never imported or run. Each finding is one line::

    path:LINE: RULE: message (fix: ...)

Rules (their sources: docs/rules.md):

``header``
    ``#!POPCORN`` directives are read by the server only in the first comment block (lines that
    start with ``#`` or ``//``; the first other line, a blank one included, ends it). Names must be
    known (``leaderboard``, ``gpu``/``gpus``), each given once, with a value; the leaderboard must
    be a known AMD leaderboard and the GPU one it runs on; the leaderboard must agree with
    ``--problem``. Without ``--problem``, both directives are required. A directive after the
    block, or a near miss (``# !POPCORN``, ``#!popcorn``), is reported because the server ignores it.
``banned-word``
    the word the server greps for (``s-t-r-e-a-m``, any case, anywhere: comments, strings, kernel
    names, base64 blobs). One finding per line that holds it.
``size``
    at most 1,000,000 bytes (HTTP 413 above).
``payload``
    the estimated dispatch payload (:mod:`submitgen.payload`) within 65,535 characters.
``syntax``
    the file must parse; otherwise the AST rules below cannot run.
``exec-decoded``
    ``exec``/``eval``/``compile`` (also reached through ``builtins``, ``getattr`` or an alias),
    ``__import__``/``importlib.import_module``, ``marshal.loads`` or ``pickle.loads`` of data that
    flows from a decoder (base64/binascii/codecs decode, zlib/lzma/bz2/gzip decompress,
    ``bytes.fromhex``). This is kernelguard's auto-rejected ``OBFUSCATED_EXEC``. The flow analysis
    is by name across the whole file (assignments, function returns), so it errs towards flagging.
    ``marshal.loads`` is flagged whatever its argument (it makes code objects).
``exec-dynamic``
    Decision: *any* ``exec``/``eval``/``compile`` whose argument is not a string literal is a
    failure too, as are ``runpy`` and ``loader.exec_module``. A static check cannot prove that a
    computed string is not decoded data (the name-based flow analysis misses data passed through
    containers or attributes), kernelguard records these (``DYNAMIC_EXECUTION``), and a
    submission never needs them: write the code as code.
``import-dynamic``
    ``__import__``/``importlib.import_module`` of a computed name: reviewers and kernelguard
    cannot see what is imported. Import by name.
``custom-kernel``
    ``custom_kernel`` must be bound at module level: ``def``, ``class``, an assignment or
    ``from ... import custom_kernel``, also inside a module-level ``if``/``try``/``with``.
``hsa-queue``
    ``hsa_queue_create`` anywhere: a kernel dispatched on a queue of its own runs outside the
    leaderboard's timing events (the ~4 µs timing artefact), which the organizers disqualify.
``nesting`` (warning)
    an expression nests deeper than Python's default recursion limit: the lint still reads it
    (see :mod:`submitgen.lint.parse`), but CPython may refuse to compile it.
``input-write`` (warning)
    for a problem whose evaluator passes the inputs uncloned (``ProblemSpec.eval_clones_inputs``
    False): ``custom_kernel`` visibly writes into a tensor bound from ``data`` (an in-place method,
    slice assignment, augmented assignment, ``out=``).

Warnings are reported but do not fail the lint.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import LintError
from ..payload import PayloadEstimate, estimate_payload
from ..rules import PAYLOAD_LIMIT
from .findings import BANNED_WORD, ERROR, RULES, SIZE_LIMIT, WARNING, LintFinding
from .flow import hidden_code_findings
from .header import Header, check_header, known_gpus, known_leaderboards, read_header, resolve_leaderboard
from .kernel import binds_custom_kernel, input_write_findings
from .parse import parse
from .text import check_banned_word, check_hsa_queue

__all__ = [
    "BANNED_WORD",
    "ERROR",
    "RULES",
    "SIZE_LIMIT",
    "WARNING",
    "Header",
    "LintError",
    "LintFinding",
    "LintReport",
    "known_gpus",
    "known_leaderboards",
    "lint_file",
    "lint_file_report",
    "lint_report",
    "lint_text",
    "payload_summary",
    "read_header",
    "read_submission",
    "render_findings",
    "resolve_leaderboard",
]

READ_LIMIT = 4 * SIZE_LIMIT
"""The most bytes lint reads of a file: 4x the size rule (inspect reads a .py up to the same bound)."""


@dataclass(frozen=True)
class LintReport:
    """Everything one lint run found: the failed rules, the warnings and the payload estimate."""

    errors: tuple[LintFinding, ...]
    warnings: tuple[LintFinding, ...]
    payload: PayloadEstimate

    @property
    def passed(self) -> bool:
        return not self.errors

    @property
    def findings(self) -> tuple[LintFinding, ...]:
        """The failed rules (warnings left out)."""
        return self.errors

    def failed(self, rule: str) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.errors if f.rule == rule)


def _check_ast(text: str, clones_inputs: bool) -> list[LintFinding]:
    parsed = parse(text)
    found = list(parsed.findings)
    if parsed.tree is None:
        return found
    found += hidden_code_findings(parsed.tree)
    if not binds_custom_kernel(parsed.tree.body):
        found.append(LintFinding(
            "custom-kernel", 1, "no module-level 'custom_kernel': the evaluator imports "
            "'custom_kernel' from the submission",
            "define 'def custom_kernel(data: input_t) -> output_t:' at module level"))
    if not clones_inputs:
        found += input_write_findings(parsed.tree)
    return found


def _clones_inputs(leaderboard: str | None) -> bool:
    from ..problems.registry import leaderboards

    row = leaderboards().get(leaderboard) if leaderboard else None
    if row is None or row.problem is None:
        return True
    from ..problems.registry import get_problem

    return get_problem(row.problem).eval_clones_inputs


def lint_report(text: str, *, problem: str | None = None, size_bytes: int | None = None) -> LintReport:
    """Check the submission ``text``: the failed rules and the warnings, each sorted by line, and the
    payload estimate. ``problem`` ("mxfp4-mm" or "amd-mxfp4-mm") is what the user passes as
    --problem; an unknown name raises LintError. ``size_bytes`` is the file's size when it is known
    (lint_file); otherwise the UTF-8 length of ``text``."""
    canon = resolve_leaderboard(problem) if problem is not None else None
    lines = text.splitlines()
    found = check_header(lines, canon)
    found += check_banned_word(lines)
    size = len(text.encode("utf-8", "surrogateescape")) if size_bytes is None else size_bytes
    if size > SIZE_LIMIT:
        found.append(LintFinding(
            "size", 1, f"the file is {size:,} bytes; the limit is {SIZE_LIMIT:,}",
            "compress what the file embeds (lzma) or embed less"))
    header = read_header(text)
    target = canon or (header.leaderboard if header.leaderboard in known_leaderboards() else None)
    est = estimate_payload(text, target)
    if est.chars > PAYLOAD_LIMIT:
        longest = max(range(len(lines)), key=lambda i: len(lines[i])) + 1 if lines else 1
        found.append(LintFinding(
            "payload", longest, f"{est.summary()}: over GitHub's dispatch limit by "
            f"{-est.headroom:,} chars (the longest line is here)",
            "embed less: compress the code object with lzma before base64, drop unused "
            "kernels or sources"))
    found += check_hsa_queue(lines)
    found += _check_ast(text, _clones_inputs(target))
    order = {r: i for i, r in enumerate(RULES)}
    found.sort(key=lambda f: (f.line, order.get(f.rule, 99)))
    return LintReport(tuple(f for f in found if f.severity != WARNING),
                      tuple(f for f in found if f.severity == WARNING), est)


def lint_text(text: str, *, path: str = "<text>", problem: str | None = None,
              size_bytes: int | None = None) -> list[LintFinding]:
    """The failed rules of :func:`lint_report`, sorted by line (empty: all pass); warnings are left
    out. ``path`` is only used by callers to render lines."""
    del path  # rendering is the caller's job (LintFinding.render); kept for a uniform signature
    return list(lint_report(text, problem=problem, size_bytes=size_bytes).errors)


def read_submission(path: str | Path) -> tuple[str, int]:
    """(text, size in bytes) of a submission file; LintError when it cannot be read, is not a regular
    file (a FIFO or a device would block or never end) or is larger than READ_LIMIT."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise LintError(f"cannot read submission {str(p)!r}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise LintError(f"cannot read submission {str(p)!r}: not a regular file")
        if info.st_size > READ_LIMIT:
            raise LintError(f"cannot read submission {str(p)!r}: it is {info.st_size:,} bytes, more than "
                            f"the {READ_LIMIT:,} lint reads (the limit for a submission is {SIZE_LIMIT:,})")
        try:
            raw = f.read(READ_LIMIT + 1)
        except OSError as e:
            raise LintError(f"cannot read submission {str(p)!r}: {e.strerror or e}") from None
    return raw.decode("utf-8", "surrogateescape"), len(raw)


def lint_file_report(path: str | Path, *, problem: str | None = None) -> LintReport:
    """lint_report of the file at ``path`` (read, never imported)."""
    text, size = read_submission(path)
    return lint_report(text, problem=problem, size_bytes=size)


def lint_file(path: str | Path, *, problem: str | None = None) -> list[LintFinding]:
    """lint_text of the file at ``path`` (read, never imported)."""
    text, size = read_submission(path)
    return lint_text(text, path=str(path), problem=problem, size_bytes=size)


def render_findings(findings: list[LintFinding] | tuple[LintFinding, ...], path: str) -> list[str]:
    """One line per finding: ``path:LINE: RULE: message (fix: ...)``."""
    return [f.render(path) for f in findings]


def payload_summary(path: str | Path, *, problem: str | None = None) -> str:
    """The payload estimate line for the file at ``path`` (problem from ``problem`` or its header)."""
    text, _ = read_submission(path)
    name = resolve_leaderboard(problem) if problem is not None else read_header(text).leaderboard
    return estimate_payload(text, name if name in known_leaderboards() else None).summary()

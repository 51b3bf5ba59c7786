"""Static checks of a single-file submission against the rules the leaderboard enforces.

The file is read, never imported or run. Each finding is one line::

    path:LINE: [warning: ]RULE [SOURCE]: message (fix: ...)

SOURCE says whose rule it is (:data:`submitgen.lint.findings.SOURCES`): ``popcorn-cli``,
``kernelbot`` (its grep, size limit and header check) and ``KernelGuard`` refuse a file, so their
findings may fail the lint; ``eval.py`` fails (errors) or may fail (warnings) the run of a file the
leaderboard accepted; a ``reviewer policy`` (leaderboards.md: what the organizers disqualify, which
no tool refuses) is always a warning.

Rules (their sources: docs/rules.md):

``coding``
    the file is decoded as Python decodes it (PEP 263: a UTF-8 BOM, then a coding line in the
    first two lines, else UTF-8). A coding under which the code Python reads differs from what the
    bytes show (utf-7, utf-16/32, EBCDIC, a multibyte codec that swallows ASCII bytes: decided by
    :func:`submitgen.readers.pycoding.decode_python`'s check) gets a warning (reviewers' policy) where
    the file is UTF-8 and fails where it is not (popcorn-cli reads UTF-8 and refuses it), as does
    any file that is not UTF-8, and one whose coding Python refuses (eval.py). ``test`` and
    ``bench`` refuse to run a file whose coding hides code, even with ``--no-lint``.
``header``
    ``#!POPCORN`` directives as popcorn-cli reads them: from any line that starts with ``#`` or
    ``//`` and whose first word is ``#!POPCORN`` or ``//!POPCORN`` (exact case), the last of each
    kind winning, in lines that end at ``\n`` only (a file whose lines end in a bare ``\r`` is one
    line to popcorn-cli: a warning names the directives it does not read); popcorn-cli sends the
    leaderboard with the request. Names must be known
    (``leaderboard``, ``gpu``/``gpus``; another is a warning), with a value; the leaderboard must be
    one lint knows and agree with ``--problem``, the GPU one it runs on, and only one. Without
    ``--problem`` the leaderboard is required; a missing ``gpu`` is a warning (popcorn-cli's
    ``--gpu`` supplies it). A directive outside the first comment block is a warning (the server
    itself reads only that block), two that disagree an error, a near miss (``# !POPCORN``,
    ``#!popcorn``, an indented one) an error since nothing reads it.
``banned-word``
    the word the server greps for (``s-t-r-e-a-m``, any case, anywhere: comments, strings, kernel
    names, base64 blobs). One finding per line that holds it. Also a word that no line spells but a
    constant expression builds (``chr(83) + ...``, ``'...'[::-1]``, ``''.join(map(chr, ...))``,
    f-strings, ``%``/``format``, a name bound once to such a value: :mod:`submitgen.lint.fold`):
    a warning, since the server's grep misses it, but reviewers disqualify hiding the word.
``size``
    at most 1,000,000 bytes (HTTP 413 above).
``payload``
    the estimated dispatch payload (:mod:`submitgen.lint.payload`) within 65,535 characters.
``syntax``
    the file must parse; otherwise the AST rules below cannot run.
``exec-decoded``
    ``exec``/``eval``/``compile`` (also reached through ``builtins``, ``getattr`` or an alias),
    ``__import__``/``importlib.import_module``, ``marshal.loads`` or ``pickle.loads`` of data that
    flows from a decoder (base64/binascii/codecs decode, zlib/lzma/bz2/gzip decompress,
    ``bytes.fromhex``). A warning (reviewers disqualify hidden code); KernelGuard's own
    ``OBFUSCATED_EXEC``, which recognizes fewer forms, is the ``kernelguard`` rule. The flow analysis
    is by name across the whole file (assignments, function returns), so it errs towards flagging.
    ``marshal.loads`` is flagged whatever its argument (it makes code objects).
``exec-dynamic``
    Decision: *any* ``exec``/``eval``/``compile`` whose argument is not a string literal gets a
    warning too, as do ``runpy`` and ``loader.exec_module``. A static check cannot prove that a
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
    ``hsa_queue_create`` anywhere, spelled or built from constant pieces: a kernel dispatched on a
    queue of its own runs outside the leaderboard's timing events (the ~4 µs timing artefact),
    which the organizers disqualify (a warning).
``kernelguard``
    KernelGuard's own verdict (:mod:`submitgen.lint.detector`), where the ``kernelguard`` package
    is installed: each pattern it matched, an error when it filters the file (``should_filter``),
    else a warning; an error when it fails on the file (kernelbot then refuses it).
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

from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import ContainerError, LintError, SourceCodingError
from submitgen.lint.detector import Verdict
from submitgen.lint.detector import run as kernelguard_verdict
from submitgen.lint.findings import BANNED_WORD, ERROR, RULES, SIZE_LIMIT, SOURCES, WARNING, LintFinding
from submitgen.lint.flow import hidden_code_findings, walk
from submitgen.lint.header import (
    Header,
    check_header,
    known_gpus,
    known_leaderboards,
    read_header,
    resolve_leaderboard,
    resolve_problem,
)
from submitgen.lint.kernel import binds_custom_kernel, input_write_findings
from submitgen.lint.parse import Parsed, parse
from submitgen.lint.payload import PayloadEstimate, estimate_payload
from submitgen.lint.text import check_banned_word, check_built_words, check_hsa_queue
from submitgen.problems.registry import leaderboards
from submitgen.readers.pycoding import decode_python
from submitgen.rules import PAYLOAD_LIMIT
from submitgen.system import Refused, no_cyclic_gc, read_regular

__all__ = [
    "BANNED_WORD",
    "ERROR",
    "RULES",
    "SIZE_LIMIT",
    "SOURCES",
    "WARNING",
    "Header",
    "LintError",
    "LintFinding",
    "LintReport",
    "Verdict",
    "known_gpus",
    "known_leaderboards",
    "lint_file",
    "lint_file_report",
    "lint_report",
    "lint_text",
    "decode_submission",
    "read_header",
    "read_submission",
    "render_findings",
    "resolve_leaderboard",
    "resolve_problem",
]

READ_LIMIT = SIZE_LIMIT
"""The most bytes lint reads of a file: the leaderboard's cap on a submission, which is what a real
input needs (inspect reads a .py up to the same bound, readers/containers.MAX_PY_FILE_SIZE). The
costliest file under it (500,000 one-name lines) takes about 0.9 GB and 12 s of CPU to parse,
within lint's budget (submitgen/system.py); a 4 MB file took past it."""


@dataclass(frozen=True)
class LintReport:
    """Everything one lint run found: the failed rules, the warnings, the payload estimate and
    KernelGuard's verdict (its findings are among the others)."""

    errors: tuple[LintFinding, ...]
    warnings: tuple[LintFinding, ...]
    payload: PayloadEstimate
    kernelguard: Verdict

    @property
    def passed(self) -> bool:
        return not self.errors

    @property
    def findings(self) -> tuple[LintFinding, ...]:
        """The failed rules (warnings left out)."""
        return self.errors

    def failed(self, rule: str) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.errors if f.rule == rule)


def _check_ast(parsed: Parsed, clones_inputs: bool, flagged: dict[str, set[int]]) -> list[LintFinding]:
    found = list(parsed.findings)
    if parsed.tree is None:
        return found
    nodes = walk(parsed.tree)
    found += check_built_words(nodes, flagged)
    found += hidden_code_findings(parsed.tree, nodes)
    if not binds_custom_kernel(parsed.tree.body):
        found.append(LintFinding(
            "custom-kernel", 1, "no module-level 'custom_kernel': the evaluator imports "
            "'custom_kernel' from the submission",
            "define 'def custom_kernel(data: input_t) -> output_t:' at module level", source="eval.py"))
    if not clones_inputs:
        found += input_write_findings(parsed.tree)
    return found


def _clones_inputs(leaderboard: str | None) -> bool:
    row = leaderboards(load=False).get(leaderboard) if leaderboard else None
    return True if row is None else row.clones_inputs


def lint_report(text: str, *, problem: str | None = None, size_bytes: int | None = None,
                extra: tuple[LintFinding, ...] = (), baseline: int | None = None,
                gpu: str | None = None) -> LintReport:
    """Check the submission ``text``: the failed rules and the warnings, each sorted by line, and the
    payload estimate. ``problem`` ("mxfp4-mm" or "amd-mxfp4-mm") is what the user passes as
    --problem; an unknown name raises LintError. ``size_bytes`` is the file's size when it is known
    (lint_file); otherwise the UTF-8 length of ``text``. ``extra``: findings made before the text
    existed (the file's ``coding``, :func:`decode_submission`). ``baseline``: the build's own
    problem's payload baseline (``problem`` is then its leaderboard, known or not), ``gpu`` its GPU."""
    if problem is not None and baseline is None:
        problem, baseline = resolve_problem(problem)
    canon = problem
    lines = text.splitlines()
    found = list(extra) + check_header(text, canon, gpu)
    found += check_banned_word(lines)
    size = len(text.encode("utf-8", "surrogateescape")) if size_bytes is None else size_bytes
    if size > SIZE_LIMIT:
        found.append(LintFinding(
            "size", 1, f"the file is {size:,} bytes; the limit is {SIZE_LIMIT:,}",
            "compress what the file embeds (lzma) or embed less", source="kernelbot"))
    header = read_header(text)
    target = canon or (header.leaderboard if header.leaderboard in known_leaderboards() else None)
    est = estimate_payload(text, target, baseline)
    if est.chars > PAYLOAD_LIMIT:
        longest = max(range(len(lines)), key=lambda i: len(lines[i])) + 1 if lines else 1
        found.append(LintFinding(
            "payload", longest, f"{est.summary()}: over GitHub's dispatch limit by "
            f"{-est.headroom:,} chars (the longest line is here)",
            "embed less: compress the code object with lzma before base64, drop unused "
            "kernels or sources", source="kernelbot"))
    found += check_hsa_queue(lines)
    flagged = {rule: {f.line for f in found if f.rule == rule} for rule in ("banned-word", "hsa-queue")}
    # the collector waits: the parse and the tree rules make millions of objects and hold every
    # node of a 1 MB tree (the fold also a stack of generators as deep as a chain of names), and a
    # tree holds no cycles (CPU of bench_lint's 1 MB taint chain 8.7 s -> 5.7 s, 1 MB of functions
    # 6.2 s -> 4.4 s)
    with no_cyclic_gc():
        parsed = parse(text)
        found += _check_ast(parsed, _clones_inputs(target), flagged)
    verdict = kernelguard_verdict(text)
    found += verdict.findings()
    order = {r: i for i, r in enumerate(RULES)}
    found.sort(key=lambda f: (f.line, order.get(f.rule, 99)))
    return LintReport(tuple(f for f in found if f.severity != WARNING),
                      tuple(f for f in found if f.severity == WARNING), est, verdict)


def lint_text(text: str, *, path: str = "<text>", problem: str | None = None,
              size_bytes: int | None = None) -> list[LintFinding]:
    """The failed rules of :func:`lint_report`, sorted by line (empty: all pass); warnings are left
    out. ``path`` is only used by callers to render lines."""
    del path  # rendering is the caller's job (LintFinding.render); kept for a uniform signature
    return list(lint_report(text, problem=problem, size_bytes=size_bytes).errors)


def _read_bytes(path: str | Path) -> bytes:
    """The bytes of a submission file; LintError when it cannot be read, is not a regular file (a
    FIFO or a device would block or never end) or is larger than READ_LIMIT (the one bounded
    reader, :func:`submitgen.system.read_regular`)."""
    p = Path(path)
    head = f"cannot read submission {str(p)!r}"
    try:
        return read_regular(p, READ_LIMIT)
    except Refused as r:
        if r.reason == "missing":
            raise LintError(f"{head}: No such file or directory") from None
        if r.reason == "unreadable":
            raise LintError(f"{head}: {r.detail}") from None
        if r.reason == "not-regular":
            raise LintError(f"{head}: not a regular file") from None
        if r.reason == "too-large":
            raise LintError(f"{head}: it is {r.size:,} bytes, more than the {READ_LIMIT:,} a submission may "
                            "have (the leaderboard's limit)") from None
        raise LintError(f"{head}: it grew past the {READ_LIMIT:,} bytes a submission may have while being "
                        "read") from None


_CODING_FIX = "save the file as UTF-8 and remove the coding line"


def decode_submission(raw: bytes) -> tuple[str, tuple[LintFinding, ...]]:
    """The text Python reads from ``raw`` (PEP 263: BOM, coding line, UTF-8) and the ``coding``
    findings: an error for a file that popcorn-cli, which reads UTF-8, cannot send or whose coding
    Python refuses; a warning (reviewers' policy) for a coding that hides code from a reader
    (:func:`decode_python`) in a file popcorn-cli sends. Where
    Python's decoding hides code, the text is the bytes as a reader sees them (latin-1); where it
    fails, the bytes read as UTF-8 (undecodable bytes kept as surrogates), so that the other rules
    still run."""
    fallback = raw.decode("utf-8", "surrogateescape")
    try:
        source = decode_python(raw, "")
    except SourceCodingError as e:  # the other rules read the bytes as a reader sees them
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            refused = (LintFinding("coding", e.line, f"{e.detail}; and popcorn-cli, which reads a submission "
                                   "as UTF-8, refuses it", _CODING_FIX, source="popcorn-cli"),)
            return raw.decode("latin-1"), refused
        return raw.decode("latin-1"), (LintFinding(
            "coding", e.line, f"{e.detail}: the leaderboard runs it, and reviewers disqualify hidden code",
            _CODING_FIX, WARNING, source="policy"),)
    except ContainerError as e:
        detail = str(e).removeprefix(": ")
        if detail.startswith("not valid Python: byte"):
            return fallback, ()  # bytes invalid in the coding: the syntax rule reports the file
        why = detail.removeprefix("not valid Python: ")
        return fallback, (LintFinding("coding", 1, f"Python refuses the file's coding ({why})", _CODING_FIX,
                                      source="eval.py"),)
    found: tuple[LintFinding, ...] = ()
    if source.encoding == "utf-8-sig" and source.text.startswith(("#!POPCORN", "//!POPCORN")):
        found = (LintFinding(
            "header", 1, "the file starts with a UTF-8 BOM: Python skips it, but popcorn-cli and the "
            "server read the first line as the BOM and then '#!POPCORN ...', not as a directive",
            "save the file without the BOM (or pass --leaderboard and --gpu to popcorn-cli)", WARNING,
            source="popcorn-cli"),)
    if source.encoding not in ("utf-8", "utf-8-sig"):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            found = (LintFinding(
                "coding", raw.count(b"\n", 0, e.start) + 1, f"the file is {source.encoding} (line "
                f"{source.coding_line}) and not valid UTF-8 (byte 0x{raw[e.start]:02x} here): Python reads "
                "it, but popcorn-cli reads a submission as UTF-8 and refuses it", _CODING_FIX,
                source="popcorn-cli"),)
    return source.text, found


def read_submission(path: str | Path) -> tuple[str, int]:
    """(text, size in bytes) of a submission file, decoded as Python decodes it; LintError when it
    cannot be read, is not a regular file, is larger than READ_LIMIT, or declares a coding that
    hides code from a reader (``test`` and ``bench`` never run such a file)."""
    raw = _read_bytes(path)
    try:
        decode_python(raw, "")
    except SourceCodingError as e:
        raise LintError(f"cannot read submission {str(path)!r}: {e.detail}") from None
    except ContainerError:
        pass  # Python refuses the file: the syntax or coding rule says so
    return decode_submission(raw)[0], len(raw)


def lint_file_report(path: str | Path, *, problem: str | None = None) -> LintReport:
    """lint_report of the file at ``path`` (read, never imported), its ``coding`` findings included."""
    raw = _read_bytes(path)
    text, coding = decode_submission(raw)
    board, baseline = resolve_problem(problem) if problem is not None else (None, None)
    return lint_report(text, problem=board, size_bytes=len(raw), extra=coding, baseline=baseline)


def lint_file(path: str | Path, *, problem: str | None = None) -> list[LintFinding]:
    """lint_text of the file at ``path`` (read, never imported)."""
    return list(lint_file_report(path, problem=problem).errors)


def render_findings(findings: list[LintFinding] | tuple[LintFinding, ...], path: str) -> list[str]:
    """One line per finding: ``path:LINE: [warning: ]RULE [SOURCE]: message (fix: ...)``."""
    return [f.render(path) for f in findings]

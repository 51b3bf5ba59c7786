"""Static checks of a single-file submission against the rules the leaderboard enforces: the file
is read, never imported or run. Each finding is one line::

    path:LINE: [warning: ]RULE [SOURCE]: message (fix: ...)

SOURCE says whose rule it is (:data:`submitgen.lint.findings.SOURCES`). The rules, what each checks
and where the leaderboard's code enforces it: docs/rules.md. Warnings do not fail the lint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from submitgen.errors import ContainerError, LintError
from submitgen.lint.detector import Verdict
from submitgen.lint.detector import run as kernelguard_verdict
from submitgen.lint.findings import RULES, SIZE_LIMIT, WARNING, LintFinding
from submitgen.lint.header import (
    check_header,
    known_leaderboards,
    read_header,
    resolve_leaderboard,
    resolve_problem,
)
from submitgen.lint.kernel import binds_custom_kernel, input_write_findings
from submitgen.lint.parse import Parsed, parse
from submitgen.lint.payload import PayloadEstimate, estimate_payload
from submitgen.lint.text import check_banned_word, check_hsa_queue
from submitgen.problems.registry import leaderboards
from submitgen.readers.pycoding import decode_python
from submitgen.rules import PAYLOAD_LIMIT
from submitgen.system import Refused, no_cyclic_gc, read_regular

__all__ = [
    "LintFinding",
    "LintReport",
    "lint_file",
    "lint_file_report",
    "lint_report",
    "lint_text",
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

    def failed(self, rule: str) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.errors if f.rule == rule)


def _check_ast(parsed: Parsed, clones_inputs: bool) -> list[LintFinding]:
    found = list(parsed.findings)
    if parsed.tree is None:
        return found
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
                gpus: tuple[str, ...] = ()) -> LintReport:
    """Check the submission ``text``: the failed rules and the warnings, each sorted by line, and the
    payload estimate. ``problem`` ("mxfp4-mm" or "amd-mxfp4-mm") is what the user passes as
    --problem; an unknown name raises LintError. ``size_bytes`` is the file's size when it is known
    (lint_file); otherwise the UTF-8 length of ``text``. ``extra``: findings made before the text
    existed (the file's ``coding``, :func:`decode_submission`). ``baseline``: the build's own
    problem's payload baseline (``problem`` is then its leaderboard, known or not), ``gpus`` its GPUs."""
    if problem is not None and baseline is None:
        problem, baseline, gpus = resolve_problem(problem)
    canon = problem
    lines = text.splitlines()
    found = list(extra) + check_header(text, canon, gpus)
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
    # the collector waits: the parse makes millions of objects for a 1 MB file, and a tree holds no
    # cycles
    with no_cyclic_gc():
        found += _check_ast(parse(text), _clones_inputs(target))
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
    findings: an error for a file that popcorn-cli, which reads UTF-8, cannot send, or whose coding
    Python refuses. Where Python cannot decode it, the text is the bytes read as UTF-8 (undecodable
    bytes kept as surrogates), so that the other rules still run."""
    found: list[LintFinding] = []
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        found.append(LintFinding(
            "coding", raw.count(b"\n", 0, e.start) + 1, f"the file is not valid UTF-8 (byte "
            f"0x{raw[e.start]:02x} here): popcorn-cli reads a submission as UTF-8 and refuses it",
            _CODING_FIX, source="popcorn-cli"))
    try:
        source = decode_python(raw, "")
    except ContainerError as e:
        if not found:
            why = str(e).removeprefix(": not valid Python: ")
            found.append(LintFinding("coding", 1, f"Python refuses the file's coding ({why})", _CODING_FIX,
                                     source="eval.py"))
        return raw.decode("utf-8", "surrogateescape"), tuple(found)
    if source.encoding == "utf-8-sig" and source.text.startswith(("#!POPCORN", "//!POPCORN")):
        found.append(LintFinding(
            "header", 1, "the file starts with a UTF-8 BOM: Python skips it, but popcorn-cli and the "
            "server read the first line as the BOM and then '#!POPCORN ...', not as a directive",
            "save the file without the BOM (or pass --leaderboard and --gpu to popcorn-cli)", WARNING,
            source="popcorn-cli"))
    return source.text, tuple(found)


def read_submission(path: str | Path) -> tuple[str, int]:
    """(text, size in bytes) of a submission file, decoded as Python decodes it; LintError when it
    cannot be read, is not a regular file or is larger than READ_LIMIT."""
    raw = _read_bytes(path)
    return decode_submission(raw)[0], len(raw)


def lint_file_report(path: str | Path, *, problem: str | None = None) -> LintReport:
    """lint_report of the file at ``path`` (read, never imported), its ``coding`` findings included."""
    raw = _read_bytes(path)
    text, coding = decode_submission(raw)
    board, baseline, gpus = resolve_problem(problem) if problem is not None else (None, None, ())
    return lint_report(text, problem=board, size_bytes=len(raw), extra=coding, baseline=baseline, gpus=gpus)


def lint_file(path: str | Path, *, problem: str | None = None) -> list[LintFinding]:
    """lint_text of the file at ``path`` (read, never imported)."""
    return list(lint_file_report(path, problem=problem).errors)


def render_findings(findings: list[LintFinding] | tuple[LintFinding, ...], path: str) -> list[str]:
    """One line per finding: ``path:LINE: [warning: ]RULE [SOURCE]: message (fix: ...)``."""
    return [f.render(path) for f in findings]

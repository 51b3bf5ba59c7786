r"""KernelGuard, kernelbot's hack detector (the ``kernelguard`` package, submitgen's ``[kernelguard]``
extra), run on a submission's text as kernelbot runs it: ``kernelguard --api-mode`` is its
``analyze_code(code, compute_structural_hash=False)`` under the default profile, which is what the
module has in force when imported. Its own verdict becomes findings (rule ``kernelguard``, source
KernelGuard): each matched pattern an error when KernelGuard filters the file (``should_filter``),
else a warning. kernelbot refuses a file whose pre-check fails (KernelGuard raises), so that is an
error too. Not installed: no finding, and the verdict says so.

KernelGuard is not linear in its input: a regex of its (``(\w+)\s*=\s*sys\.modules...``) is
quadratic in a run of word characters (a 20,000-character identifier or hex string took 10 s of
CPU, 2026-12-07; a 1 MB file of short lines 29 s), and kernelbot stops it after 30 s and refuses
the file. So a text of more than IN_PROCESS_CHARS characters is checked in a forked child under
CPU_SECONDS of CPU time (and a wall limit), far below kernelbot's 30 s so that lint stays within its
own bounds: past it the verdict is unknown, a warning that says so. A shorter text, whose cost is
bounded by its size, is checked in this process."""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import resource
import select
import signal
import time
import warnings
from dataclasses import dataclass
from typing import Any

from submitgen.lint.findings import ERROR, WARNING, LintFinding
from submitgen.system import die_with_parent, memory_budget_hit, out_of_memory
from submitgen.textfmt import printable

INSTALL = "pip install 'submitgen[kernelguard]'"
IN_PROCESS_CHARS = 4096
"""Texts up to this many characters are checked in this process (at most ~0.1 s of KernelGuard's
quadratic path); longer ones in a forked child under CPU_SECONDS."""
CPU_SECONDS = 2
"""KernelGuard's CPU time on one file here (each default build takes 0.5 s). kernelbot's own timeout
for it is 30 s of wall time on its machine (KERNELGUARD_TIMEOUT_SEC's default)."""
WALL_SECONDS = 30
"""The child's wall-time limit, for a machine busy enough that its CPU time lags."""


@dataclass(frozen=True)
class Match:
    """One pattern KernelGuard matched: its name, severity and evidence, as it reports them."""

    pattern: str
    severity: str
    evidence: str


@dataclass(frozen=True)
class Verdict:
    """KernelGuard's verdict on one file. ``version`` None: not installed (nothing else is set);
    ``failure``: what KernelGuard raised, where it gave no verdict; ``timed_out``: it did not finish
    within CPU_SECONDS here (no verdict, and none known)."""

    version: str | None
    classification: str | None = None
    should_filter: bool = False
    filter_reason: str | None = None
    matches: tuple[Match, ...] = ()
    failure: str | None = None
    timed_out: bool = False

    def summary(self) -> str:
        """One line: ``KernelGuard 0.3.2: valid``, what it filtered, or that it did not run."""
        if self.version is None:
            return f"KernelGuard: not installed, so its check did not run ({INSTALL})"
        head = f"KernelGuard {self.version}"
        if self.failure is not None:
            return f"{head}: failed on this file ({self.failure}), so kernelbot's pre-check would refuse it"
        if self.timed_out:
            return f"{head}: not finished within {CPU_SECONDS} s of CPU, so its verdict is unknown"
        names = ", ".join(m.pattern for m in self.matches)
        if self.should_filter:
            reason = f" ({self.filter_reason})" if self.filter_reason else ""
            return f"{head}: {self.classification}, filtered{reason}: {names}"
        return f"{head}: {self.classification}" + (f" (not filtered: {names})" if names else "")

    def findings(self) -> tuple[LintFinding, ...]:
        if self.timed_out:
            return (LintFinding(
                "kernelguard", 1, f"KernelGuard {self.version} did not finish within {CPU_SECONDS} s of CPU "
                "here, so its verdict is unknown; kernelbot gives it 30 s and refuses the file when it runs "
                "out", "keep runs of letters and digits short (long identifiers, hex or base64 text without "
                "breaks): KernelGuard's time grows with their square", WARNING, source="kernelguard"),)
        if self.failure is not None:
            return (LintFinding(
                "kernelguard", 1, f"KernelGuard {self.version} fails on this file ({self.failure}): "
                "kernelbot refuses a file whose pre-check fails", "simplify what KernelGuard cannot "
                "read (see the error), then run lint again", source="kernelguard"),)
        if self.should_filter:
            severity, verdict = ERROR, "filters the file, and kernelbot refuses it"
            fix = "change the code the evidence describes"
        else:
            severity, verdict = WARNING, f"classifies the file {self.classification} (not filtered)"
            fix = "reviewers see the match: change the code the evidence describes where you can"
        return tuple(LintFinding("kernelguard", 1, f"{m.pattern} ({m.severity}): {m.evidence}; KernelGuard "
                                 f"{verdict}", fix, severity, source="kernelguard") for m in self.matches)

    def as_json(self) -> dict[str, Any]:
        return {"version": self.version, "installed": self.version is not None,
                "classification": self.classification, "should_filter": self.should_filter,
                "filter_reason": self.filter_reason, "failure": self.failure, "timed_out": self.timed_out,
                "matched_patterns": [{"pattern": m.pattern, "severity": m.severity, "evidence": m.evidence}
                                     for m in self.matches]}


def _version() -> str:
    try:
        return importlib.metadata.version("kernelguard")
    except importlib.metadata.PackageNotFoundError:  # importable without its metadata (a bare module)
        return "(version unknown)"


_CHARS = 300
"""The most characters of each string KernelGuard returns that a finding shows (its evidence quotes
the file)."""


def _text(value: object) -> str:
    text = printable(value if isinstance(value, str) else repr(value))
    return text if len(text) <= _CHARS else text[:_CHARS] + "..."


_TIMED_OUT = "timed out"


def _analyze(kernelguard: Any, text: str) -> dict[str, Any] | str:
    """KernelGuard's result on ``text``, or what it raised."""
    try:
        with warnings.catch_warnings():  # its parse's SyntaxWarnings: lint's own findings cover the text
            warnings.simplefilter("ignore")
            result = kernelguard.analyze_code(text, compute_structural_hash=False)
    except MemoryError as e:
        if memory_budget_hit():
            raise
        return f"MemoryError: {e}"
    except Exception as e:  # noqa: BLE001 - any failure of the detector is its verdict: kernelbot refuses
        return f"{type(e).__name__}: {e}"
    return result if isinstance(result, dict) else f"it returned {type(result).__name__}, not a verdict"


def _child(kernelguard: Any, text: str, fd: int, parent: int) -> None:
    die_with_parent(parent)
    used = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(used.ru_utime + used.ru_stime) + CPU_SECONDS
    soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # past the limit the child ends: kernelbot's timeout
    data = json.dumps(_analyze(kernelguard, text)).encode()
    while data:
        data = data[os.write(fd, data):]


def _analyze_in_child(kernelguard: Any, text: str) -> dict[str, Any] | str:
    """:func:`_analyze` in a forked child under CPU_SECONDS of CPU and WALL_SECONDS of wall time."""
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's exit status and pipe are what the parent checks
        code = 1
        try:
            os.close(read)
            _child(kernelguard, text, write, parent)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    chunks, deadline = [], time.monotonic() + WALL_SECONDS
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        result = json.loads(b"".join(chunks))
        return result if isinstance(result, (dict, str)) else "no verdict"
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return _TIMED_OUT
    return f"its process ended with status {status}"


def run(text: str) -> Verdict:
    """KernelGuard's verdict on the submission ``text``."""
    try:
        import kernelguard
    except ImportError as e:
        if out_of_memory(e):
            raise
        return Verdict(None)
    version = _version()
    small = len(text) <= IN_PROCESS_CHARS
    result = _analyze(kernelguard, text) if small else _analyze_in_child(kernelguard, text)
    if result is _TIMED_OUT:
        return Verdict(version, timed_out=True)
    if isinstance(result, str):
        return Verdict(version, failure=_text(result))
    matches = tuple(Match(_text(m.get("pattern")), _text(m.get("severity")), _text(m.get("evidence")))
                    for m in result.get("matched_patterns", ()) if isinstance(m, dict))
    reason = result.get("filter_reason")
    return Verdict(version, _text(result.get("classification")), bool(result.get("should_filter")),
                   None if reason is None else _text(reason), matches)

"""The one JSON envelope every command's ``--json`` prints (docs/json.md; schema
docs/json.schema.json): ``{"command", "version", "format_version", "ok", "error", ...}`` with the
command's own fields after these. A command that fails with a domain error prints the envelope
with ``ok`` false, the ``error`` line and nothing else. Values are strict JSON (no NaN)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from submitgen import __version__

FORMAT_VERSION = 1


def envelope(command: str, ok: bool, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The envelope of a command that ran: ``ok`` is whether it passed; ``fields`` its results."""
    return {"command": command, "version": __version__, "format_version": FORMAT_VERSION, "ok": ok,
            "error": None, **(fields or {})}


def error_envelope(command: str, error: str) -> dict[str, Any]:
    """The envelope of a command stopped by a domain error (what its Error: line would say)."""
    return {"command": command, "version": __version__, "format_version": FORMAT_VERSION, "ok": False,
            "error": error}


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, allow_nan=False)


def payload_json(p: Any) -> dict[str, Any]:
    """A ``payload.PayloadEstimate`` as JSON."""
    return {"problem": p.problem, "chars": p.chars, "limit": p.limit, "baseline": p.baseline,
            "submission_chars": p.submission_chars, "headroom": p.headroom, "fits": p.fits}


def finding_json(f: Any) -> dict[str, Any]:
    """A ``lint.LintFinding`` as JSON."""
    return {"rule": f.rule, "line": f.line, "severity": f.severity, "source": f.source, "message": f.message,
            "fix": f.fix}


def lint_fields(file: str, leaderboard: str | None, report: Any) -> dict[str, Any]:
    """``lint --json``'s fields for a ``lint.LintReport`` of ``file``."""
    return {"file": file, "leaderboard": leaderboard, "errors": [finding_json(f) for f in report.errors],
            "warnings": [finding_json(f) for f in report.warnings], "payload": payload_json(report.payload),
            "kernelguard": report.kernelguard.as_json()}

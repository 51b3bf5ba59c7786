"""Stage 5: the checks a rendered file must pass before it is written: one lint run (the build also
refuses what lint only warns about as a reviewer's policy), and every embedded blob decoding back to
the very code object it checked. The payload cap holds for a file of the leaderboard's arch only."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from submitgen.errors import ValidationError
from submitgen.lint import LintReport, lint_report
from submitgen.pipeline.values import Prepared, Rendered, Verified
from submitgen.readers.containers import load_code_objects

# Lint rules the build reports as checks of their own, in this order, with the error it raises.
_RULE_CHECKS = (
    ("syntax", "compiles", "rendered submission does not compile: line {line}: {message}"),
    ("header", "header first", "rendered submission has a bad header: line {line}: {message}"),
    ("banned-word", "no banned word", "rendered submission line {line}: {message}"),
    ("size", "size <= 1 MB", "rendered submission: {message}"),
)


def _check_rules(report: LintReport) -> list[str]:
    checks = []
    for rule, name, message in _RULE_CHECKS:
        failed = report.failed(rule)
        if failed:
            raise ValidationError(message.format(line=failed[0].line, message=failed[0].message))
        checks.append(name)
    return checks


def _check_round_trip(text: str, images: Sequence[bytes]) -> None:
    found = {hashlib.sha256(c.data).hexdigest() for c in load_code_objects(text.encode())}
    for image in images:
        if hashlib.sha256(image).hexdigest() not in found:
            raise ValidationError(
                "the embedded blob does not decode back to the code object (sha256 differs)")


def verify(p: Prepared, rendered: Rendered, images: Sequence[bytes]) -> Verified:
    # the rule a launcher of its own queue fails by design (its build already warns loudly)
    allowed = {p.launcher.own_queue.lint_rule} if p.launcher.own_queue is not None else set()
    report = lint_report(rendered.text, problem=p.problem.leaderboard, baseline=p.problem.payload_baseline,
                         gpus=(p.problem.gpu,))
    checks = _check_rules(report)
    _check_round_trip(rendered.text, images)
    checks.append("blob round trip")
    named = {rule for rule, _, _ in _RULE_CHECKS} | {"payload"} | allowed
    # a reviewer's policy only warns in lint, but a build does not emit what reviewers disqualify
    policy = tuple(f for f in report.warnings if f.source == "policy")
    others = [f for f in report.errors + policy if f.rule not in named]
    if others:
        f = others[0]
        raise ValidationError(f"rendered submission fails lint: line {f.line}: {f.rule}: {f.message}")
    checks.append("lint")
    payload = report.payload
    if payload.fits:
        checks.append("payload within budget")
    elif p.arch == (p.problem.arch or p.arch):  # another arch's file is never submitted: summary.payload_note
        raise ValidationError(
            f"estimated dispatch payload {payload.chars} chars exceeds the {payload.limit}-char limit "
            f"({-payload.headroom} over); embed fewer or smaller kernels"
        )
    return Verified(rendered, tuple(checks), payload, report.kernelguard)

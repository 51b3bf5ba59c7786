"""Estimate of kernelbot's dispatch payload for a submission.

On MI355X the binding size limit is not the 1 MB file limit but GitHub's ``workflow_dispatch``
input cap: kernelbot sends ``base64(zlib(json(config)))`` where ``config`` holds every file of the
problem (task.py, reference.py, utils.py, eval.py, ...) plus the submission, and GitHub refuses
inputs over 65,535 characters (docs/rules.md, "Dispatch payload").

We do not ship the problem files, so the estimate is::

    chars = baseline(problem) + cost(submission)

- ``baseline`` is the measured payload of the problem's files with an empty submission, the
  ``payload_baseline`` of its ProblemSpec or leaderboard row in the registry
  (≈9.7k chars for amd-mxfp4-mm, ≈12.6k for amd-mixed-mla, ≈11.8k for amd-moe-mxfp4; for any
  other leaderboard, or none, the largest of these, to stay on the safe side);
- ``cost`` is what the submission adds: the length of ``base64(zlib -9(json string))`` of the
  submission text alone, less that of an empty string. Compressing the submission on its own
  ignores the little redundancy it shares with the problem files, so the estimate errs high.

``submission_budget`` is how many characters of already-compressed (incompressible, e.g. base64)
content a submission of this problem can hold in all: ``(limit - baseline) / 1.045``, since each
such character costs about 1.045 payload characters. It is about 50,000 for mixed-mla."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass

from submitgen.problems.registry import leaderboards, payload_baseline, problems
from submitgen.rules import PAYLOAD_LIMIT

INCOMPRESSIBLE_COST = 1.045
"""Payload characters per character of already-compressed base64 text in the submission."""



@dataclass(frozen=True)
class PayloadEstimate:
    """The estimated dispatch payload of one submission for one problem (all in characters)."""

    problem: str | None  # canonical leaderboard name, None when unknown
    chars: int  # estimated payload: baseline + submission_chars
    limit: int  # 65,535
    baseline: int  # the problem's files with an empty submission
    submission_chars: int  # what this submission adds
    headroom: int  # limit - chars (negative: over the limit)
    submission_budget: int  # incompressible chars a submission of this problem may hold in all

    @property
    def fits(self) -> bool:
        return self.chars <= self.limit

    def summary(self) -> str:
        """One line for build/lint output."""
        who = self.problem or "an unknown problem (largest baseline assumed)"
        return (f"estimated payload {self.chars:,} of {self.limit:,} chars for {who} "
                f"(problem files ≈{self.baseline:,} + submission {self.submission_chars:,}; "
                f"headroom {self.headroom:,}; budget for incompressible content ≈"
                f"{self.submission_budget:,} chars)")


def canonical_leaderboard(name: str) -> str:
    """'mxfp4-mm' or 'amd-mxfp4-mm' -> 'amd-mxfp4-mm': a registered problem's leaderboard (a
    plug-in's need not start with 'amd-'), else the name with 'amd-' put in front (no check that it
    exists)."""
    name = name.strip()
    for row in leaderboards(load=False).values():  # the shipped problems without importing torch
        if name in (row.name, row.problem):
            return row.name
    for p in problems():  # then every problem, plug-ins included
        if name in (p.name, p.leaderboard):
            return p.leaderboard
    return name if name.startswith("amd-") else f"amd-{name}"


def _packed_len(text: str) -> int:
    return len(base64.b64encode(zlib.compress(json.dumps(text).encode("utf-8"), 9)))


_EMPTY = _packed_len("")


def estimate_payload(submission_text: str, problem_name: str | None,
                     baseline: int | None = None) -> PayloadEstimate:
    """Estimate the dispatch payload of ``submission_text`` submitted to ``problem_name``
    ("mixed-mla" or "amd-mixed-mla"; None or an unlisted name uses the largest baseline), or
    with the problem's own ``baseline`` (a problem folder's)."""
    problem = problem_name if baseline is not None else \
        canonical_leaderboard(problem_name) if problem_name else None
    baseline = payload_baseline(problem) if baseline is None else baseline
    added = max(0, _packed_len(submission_text) - _EMPTY)
    chars = baseline + added
    return PayloadEstimate(
        problem=problem,
        chars=chars,
        limit=PAYLOAD_LIMIT,
        baseline=baseline,
        submission_chars=added,
        headroom=PAYLOAD_LIMIT - chars,
        submission_budget=int((PAYLOAD_LIMIT - baseline) / INCOMPRESSIBLE_COST),
    )

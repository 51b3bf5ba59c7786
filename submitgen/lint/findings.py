"""What a lint run reports: one :class:`LintFinding` per failed rule and line, each saying whose rule
it is (its ``source``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from submitgen.rules import BANNED_WORD, SIZE_LIMIT

__all__ = ["ADVISORY", "BANNED_WORD", "ERROR", "RULES", "SIZE_LIMIT", "SOURCES", "WARNING", "LintFinding"]

RULES = ("coding", "header", "banned-word", "size", "payload", "syntax", "custom-kernel", "hsa-queue",
         "kernelguard", "input-write")

ERROR = "error"
WARNING = "warning"

SOURCES = {
    "popcorn-cli": "popcorn-cli",  # how popcorn-cli reads and sends the file
    "kernelbot": "kernelbot",  # the server's checks before it queues a file: grep, size, header
    "kernelguard": "KernelGuard",  # kernelbot's hack detector, its own verdict
    "eval.py": "eval.py",  # the leaderboard's evaluator: what makes its import or check of the file fail
    "policy": "reviewer policy",  # what reviewers disqualify (leaderboards.md) and no tool refuses
}
"""Each finding's source (its JSON value) -> how the text output names it."""
ADVISORY = frozenset({"policy"})
"""Sources that never refuse a file by themselves: their findings are warnings."""


@dataclass(frozen=True)
class LintFinding:
    """One failed rule at one line (1-based). A ``warning`` does not fail the lint. ``source`` is
    whose rule it is (a key of SOURCES); one in ADVISORY is always a warning."""

    rule: str
    line: int
    message: str
    fix: str
    severity: str = ERROR
    source: str = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"lint finding source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if self.source in ADVISORY and self.severity != WARNING:
            raise ValueError(f"a {self.source!r} finding is a warning, got {self.severity!r} ({self.rule})")

    def render(self, path: str) -> str:
        mark = "warning: " if self.severity == WARNING else ""
        where = f"{path}:{self.line}: {mark}{self.rule} [{SOURCES[self.source]}]"
        return f"{where}: {self.message} (fix: {self.fix})"

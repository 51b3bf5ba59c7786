"""What a lint run reports: one :class:`LintFinding` per failed rule and line."""

from __future__ import annotations

from dataclasses import dataclass

from submitgen.rules import BANNED_WORD, SIZE_LIMIT

__all__ = ["BANNED_WORD", "ERROR", "RULES", "SIZE_LIMIT", "WARNING", "LintFinding"]

RULES = ("coding", "header", "banned-word", "size", "payload", "syntax", "exec-decoded", "exec-dynamic",
         "import-dynamic", "custom-kernel", "hsa-queue", "nesting", "input-write")

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class LintFinding:
    """One failed rule at one line (1-based). A ``warning`` does not fail the lint."""

    rule: str
    line: int
    message: str
    fix: str
    severity: str = ERROR

    def render(self, path: str) -> str:
        mark = "warning: " if self.severity == WARNING else ""
        return f"{path}:{self.line}: {mark}{self.rule}: {self.message} (fix: {self.fix})"

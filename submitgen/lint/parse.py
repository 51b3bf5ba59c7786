"""Parsing a submission: its tree, or a ``syntax`` finding, never an exception (but the command's
memory budget). A file that nests deeper than Python's recursion limit is one the evaluator cannot
import (CPython's compiler stops there too) and KernelGuard cannot read: a ``syntax`` error."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from submitgen.lint.findings import LintFinding
from submitgen.system import memory_budget_hit


@dataclass(frozen=True)
class Parsed:
    tree: ast.Module | None
    findings: tuple[LintFinding, ...]


def _syntax(e: BaseException) -> LintFinding:
    if isinstance(e, SyntaxError):
        return LintFinding("syntax", e.lineno or 1, f"the file does not parse: {e.msg}",
                           "fix the syntax error; the evaluator cannot import the file", source="eval.py")
    if isinstance(e, (RecursionError, MemoryError)):
        why = str(e) or "the parser ran out of room"
        return LintFinding("syntax", 1, f"the file nests expressions or blocks too deeply for Python's "
                           f"parser ({type(e).__name__}: {why})",
                           "split the deep expression into several statements", source="eval.py")
    where = " (a NUL byte)" if "null bytes" in str(e) else ""
    return LintFinding("syntax", 1, f"the file does not parse: {e}{where}", "remove the offending bytes",
                       source="eval.py")


def parse(text: str) -> Parsed:
    """The module's tree, or a ``syntax`` finding."""
    try:
        return Parsed(ast.parse(text), ())
    except (SyntaxError, ValueError, RecursionError) as e:
        return Parsed(None, (_syntax(e),))
    except MemoryError as e:
        if memory_budget_hit():
            raise
        return Parsed(None, (_syntax(e),))

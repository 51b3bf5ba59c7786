"""Parsing a submission without letting its depth crash the lint.

Python's parser turns a long ``"a" + "b" + ...`` chain or a deep unary chain into a deep tree and
builds it recursively, so ``ast.parse`` raises RecursionError at the default limit (about 1,000
levels), and MemoryError ("too complex") far beyond it. The lint parses in a thread of its own
with a large C stack and a raised recursion limit, so files up to the parser's own bound are
read; past that bound the result is a ``syntax`` finding, never an exception. Everything that walks
the tree afterwards is iterative."""

from __future__ import annotations

import ast
import sys
import threading
from dataclasses import dataclass

from submitgen.lint.findings import WARNING, LintFinding
from submitgen.system import memory_budget_hit

RECURSION_LIMIT = 60_000
"""The recursion limit while parsing: deeper than the parser itself goes (about 6,000 levels of
nested expressions in CPython 3.11 before it gives up with MemoryError)."""
STACK_BYTES = 256 << 20
"""C stack of the parsing thread: ample for RECURSION_LIMIT frames of the tree builder."""


@dataclass(frozen=True)
class Parsed:
    tree: ast.Module | None
    findings: tuple[LintFinding, ...]


def _parse_deep(text: str) -> tuple[ast.Module | None, BaseException | None]:
    result: dict[str, object] = {}

    def work() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, RECURSION_LIMIT))
        try:
            result["tree"] = ast.parse(text)
        except (RecursionError, MemoryError, SyntaxError, ValueError) as e:
            result["error"] = e
        finally:
            sys.setrecursionlimit(old)

    previous = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=work, name="submitgen-lint-parse")
        try:
            thread.start()
        except RuntimeError:  # no room for its stack: out of memory (the budget, at the CLI)
            raise MemoryError(f"no room for the parsing thread's {STACK_BYTES >> 20} MiB stack") from None
    finally:
        threading.stack_size(previous)
    thread.join()
    return result.get("tree"), result.get("error")  # type: ignore[return-value]


def _syntax(e: BaseException) -> LintFinding:
    if isinstance(e, SyntaxError):
        return LintFinding("syntax", e.lineno or 1, f"the file does not parse: {e.msg}",
                           "fix the syntax error; the evaluator cannot import the file", source="eval.py")
    if isinstance(e, (RecursionError, MemoryError)):
        why = str(e) or "the parser ran out of room"
        return LintFinding("syntax", 1, f"the file nests expressions or blocks too deeply for Python's "
                           f"parser ({type(e).__name__}: {why})",
                           "split the deep expression into several statements", source="eval.py")
    where = ""
    if isinstance(e, ValueError) and "null bytes" in str(e):
        where = " (a NUL byte)"
    return LintFinding("syntax", 1, f"the file does not parse: {e}{where}", "remove the offending bytes",
                       source="eval.py")


def parse(text: str) -> Parsed:
    """The module's tree, or a ``syntax`` finding. A file that parses only above the default
    recursion limit gets a ``nesting`` warning: CPython may refuse to compile it."""
    try:
        return Parsed(ast.parse(text), ())
    except (SyntaxError, ValueError) as e:
        return Parsed(None, (_syntax(e),))
    except (RecursionError, MemoryError) as first:
        if isinstance(first, MemoryError) and memory_budget_hit():
            raise
        tree, error = _parse_deep(text)
        if isinstance(error, MemoryError) and memory_budget_hit():
            raise error from None
        if tree is None:
            return Parsed(None, (_syntax(error or first),))
        return Parsed(tree, (LintFinding(
            "nesting", 1, f"an expression nests deeper than Python's default recursion limit "
            f"({sys.getrecursionlimit()}): this Python cannot compile the file as it stands "
            f"({type(first).__name__}), so the evaluator may fail to import it",
            "split the deep expression into several statements", WARNING, source="eval.py"),))


"""``banned-word`` and ``hsa-queue``: read from the text line by line, then from the constant
expressions of the tree (:mod:`submitgen.lint.fold`) for words built from pieces."""

from __future__ import annotations

import ast
import re

from submitgen.lint.findings import WARNING, LintFinding
from submitgen.lint.fold import FOLD_BUDGET, Folder, candidates
from submitgen.rules import BANNED_RE as _BANNED_RE

_BASE64_RUN_RE = re.compile(r"[A-Za-z0-9+/=_-]{40,}")


def check_banned_word(lines: list[str]) -> list[LintFinding]:
    found = []
    for no, line in enumerate(lines, 1):
        hits = list(_BANNED_RE.finditer(line))
        if not hits:
            continue
        cols = ", ".join(f"{m.group(0)!r} at column {m.start() + 1}" for m in hits)
        in_blob = any(
            b.start() <= m.start() and m.end() <= b.end()
            for m in hits for b in _BASE64_RUN_RE.finditer(line))
        if in_blob:
            fix = ("re-encode the embedded blob (another compression level or setting) until its "
                   "text no longer spells the word")
        else:
            fix = ("reword or rename it (say 'queue'); pass 0 as the HIP queue argument instead of "
                   "naming the default one")
        found.append(LintFinding(
            "banned-word", no, f"{cols}: the server rejects any file containing this word in any "
            "case", fix, source="kernelbot"))
    return found


def check_hsa_queue(lines: list[str]) -> list[LintFinding]:
    found = []
    for no, line in enumerate(lines, 1):
        if "hsa_queue_create" in line.lower():
            found.append(LintFinding(
                "hsa-queue", no, "creates an HSA queue of its own: kernels dispatched on it run "
                "outside torch's timing events (the ~4 us timing artefact), which the organizers "
                "disqualify",
                "launch with hipModuleLaunchKernel on the default queue (0) so the leaderboard's "
                "events time the kernel", WARNING, source="policy"))
    return found



_BUILT = "built from constant pieces (chr(), concatenation, join, formatting, ...)"
_HSA_RE = re.compile("hsa_queue_create", re.IGNORECASE)


def check_built_words(nodes: list[ast.AST], flagged: dict[str, set[int]]) -> list[LintFinding]:
    """``banned-word`` and ``hsa-queue`` for words that no line spells but that a constant
    expression builds (``chr(83) + ...``, ``'...'[::-1]``, ``''.join(map(chr, ...))``): one
    finding per line, none on a line the text rules already flagged. ``nodes``: the module's
    nodes, parents first (:func:`submitgen.lint.flow.walk`); ``flagged``: rule -> lines."""
    folder = Folder(nodes)
    seen = {rule: set(lines) for rule, lines in flagged.items()}
    found: list[LintFinding] = []
    for node in candidates(nodes):
        text = folder.text(node)
        if folder.exhausted:
            found.append(LintFinding(
                "banned-word", node.lineno, f"the file's constant expressions make more than "
                f"{FOLD_BUDGET:,} characters: those from here on were not checked for words built "
                "from pieces", "build less text from constants", WARNING, source="policy"))
            break
        if not text:
            continue
        for rule, pattern in (("banned-word", _BANNED_RE), ("hsa-queue", _HSA_RE)):
            m = pattern.search(text)
            if m is None or node.lineno in seen.setdefault(rule, set()):
                continue
            seen[rule].add(node.lineno)
            if rule == "banned-word":
                found.append(LintFinding(
                    rule, node.lineno, f"the expression at column {node.col_offset + 1} builds "
                    f"{m.group(0)!r}, {_BUILT}: the server's text check misses it, but the word is "
                    "banned to keep kernels off queues of their own, and hiding it is grounds for "
                    "disqualification",
                    "use the default queue (pass 0 as the HIP queue argument); do not create or look "
                    "up another queue", WARNING, source="policy"))
            else:
                found.append(LintFinding(
                    rule, node.lineno, f"the expression at column {node.col_offset + 1} builds "
                    f"{m.group(0)!r}, {_BUILT}: a call by that name creates an HSA queue of its own, "
                    "outside torch's timing events, which the organizers disqualify",
                    "launch with hipModuleLaunchKernel on the default queue (0) so the leaderboard's "
                    "events time the kernel", WARNING, source="policy"))
    return found

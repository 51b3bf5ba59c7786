"""The code carries no history markers and no citations of notes outside the repository: facts
it relies on are in docs/ with their public sources."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKERS = re.compile(r"issue [0-9]|shared/reference|written in parallel|appended by the|\(issue|[a-z]+\.md §")


def test_no_history_markers_or_outside_citations():
    found = []
    for folder in ("submitgen", "templates", "kernels"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2", ".h", ".hip", ".cpp", ".s", ".cl", ".md"):
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                    if MARKERS.search(line):
                        found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_the_marker_pattern_matches():
    assert MARKERS.search("# see issue 13") and MARKERS.search("(codeobject.md §2.5)")

"""Every relative link of README.md, BENCHMARKS.md and docs/*.md leads to a file of the project
(tracked by git, where the tree is a git checkout), and docs/index.md links every document."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _tracked() -> set[str] | None:
    """Paths git tracks, with every folder above them; None outside a git checkout (an sdist)."""
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    files = set(r.stdout.splitlines())
    return files | {p.as_posix() for f in files for p in Path(f).parents if p != Path(".")}


def _links(doc: Path) -> list[str]:
    return [t for t in _LINK.findall(doc.read_text()) if not re.match(r"[a-z]+:|#", t)]


def test_every_relative_link_resolves_to_a_tracked_file():
    tracked = _tracked()
    broken = []
    for doc in DOCS:
        for target in _links(doc):
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else None
            ok = rel is not None and path.exists() and (tracked is None or rel in tracked)
            if not ok:
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []
    assert sum(len(_links(d)) for d in DOCS) > 20  # the links were found


def test_the_index_links_every_document():
    linked = {(ROOT / "docs" / t.split("#", 1)[0]).resolve() for t in _links(ROOT / "docs" / "index.md")}
    docs = [d for d in (ROOT / "docs").glob("*.md") if d.name != "index.md"]
    missing = [d.name for d in docs if d.resolve() not in linked]
    assert missing == []


def test_results_stay_summaries():
    """benchmarks/results holds one short summary per kept run: no raw logs, .jsonl or patches."""
    tracked = _tracked()
    files = sorted(f for f in tracked if (ROOT / f).is_file()) if tracked is not None else [
        p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    results = [f for f in files if f.startswith("benchmarks/results/")]
    assert len(results) <= 60
    assert [f for f in files if f.endswith((".patch", ".jsonl"))] == []
    long = [f for f in results if f.endswith(".md") and len((ROOT / f).read_text().splitlines()) > 80]
    assert long == []
